//! Children report to their parents: when a sub-agent's operation ends, its parent receives the
//! result under the child's id (`agentlog_domain::rules::operation_start::child_result_for_parent`,
//! capped at 32,000 characters by the parent). A parent waiting on its children
//! (`waiting_for_async_tool`) resumes when the last one reported: that is the barrier a group
//! supervisor waits at.

use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
    operation::{Operation, OperationEvent},
    rules::operation_start::child_result_for_parent,
};
use agentlog_eventlog::{CommandError, EventLogError};

use super::{Reactor, signal_bus};
use crate::{error::ApiError, state::AppState};

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "child-results";

/// Children reporting to parents, as a log follower.
pub struct ChildResults;

impl Reactor for ChildResults {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &super::OPERATION_ENDS;

    async fn react(state: &AppState, fact: &RecordedEvent) -> Result<(), ApiError> {
        let event: OperationEvent = signal_bus::decode(fact)?;
        if matches!(&event, OperationEvent::Completed(c) if c.reason.is_pause()) {
            return Ok(());
        }
        let child = signal_bus::state_at::<Operation>(state, fact).await?;
        let Some((parent, command)) = child_result_for_parent(&child, &event) else { return Ok(()) };
        let ctx = Context::reacting_to(fact, NAME, Actor::system(NAME));
        match state.handler.execute::<Operation>(&parent, &command, &ctx).await {
            Ok(_) | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            // The parent finished (or never started) meanwhile: nobody is waiting.
            Err(CommandError::Domain(e)) => {
                tracing::debug!(parent, child = child.id(), reason = %e, "a child's result was not delivered");
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }
}
