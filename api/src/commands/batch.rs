//! A worker's batch report: several reports on one run (steps, phase changes, plan, todos,
//! artifacts, and its assistant or tool messages) decided in order, each by the domain's own
//! `decide` against the state the items before it left, and appended in one atomic write —
//! or, when any item is refused, nothing written and that item's error answered.

use agentlog_domain::{
    aggregate::Aggregate,
    context::Context,
    conversations::{ChatMessage, Conversation, ConversationCommand},
    envelope::Actor,
    error::DomainError,
    operations::{Operation, OperationCommand},
    stamp::StreamWrite,
};
use agentlog_eventlog::{CommandError, Loaded};

use super::budgets;
use crate::commands::caller::Commands;
use crate::commands::checks::check_replay;
use crate::commands::operations::OperationResult;
use crate::error::ApiError;

/// One report of a batch.
#[derive(Debug, Clone)]
pub enum BatchItem {
    /// A report on the run itself (a step, a phase, the plan, the todos, an artifact).
    Operation(OperationCommand),
    /// An assistant or tool message of the run, appended to the run's conversation.
    Message(ChatMessage),
}

/// What a batch wrote.
pub struct BatchResult {
    /// The run after the batch.
    pub run: OperationResult,
    /// Events appended (0 for a resent batch).
    pub events: usize,
}

/// The operation commands a batch may carry: a worker's reports that keep the run's lease.
fn allowed(command: &OperationCommand) -> bool {
    matches!(
        command,
        OperationCommand::RecordStep(_)
            | OperationCommand::ChangePhase(_)
            | OperationCommand::UpdatePlan(_)
            | OperationCommand::UpdateTodos(_)
            | OperationCommand::RecordArtifact(_)
    )
}

