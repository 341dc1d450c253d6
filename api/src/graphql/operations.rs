//! Operations: one agent run. Queries read the log (history, state as of any position);
//! mutations are the worker's and the human's commands.

use agentlog_domain::operation::{
    AgentRef, CardAnswer, CreateOperation, HitlCard, Operation as OperationState, OperationCommand, OperationError,
    OperationKind, Phase, Plan, StepReport, Todo, ToolCall, Usage,
};
use agentlog_domain::{envelope::Actor, operation::Artifact, operation::ReviewScore};
use agentlog_eventlog::fold_recorded;
use async_graphql::{ComplexObject, Context, Enum, InputObject, Json, Object, SimpleObject};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

use super::{app, caller, events::Event, page_size};
use crate::{
    commands::{Commands, operations::operation_stream},
    error::{ApiError, GqlResult},
};

/// One agent run.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Operation {
    /// Its id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// `idle`, `running`, `waiting_for_human`, `waiting_for_async_tool`, `done`, `error`,
    /// `interrupted`, `cancelled`.
    pub status: String,
    /// `thinking`, `acting`, `responding`, `finalizing`, `done`.
    pub phase: Option<String>,
    /// `conversation`, `subagent`, `tool`, `group`, `task`.
    pub kind: Option<String>,
    /// Why it stopped (or paused).
    pub completion_reason: Option<String>,
    /// The agent it runs as.
    pub agent_id: Option<String>,
    /// The agent's config version at creation.
    pub agent_config_version: Option<i64>,
    /// Model.
    pub model: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// Conversation.
    pub topic_id: Option<String>,
    /// Task.
    pub task_id: Option<String>,
    /// Parent (sub-agents).
    pub parent_operation_id: Option<String>,
    /// Children.
    pub child_ids: Vec<String>,
    /// Steps recorded.
    pub step_count: i64,
    /// Prompt tokens (absent until measured).
    pub input_tokens: Option<i64>,
    /// Completion tokens (absent until measured).
    pub output_tokens: Option<i64>,
    /// All tokens (absent until measured).
    pub total_tokens: Option<i64>,
    /// Cost in millionths of the currency unit (absent until measured).
    pub cost_micros: Option<i64>,
    /// Tool calls (absent until a step reported).
    pub tool_calls: Option<i64>,
    /// The worker holding the lease.
    pub lease_worker_id: Option<String>,
    /// When the lease runs out.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The human-in-the-loop card being waited on.
    pub pending_card: Option<Json<serde_json::Value>>,
    /// Current plan.
    pub plan: Option<Json<serde_json::Value>>,
    /// Current todos.
    pub todos: Option<Json<serde_json::Value>>,
    /// Artifacts.
    pub artifacts: Json<serde_json::Value>,
    /// Review scores.
    pub scores: Json<serde_json::Value>,
    /// Error of a failed run.
    pub error: Option<Json<serde_json::Value>>,
    /// Created.
    pub created_at: Option<DateTime<Utc>>,
    /// First claimed.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub completed_at: Option<DateTime<Utc>>,
}

fn json<T: serde::Serialize>(v: &T) -> Json<serde_json::Value> {
    Json(serde_json::to_value(v).unwrap_or_default())
}

fn wire<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

impl From<&OperationState> for Operation {
    fn from(op: &OperationState) -> Self {
        let spec = op.spec.as_ref();
        let as_i64 = |v: Option<u64>| v.map(|x| x.min(i64::MAX as u64) as i64);
        Self {
            id: op.id().to_string(),
            user_id: op.user_id.clone(),
            status: op.status.as_str().to_string(),
            phase: op.phase.as_ref().map(wire),
            kind: op.kind().as_ref().map(wire),
            completion_reason: op.completion_reason.as_ref().map(wire),
            agent_id: spec.map(|s| s.agent.agent_id.clone()),
            agent_config_version: spec.map(|s| s.agent.config_version.min(i64::MAX as u64) as i64),
            model: spec.and_then(|s| s.agent.model.clone()),
            provider: spec.and_then(|s| s.agent.provider.clone()),
            topic_id: spec.and_then(|s| s.topic_id.clone()),
            task_id: spec.and_then(|s| s.task_id.clone()),
            parent_operation_id: spec.and_then(|s| s.parent_operation_id.clone()),
            child_ids: op.child_ids().map(str::to_string).collect(),
            step_count: op.step_count.into(),
            input_tokens: as_i64(op.usage.input_tokens),
            output_tokens: as_i64(op.usage.output_tokens),
            total_tokens: as_i64(op.usage.total_tokens),
            cost_micros: as_i64(op.usage.cost_micros),
            tool_calls: as_i64(op.tool_calls),
            lease_worker_id: op.lease.as_ref().map(|l| l.worker_id.clone()),
            lease_expires_at: op.lease.as_ref().map(|l| l.expires_at),
            pending_card: op.pending_card.as_ref().map(json),
            plan: op.plan.as_ref().map(json),
            todos: op.todos.as_ref().map(json),
            artifacts: json(&op.artifacts),
            scores: json(&op.scores),
            error: op.error.as_ref().map(json),
            created_at: op.created_at,
            started_at: op.started_at,
            completed_at: op.completed_at,
        }
    }
}

