//! `reportBatch`: a worker's reports on one run in one request (see `commands::batch`).

use crate::graphql::request::commands;
use agentlog_domain::conversations::ChatMessage;
use agentlog_domain::operations::{Artifact, OperationCommand, Phase, Plan, StepReport, Todo, ToolCall};
use agentlog_domain::values::Usage;
use async_graphql::{Context, InputObject, Json, Object, SimpleObject};

use crate::commands::batch::BatchItem;
use crate::error::{ApiError, GqlResult};
use crate::graphql::operation_inputs::{PhaseInput, ToolCallInput, UsageInput};
use crate::graphql::operations::Operation;
use crate::graphql::request::app;
use crate::graphql::wire::decode;

/// A step of a batch: as `reportStep`'s arguments.
#[derive(InputObject)]
pub struct BatchStepInput {
    /// The phase the step ended in.
    pub phase: PhaseInput,
    /// Tool calls made in the step, with their outcomes.
    pub tool_calls: Option<Vec<ToolCallInput>>,
    /// Usage measured (leave fields out when unmeasured).
    pub usage: Option<UsageInput>,
}

/// One report of a batch: exactly one of its fields.
#[derive(InputObject)]
#[graphql(name = "BatchItemInput")]
pub struct BatchItemInput {
    /// A step (as `reportStep`).
    pub step: Option<BatchStepInput>,
    /// The agent moved to another phase (as `changePhase`).
    pub phase: Option<PhaseInput>,
    /// An assistant or tool message of this run (`operationId` = the run), appended to the
    /// run's conversation (as `appendMessage`).
    pub message: Option<Json<serde_json::Value>>,
    /// The agent's plan (as `updatePlan`).
    pub plan: Option<Json<serde_json::Value>>,
    /// The agent's todo list (as `updateTodos`).
    pub todos: Option<Json<serde_json::Value>>,
    /// An artifact (as `recordArtifact`).
    pub artifact: Option<Json<serde_json::Value>>,
}

/// What `reportBatch` answers.
#[derive(SimpleObject)]
pub struct BatchPayload {
    /// The operation after the batch.
    pub operation: Operation,
    /// Position of the last event appended; subscribe from here.
    pub position: i64,
    /// Events the batch appended (0 when it was a resent batch).
    pub events: i64,
}

fn non_negative(field: &str, v: Option<i64>) -> Result<Option<u64>, ApiError> {
    match v {
        Some(x) if x < 0 => Err(ApiError::validation(field, "must not be negative")),
        other => Ok(other.and_then(|x| u64::try_from(x).ok())),
    }
}

fn step(i: usize, s: BatchStepInput) -> Result<OperationCommand, ApiError> {
    let usage = s.usage.unwrap_or_default();
    let field = |name: &str| format!("items[{i}].step.usage.{name}");
    Ok(OperationCommand::RecordStep(StepReport {
        phase: Phase::from(s.phase),
        tool_calls: s
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|t| ToolCall { id: t.id, name: t.name, status: t.status, arguments: t.arguments.map(|a| a.0) })
            .collect(),
        usage: Usage {
            input_tokens: non_negative(&field("inputTokens"), usage.input_tokens)?,
            output_tokens: non_negative(&field("outputTokens"), usage.output_tokens)?,
            total_tokens: non_negative(&field("totalTokens"), usage.total_tokens)?,
            cost_micros: non_negative(&field("costMicros"), usage.cost_micros)?,
        },
        budgets: Vec::new(),
    }))
}

fn item(i: usize, input: BatchItemInput) -> Result<BatchItem, ApiError> {
    let set = [
        input.step.is_some(),
        input.phase.is_some(),
        input.message.is_some(),
        input.plan.is_some(),
        input.todos.is_some(),
        input.artifact.is_some(),
    ];
    if set.iter().filter(|s| **s).count() != 1 {
        return Err(ApiError::validation(
            format!("items[{i}]"),
            "set exactly one of step, phase, message, plan, todos, artifact",
        ));
    }
    let name = |what: &str| format!("items[{i}].{what}");
    Ok(if let Some(s) = input.step {
        BatchItem::Operation(step(i, s)?)
    } else if let Some(p) = input.phase {
        BatchItem::Operation(OperationCommand::ChangePhase(Phase::from(p)))
    } else if let Some(m) = input.message {
        BatchItem::Message(decode::<ChatMessage>(&name("message"), m)?)
    } else if let Some(p) = input.plan {
        BatchItem::Operation(OperationCommand::UpdatePlan(decode::<Plan>(&name("plan"), p)?))
    } else if let Some(t) = input.todos {
        BatchItem::Operation(OperationCommand::UpdateTodos(decode::<Vec<Todo>>(&name("todos"), t)?))
    } else if let Some(a) = input.artifact {
        BatchItem::Operation(OperationCommand::RecordArtifact(decode::<Artifact>(&name("artifact"), a)?))
    } else {
        return Err(ApiError::validation(format!("items[{i}]"), "set one of its fields"));
    })
}

/// The batch mutation.
#[derive(Default)]
pub struct BatchMutation;

#[Object]
impl BatchMutation {
    /// A worker reports several things of its run in one request: `items` (1 to the server's
    /// batch limit, 500 by default; a longer batch is refused with VALIDATION before anything
    /// is read) are decided in order, each by the same rules as its single mutation (`reportStep`,
    /// `changePhase`, `appendMessage` of the run's own assistant or tool message, `updatePlan`,
    /// `updateTodos`, `recordArtifact`) against the run as the items before it left it, and
    /// appended together in one atomic write. When any item is refused, nothing is written and
    /// the answer is that item's error (a VALIDATION error names it: `items[i]`). Lease holder
    /// only. A resent batch (same `requestId`) answers what the first wrote.
    async fn report_batch(
        &self,
        ctx: &Context<'_>,
        operation_id: String,
        lease_token: String,
        items: Vec<BatchItemInput>,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose operation `operationId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<BatchPayload> {
        let max = app(ctx).limits.max_batch_items;
        if items.len() > max {
            return Err(
                ApiError::validation("items", format!("a batch holds 1 to {max} items, not {}", items.len())).into()
            );
        }
        let items = items.into_iter().enumerate().map(|(i, input)| item(i, input)).collect::<Result<Vec<_>, _>>()?;
        let messages: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                BatchItem::Message(m) => Some(m.message_id.clone()),
                BatchItem::Operation(_) => None,
            })
            .collect();
        let out = commands(ctx)?
            .owned_by(owner_id.as_deref())
            .report_batch(&operation_id, lease_token, items, max, request_id.as_deref())
            .await?;
        if let Some(topic_id) = out.run.state.topic_id() {
            // As after `appendMessage`: the messages' streams of deltas are finished.
            for message_id in &messages {
                app(ctx).deltas.finish(&out.run.state.user_id, topic_id, message_id);
                app(ctx).relay.finish(&out.run.state.user_id, topic_id, message_id);
            }
        }
        Ok(BatchPayload {
            operation: Operation::from(&out.run.state),
            position: out.run.position,
            events: i64::try_from(out.events).unwrap_or(i64::MAX),
        })
    }
}