impl Commands<'_> {
    /// Report `items` on run `id` as the holder of its lease (`lease_token`), all or nothing.
    /// A resent batch (same `request_id`) answers what the first wrote. Each step counts
    /// against the run's budgets with the steps before it in the batch added to their spend.
    /// More than `max` items (or none) is refused before anything is read.
    pub async fn report_batch(
        &self,
        id: &str,
        lease_token: String,
        items: Vec<BatchItem>,
        max: usize,
        request_id: Option<&str>,
    ) -> Result<BatchResult, ApiError> {
        if items.is_empty() || items.len() > max {
            return Err(ApiError::validation("items", format!("a batch holds 1 to {max} items, not {}", items.len())));
        }
        if let Some(i) = items.iter().position(|i| matches!(i, BatchItem::Operation(c) if !allowed(c))) {
            return Err(ApiError::validation(format!("items[{i}]"), "not a report a batch may carry"));
        }
        let loaded = self.load_operation(id).await?;
        let owner = loaded.state.user_id.clone();
        let actor =
            loaded.state.lease.as_ref().map_or_else(|| self.user_actor(), |l| Actor::worker(l.worker_id.clone()));
        let ctx = self.context(&owner, actor, request_id)?.with_lease_token(Some(lease_token));
        let run = budgets::run_scope(&loaded.state);
        let has_steps = items.iter().any(|i| matches!(i, BatchItem::Operation(OperationCommand::RecordStep(_))));
        // Read once: the check before the steps and the warning after them use the same budgets.
        let rows = match (&run, has_steps) {
            (Some(run), true) => budgets::of_run(self.state, run).await?,
            _ => Vec::new(),
        };
        let standings = match &run {
            Some(run) => budgets::facts(&budgets::standings_among(self.state, run, &rows, ctx.now, true).await?),
            None => Vec::new(),
        };
        let results = self
            .state
            .handler
            .execute_multi(&ctx, || self.decide_batch(&loaded.stream_id, id, &items, &standings, &ctx))
            .await?;
        check_replay(&results, &loaded.stream_id)?;
        let events = results.iter().filter(|r| !r.duplicate).map(|r| r.positions.len()).sum();
        let mut position = results.iter().map(|r| r.last_position()).max().unwrap_or(0);
        let mut state = self.state.handler.load_stream::<Operation>(&loaded.stream_id).await?.state;
        if let Some(run) = &run
            && has_steps
            && !standings.is_empty()
            && events > 0
            && !state.is_finished()
        {
            let stopped = budgets::stop_at_limit(self.state, &loaded.stream_id, run, &ctx).await?;
            position = position.max(stopped.last_position());
            state = stopped.state;
        }
        self.state.settle(position).await;
        if has_steps
            && position > 0
            && !rows.is_empty()
            && let Err(e) = budgets::warn(self.state, &rows, ctx.now).await
        {
            // The steps are recorded; the next step tries the warning again.
            tracing::warn!(error = %e, operation = id, "a budget warning could not be written");
        }
        Ok(BatchResult { run: OperationResult { state, position }, events })
    }

    /// Decide every item in order on the evolving states; the writes of the run's stream
    /// (`stream`, run `id`'s) and (with messages) its conversation's, at the versions loaded.
    async fn decide_batch(
        &self,
        stream: &str,
        id: &str,
        items: &[BatchItem],
        standings: &[agentlog_domain::budgets::BudgetStanding],
        ctx: &Context,
    ) -> Result<Vec<(StreamWrite, i64)>, CommandError> {
        let h = &self.state.handler;
        let op: Loaded<Operation> = h.load_stream::<Operation>(stream).await?;
        let conversation = match op.state.topic_id() {
            Some(t) if items.iter().any(|i| matches!(i, BatchItem::Message(_))) => {
                Some(h.load_of::<Conversation>(&op.state.user_id, t).await?)
            }
            _ => None,
        };
        let mut stamper = ctx.stamper();
        let mut run = op.state.clone();
        let mut chat = conversation.as_ref().map(|c| c.state.clone());
        let mut spent = standings.to_vec();
        let (mut run_events, mut chat_events) = (Vec::new(), Vec::new());
        for (i, item) in items.iter().enumerate() {
            let at = |e: DomainError| CommandError::from(in_item(i, e));
            match item {
                BatchItem::Operation(command) => {
                    let mut command = command.clone();
                    if let OperationCommand::RecordStep(step) = &mut command {
                        step.budgets = spent.clone();
                        for s in &mut spent {
                            s.spent = s.spent.plus(step.usage);
                        }
                    }
                    let decided = run.decide(&command, ctx).map_err(at)?;
                    let (next, events) = stamper.stamp_owned(run, &decided);
                    run_events.extend(events);
                    run = next;
                }
                BatchItem::Message(message) => {
                    run.check_lease_token(ctx).map_err(at)?;
                    let Some(state) = chat.take() else {
                        return Err(at(DomainError::validation("message", "this run has no conversation")));
                    };
                    if message.operation_id.as_deref() != Some(id)
                        || !matches!(message.role.as_str(), "assistant" | "tool")
                    {
                        return Err(at(DomainError::validation(
                            "message",
                            "a batch carries the run's own assistant or tool messages (operationId = the run)",
                        )));
                    }
                    let command = ConversationCommand::AppendMessage(message.clone());
                    let decided = state.decide(&command, ctx).map_err(at)?;
                    let (next, events) = stamper.stamp_owned(state, &decided);
                    chat_events.extend(events);
                    chat = Some(next);
                }
            }
        }
        let mut writes = vec![(StreamWrite { stream_id: op.stream_id.clone(), events: run_events }, op.version)];
        if let Some(c) = &conversation {
            writes.push((StreamWrite { stream_id: c.stream_id.clone(), events: chat_events }, c.version));
        }
        Ok(writes)
    }
}

/// The refusal of item `i`, its field named by its place in the batch.
fn in_item(i: usize, e: DomainError) -> DomainError {
    match e {
        DomainError::Validation { field, reason } => {
            DomainError::Validation { field: format!("items[{i}].{field}"), reason }
        }
        other => other,
    }
}