#[ComplexObject]
impl Operation {
    /// Every event of this operation's stream, oldest first.
    async fn history(&self, ctx: &Context<'_>, first: Option<i32>) -> GqlResult<Vec<Event>> {
        let first = page_size(ctx, first.or(Some(500)))?;
        let events = app(ctx).store.read_stream(&operation_stream(&self.id), 1, first).await.map_err(ApiError::from)?;
        Ok(events.iter().map(Event::from).collect())
    }

    /// The operation as it was right after the event at `position` (a replay of its stream).
    async fn state_at(&self, ctx: &Context<'_>, position: i64) -> GqlResult<Option<Operation>> {
        let events =
            app(ctx).store.read_stream(&operation_stream(&self.id), 1, 100_000).await.map_err(ApiError::from)?;
        let (state, version) = fold_recorded::<OperationState>(&events, Some(position)).map_err(ApiError::from)?;
        Ok((version > 0).then(|| Operation::from(&state)))
    }
}

/// Operation queries.
#[derive(Default)]
pub struct OperationsQuery;

#[Object]
impl OperationsQuery {
    /// One operation, from its stream (always current). NOT_FOUND when it does not exist or
    /// belongs to someone else.
    async fn operation(&self, ctx: &Context<'_>, id: String) -> GqlResult<Operation> {
        let who = caller(ctx)?;
        let loaded = Commands::new(app(ctx), who).load_operation(&id).await?;
        Ok(Operation::from(&loaded.state))
    }
}

/// Kinds of operation.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::operation::OperationKind")]
pub enum OperationKindInput {
    /// Main run of a conversation.
    Conversation,
    /// Sub-agent.
    Subagent,
    /// Long-running tool.
    Tool,
    /// Group supervisor.
    Group,
    /// Task topic run.
    Task,
}

/// Phases.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::operation::Phase")]
pub enum PhaseInput {
    /// Calling the model.
    Thinking,
    /// Running tools.
    Acting,
    /// Writing the answer.
    Responding,
    /// Wrapping up.
    Finalizing,
    /// Finished.
    Done,
}

/// Start an operation.
#[derive(InputObject)]
pub struct StartOperationInput {
    /// Its id (client-chosen, unique).
    pub operation_id: String,
    /// Kind.
    pub kind: OperationKindInput,
    /// The agent.
    pub agent_id: String,
    /// The agent's config version (default 1).
    pub agent_config_version: Option<i64>,
    /// Model.
    pub model: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// Conversation.
    pub topic_id: Option<String>,
    /// Thread within the conversation.
    pub thread_id: Option<String>,
    /// Task.
    pub task_id: Option<String>,
    /// Chat group.
    pub group_id: Option<String>,
    /// Parent operation (sub-agents).
    pub parent_operation_id: Option<String>,
    /// Background sub-agent.
    #[graphql(default)]
    pub background: bool,
    /// Step limit.
    pub max_steps: Option<i32>,
    /// Cost limit in micro-units.
    pub cost_limit_micros: Option<i64>,
    /// What started it.
    pub trigger: Option<String>,
    /// Instruction (sub-agents, task runs).
    pub instruction: Option<String>,
}

impl StartOperationInput {
    fn into_create(self) -> Result<CreateOperation, ApiError> {
        let non_negative = |field: &str, v: Option<i64>| -> Result<Option<u64>, ApiError> {
            match v {
                Some(x) if x < 0 => Err(ApiError::validation(field, "must not be negative")),
                other => Ok(other.map(|x| x as u64)),
            }
        };
        let mut c = CreateOperation::new(
            self.operation_id,
            OperationKind::from(self.kind),
            AgentRef {
                agent_id: self.agent_id,
                config_version: non_negative("agentConfigVersion", self.agent_config_version)?.unwrap_or(1),
                model: self.model,
                provider: self.provider,
            },
        );
        c.topic_id = self.topic_id;
        c.thread_id = self.thread_id;
        c.task_id = self.task_id;
        c.group_id = self.group_id;
        c.parent_operation_id = self.parent_operation_id;
        c.background = self.background;
        c.max_steps = match self.max_steps {
            Some(n) if n < 1 => return Err(ApiError::validation("maxSteps", "must be at least 1")),
            other => other.map(|n| n as u32),
        };
        c.cost_limit_micros = non_negative("costLimitMicros", self.cost_limit_micros)?;
        c.trigger = self.trigger;
        c.instruction = self.instruction;
        Ok(c)
    }
}

