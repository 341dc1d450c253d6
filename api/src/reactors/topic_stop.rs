//! Stopping a topic's run: when a task's topic is canceled (`cancelTaskTopic`, the task leaving
//! `running`, an approved brief completing a running task) or timed out (heartbeat timeout),
//! its operation — if still unfinished — is cancelled with every unfinished descendant
//! (`agentlog_domain::rules::cancel_cascade`), so nothing keeps running, or spending, after
//! the topic ended. An operation that already finished (the topic ended because its run did)
//! is left alone.
//!
//! The cancel's command id derives from the fact and the operation, so reacting twice — after
//! a crash, or in two server processes — cancels once. It acts for the task's owner.

use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    operations::Operation,
    streams::StreamKind,
    tasks::{Task, TaskEvent},
};
use agentlog_eventlog::{CommandError, EventLogError};

use super::refusals;
use super::refusals::Refused;
use super::signal_bus;
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::{auth::Caller, commands::Commands, state::App};

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "topic-stop";

/// Stopping topics' runs as a log follower.
pub struct TopicStop;

impl Reactor for TopicStop {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &["task.topic_canceled", "task.topics_timed_out"];

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        react(state, fact).await
    }
}

/// Cancel the unfinished operations of the topics `fact` ended.
pub async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
    let (operations, reason) = match signal_bus::decode::<TaskEvent>(fact)? {
        TaskEvent::TopicCanceled(c) => (vec![c.operation_id], format!("topic canceled: {}", c.reason)),
        TaskEvent::TopicsTimedOut(t) => {
            let task = signal_bus::state_at::<Task>(state, fact).await?;
            let ops = t.topic_ids.iter().filter_map(|id| task.topics.get(id)).map(|t| t.operation_id.clone()).collect();
            (ops, "topic timed out (no heartbeat)".to_string())
        }
        _ => return Ok(()),
    };
    let caller = Caller { user_id: fact.metadata.user_id.clone(), admin: false };
    let commands = Commands::new(state, &caller);
    // The topics' runs are named in the task owner's namespace.
    let owner = StreamKind::parse_owner(&fact.stream_id).unwrap_or_else(|| fact.metadata.user_id.clone());
    for op in operations {
        let ctx = Context::reacting_to(fact, &format!("{NAME}#{op}"), Actor::system(NAME));
        let stream = state.handler.stream_of::<Operation>(&owner, &op).await?;
        match commands.cancel_with_descendants(&stream, Some(reason.clone()), &ctx).await {
            Ok(results) => tracing::debug!(operation = %op, appended = results.len(), "topic's run cancelled"),
            // Finished already (the topic ended with its run), or cancelled by another process.
            Err(
                CommandError::Log(EventLogError::IdempotencyConflict { .. })
                | CommandError::Domain(DomainError::AlreadyFinished { .. } | DomainError::NotFound { .. }),
            ) => {}
            Err(CommandError::Domain(e)) => {
                let refused = Refused::new(NAME, "operation.cancel", stream.clone(), fact).operation(op.clone());
                let refused = match StreamKind::parse(&fact.stream_id) {
                    Some((StreamKind::Task, task)) => refused.task(task),
                    _ => refused,
                };
                refusals::record(state, fact, &ctx, refused, &e).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
