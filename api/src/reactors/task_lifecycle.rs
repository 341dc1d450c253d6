//! The task lifecycle: when a task run's operation ends, its topic ends too (upstream
//! `TaskLifecycleService.onTopicComplete`). The worker's hand-off (given with
//! `completeOperation`) becomes the topic's hand-off, the task moves to its next status by the
//! domain's rules (`agentlog_domain::tasks::lifecycle`), a heartbeat task is re-armed, and the next
//! run starts from the hand-off (`previousHandoffTopicId`).
//!
//! - `operation.completed` (reason done) → the topic is done; max steps or cost limit → the
//!   run ended otherwise (topic canceled, task paused for a human);
//! - `operation.failed` → the topic failed, with the error (the signal bus then raises the
//!   urgent error brief from `task.topic_failed`);
//! - `operation.interrupted` or `operation.cancelled` → ended otherwise.
//!
//! A pause (waiting for a human or a tool) is not an end: the operation stays unfinished and no
//! completion event is written, so nothing here fires. A topic already ended — by
//! `completeTaskTopic`, or by the task leaving `running` — is left alone.

use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    operations::{CompletionReason, Operation, OperationEvent, OperationKind, event::OperationCompleted},
    tasks::{Task, TaskCommand, TopicEnd, TopicOutcome, TopicStatus},
};
use agentlog_eventlog::{CommandError, EventLogError};

use agentlog_projections::briefs;

use super::refusals;
use super::refusals::Refused;
use super::signal_bus;
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::state::App;

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "task-lifecycle";

/// The task lifecycle as a log follower.
pub struct TaskLifecycle;

impl Reactor for TaskLifecycle {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &crate::reactors::follow::OPERATION_ENDS;

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        react(state, fact).await
    }
}

/// How a run ended, as the task is told, with the completion when it finished normally (it
/// carries the worker's hand-off and last text). `None` for a pause or another event.
fn topic_end(event: &OperationEvent) -> Option<(TopicEnd, Option<&OperationCompleted>)> {
    Some(match event {
        OperationEvent::Completed(c) if c.reason.is_pause() => return None,
        OperationEvent::Completed(c) if c.reason == CompletionReason::Done => (TopicEnd::Done, Some(c)),
        OperationEvent::Completed(c) => {
            let detail = serde_json::to_value(c.reason).ok().and_then(|v| v.as_str().map(str::to_string));
            (TopicEnd::Other { detail: detail.unwrap_or_else(|| "completed".into()) }, Some(c))
        }
        OperationEvent::Failed(f) => {
            (TopicEnd::Error { message: f.error.message.clone(), code: f.error.code.clone() }, None)
        }
        OperationEvent::Interrupted(_) => (TopicEnd::Other { detail: "interrupted".into() }, None),
        OperationEvent::Cancelled(_) => (TopicEnd::Other { detail: "cancelled".into() }, None),
        _ => return None,
    })
}

/// End the topic that `fact`'s operation ran, when it is a task run whose topic still runs.
pub async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
    let event: OperationEvent = signal_bus::decode(fact)?;
    let Some((end, completed)) = topic_end(&event) else { return Ok(()) };
    let op = signal_bus::state_at::<Operation>(state, fact).await?;
    let Some(spec) = op.spec.as_ref().filter(|s| s.kind == OperationKind::Task) else { return Ok(()) };
    let (Some(task_id), Some(topic_id)) = (spec.task_id.as_deref(), spec.topic_id.as_deref()) else {
        return Ok(());
    };
    // The operation's task is named in the operation owner's namespace.
    let loaded = state.handler.load_of::<Task>(&op.user_id, task_id).await?;
    let (stream, task) = (loaded.stream_id, loaded.state);
    let Some(topic) = task.topics.get(topic_id) else { return Ok(()) };
    if topic.status != TopicStatus::Running || topic.operation_id != spec.operation_id {
        return Ok(());
    }
    let handoff = completed.and_then(|c| c.handoff.clone());
    let last_content = completed.and_then(|c| c.result.clone());
    let outcome = TopicOutcome {
        topic_id: topic_id.to_string(),
        operation_id: spec.operation_id.clone(),
        end,
        run_trigger: topic.trigger,
        handoff,
        last_assistant_content: last_content,
        human_waiting: briefs::human_waiting(&state.db, &task.user_id, task_id).await?,
        brief_judgement: completed.and_then(|c| c.brief_judgement),
    };
    let ctx = Context::reacting_to(fact, NAME, Actor::system(NAME));
    match state.handler.execute_stream::<Task>(&stream, &TaskCommand::CompleteTopic(outcome), &ctx).await {
        Ok(o) => tracing::debug!(task = task_id, topic = topic_id, position = o.last_position(), "topic ended"),
        Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
        // The topic ended meanwhile (by hand, or the task left running): nothing to do.
        Err(CommandError::Domain(e @ (DomainError::InvalidTransition { .. } | DomainError::NotFound { .. }))) => {
            tracing::debug!(task = task_id, topic = topic_id, reason = %e, "topic already ended");
        }
        Err(CommandError::Domain(e)) => {
            let refused = Refused::new(NAME, "task.complete_topic", stream.clone(), fact)
                .operation(spec.operation_id.clone())
                .task(task_id);
            refusals::record(state, fact, &ctx, Refused { user_id: task.user_id.clone(), ..refused }, &e).await?;
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