/// What an operation mutation answers.
#[derive(SimpleObject)]
pub struct OperationPayload {
    /// The operation after the command.
    pub operation: Operation,
    /// Position of the last event appended (0 when nothing changed); subscribe from here.
    pub position: i64,
}

fn decode<T: DeserializeOwned>(field: &str, value: Json<serde_json::Value>) -> Result<T, ApiError> {
    serde_json::from_value(value.0).map_err(|e| ApiError::validation(field, e.to_string()))
}

fn non_negative(field: &str, v: Option<i64>) -> Result<Option<u64>, ApiError> {
    match v {
        Some(x) if x < 0 => Err(ApiError::validation(field, "must not be negative")),
        other => Ok(other.map(|x| x as u64)),
    }
}

/// Usage measured in a step; leave a field out when it was not measured.
#[derive(InputObject, Default)]
pub struct UsageInput {
    /// Prompt tokens.
    pub input_tokens: Option<i64>,
    /// Completion tokens.
    pub output_tokens: Option<i64>,
    /// All tokens.
    pub total_tokens: Option<i64>,
    /// Cost in micro-units.
    pub cost_micros: Option<i64>,
}

/// A tool call made in a step.
#[derive(InputObject)]
pub struct ToolCallInput {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Outcome.
    pub status: Option<String>,
}

/// Operation mutations.
#[derive(Default)]
pub struct OperationsMutation;

async fn run(
    ctx: &Context<'_>,
    id: &str,
    command: OperationCommand,
    actor: Option<Actor>,
    request_id: Option<String>,
) -> GqlResult<OperationPayload> {
    let who = caller(ctx)?;
    let out = Commands::new(app(ctx), who).operation_command(id, command, actor, request_id.as_deref()).await?;
    Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
}

#[Object]
impl OperationsMutation {
    /// Start an operation (a conversation allows one unfinished at a time: CONVERSATION_BUSY).
    async fn start_operation(
        &self,
        ctx: &Context<'_>,
        input: StartOperationInput,
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        let create = input.into_create()?;
        let out =
            Commands::new(app(ctx), who).start_operation(create, owner_id.as_deref(), request_id.as_deref()).await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }

    /// A sub-agent: an operation whose parent is `parentOperationId`.
    async fn spawn_subagent(
        &self,
        ctx: &Context<'_>,
        parent_operation_id: String,
        input: StartOperationInput,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        let mut create = input.into_create()?;
        create.parent_operation_id = Some(parent_operation_id);
        create.kind = OperationKind::Subagent;
        let out = Commands::new(app(ctx), who).start_operation(create, None, request_id.as_deref()).await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }

    /// A worker claims the operation with a lease.
    async fn claim_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        worker_id: String,
        lease_secs: Option<i32>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let lease_secs = lease(lease_secs)?;
        let actor = Some(Actor::worker(worker_id.clone()));
        run(ctx, &id, OperationCommand::Claim { worker_id, lease_secs }, actor, request_id).await
    }

    /// The lease holder extends its lease.
    async fn renew_lease(
        &self,
        ctx: &Context<'_>,
        id: String,
        worker_id: String,
        lease_secs: Option<i32>,
    ) -> GqlResult<OperationPayload> {
        let lease_secs = lease(lease_secs)?;
        let actor = Some(Actor::worker(worker_id.clone()));
        run(ctx, &id, OperationCommand::RenewLease { worker_id, lease_secs }, actor, None).await
    }

    /// The agent moved to another phase.
    async fn change_phase(&self, ctx: &Context<'_>, id: String, phase: PhaseInput) -> GqlResult<OperationPayload> {
        run(ctx, &id, OperationCommand::ChangePhase(Phase::from(phase)), None, None).await
    }

    /// A step finished: its phase, tool calls and usage (leave usage fields out when unmeasured).
    async fn report_step(
        &self,
        ctx: &Context<'_>,
        id: String,
        phase: PhaseInput,
        tool_calls: Option<Vec<ToolCallInput>>,
        usage: Option<UsageInput>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let usage = usage.unwrap_or_default();
        let step = StepReport {
            phase: Phase::from(phase),
            tool_calls: tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|t| ToolCall { id: t.id, name: t.name, status: t.status })
                .collect(),
            usage: Usage {
                input_tokens: non_negative("usage.inputTokens", usage.input_tokens)?,
                output_tokens: non_negative("usage.outputTokens", usage.output_tokens)?,
                total_tokens: non_negative("usage.totalTokens", usage.total_tokens)?,
                cost_micros: non_negative("usage.costMicros", usage.cost_micros)?,
            },
        };
        run(ctx, &id, OperationCommand::RecordStep(step), None, request_id).await
    }

    /// Replace the agent's plan (`{explanation?, steps: [{text, status}]}`).
    async fn update_plan(
        &self,
        ctx: &Context<'_>,
        id: String,
        plan: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let plan: Plan = decode("plan", plan)?;
        run(ctx, &id, OperationCommand::UpdatePlan(plan), None, None).await
    }

    /// Replace the agent's todo list (`[{id, text, status}]`).
    async fn update_todos(
        &self,
        ctx: &Context<'_>,
        id: String,
        todos: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let todos: Vec<Todo> = decode("todos", todos)?;
        run(ctx, &id, OperationCommand::UpdateTodos(todos), None, None).await
    }

    /// Record an artifact (`{artifactId, title, kind, sizeBytes?, contentRef}`).
    async fn record_artifact(
        &self,
        ctx: &Context<'_>,
        id: String,
        artifact: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let artifact: Artifact = decode("artifact", artifact)?;
        run(ctx, &id, OperationCommand::RecordArtifact(artifact), None, None).await
    }

    /// Record a review score (`{rubricId, score, passed, reason?}`).
    async fn record_score(
        &self,
        ctx: &Context<'_>,
        id: String,
        score: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let score: ReviewScore = decode("score", score)?;
        run(ctx, &id, OperationCommand::RecordScore(score), None, None).await
    }

    /// Ask a human: the operation waits on the card (`{cardId, title, body?, kind: choice |
    /// input | confirm | form, options / fields, timeout?}`).
    async fn ask_human(
        &self,
        ctx: &Context<'_>,
        id: String,
        card: Json<serde_json::Value>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let card: HitlCard = decode("card", card)?;
        run(ctx, &id, OperationCommand::AskHuman(card), None, request_id).await
    }

    /// A human answers the pending card (`{kind, values | text | confirmed}`).
    async fn answer_card(
        &self,
        ctx: &Context<'_>,
        id: String,
        card_id: String,
        answer: Json<serde_json::Value>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let answer: CardAnswer = decode("answer", answer)?;
        run(ctx, &id, OperationCommand::AnswerCard { card_id, answer }, None, request_id).await
    }

    /// Wait for async tool calls or dispatched children (a barrier).
    async fn await_async(&self, ctx: &Context<'_>, id: String, keys: Vec<String>) -> GqlResult<OperationPayload> {
        run(ctx, &id, OperationCommand::AwaitAsync { keys }, None, None).await
    }

    /// An async tool reported its result.
    async fn receive_async_result(
        &self,
        ctx: &Context<'_>,
        id: String,
        key: String,
        success: bool,
        result: Option<String>,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, OperationCommand::ReceiveAsyncResult { key, success, result }, None, None).await
    }

    /// The worker finished the run.
    async fn complete_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        result: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, OperationCommand::Complete { result }, None, request_id).await
    }

    /// The worker reports failure.
    async fn fail_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        message: String,
        error_type: Option<String>,
        code: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let error = OperationError { message, error_type, code };
        run(ctx, &id, OperationCommand::Fail(error), None, request_id).await
    }

    /// Stop it from outside.
    async fn interrupt_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        reason: String,
        #[graphql(default)] can_resume: bool,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, OperationCommand::Interrupt { reason, can_resume }, None, None).await
    }

    /// Cancel it and every unfinished descendant.
    async fn cancel_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        reason: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        let out = Commands::new(app(ctx), who).cancel_operation(&id, reason, request_id.as_deref()).await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }
}

fn lease(secs: Option<i32>) -> Result<u32, ApiError> {
    match secs {
        None => Ok(300),
        Some(s) if (1..=86_400).contains(&s) => Ok(s as u32),
        Some(_) => Err(ApiError::validation("leaseSecs", "must be between 1 and 86400")),
    }
}
