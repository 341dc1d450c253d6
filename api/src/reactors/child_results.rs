//! Children report to their parents: when a sub-agent's operation ends, its parent receives the
//! result under the child's id (`agentlog_domain::rules::operation_start::child_result_for_parent`,
//! capped at 32,000 characters by the parent). A parent waiting on its children
//! (`waiting_for_async_tool`) resumes when the last one reported: that is the barrier a group
//! supervisor waits at.
//!
//! A child that finishes after its parent ended is owed to nobody waiting, yet its result is
//! never dropped: it is recorded on the parent's conversation as the completion notice
//! (`rules::operation_start::completion_notice`, a `taskCallback` message), unless its end is
//! its ancestor's cancel. Any other refusal is recorded and its owner told
//! ([`super::refusals`]).

use agentlog_domain::{
    context::Context,
    conversations::{Conversation, ConversationCommand},
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    operations::{Operation, OperationEvent},
    rules::operation_start::{child_result_for_parent, completion_notice},
};
use agentlog_eventlog::{CommandError, EventLogError};

use super::refusals;
use super::refusals::Refused;
use super::signal_bus;
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::state::App;

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "child-results";

/// Children reporting to parents, as a log follower.
pub struct ChildResults;

impl Reactor for ChildResults {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &crate::reactors::follow::OPERATION_ENDS;

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        let event: OperationEvent = signal_bus::decode(fact)?;
        if matches!(&event, OperationEvent::Completed(c) if c.reason.is_pause()) {
            return Ok(());
        }
        let child = signal_bus::state_at::<Operation>(state, fact).await?;
        let Some((parent, command)) = child_result_for_parent(&child, &event) else { return Ok(()) };
        let ctx = Context::reacting_to(fact, NAME, Actor::system(NAME));
        // The parent is named in the child's owner's namespace.
        let stream = state.handler.stream_of::<Operation>(&child.user_id, &parent).await?;
        let refused =
            Refused::new(NAME, "operation.receive_async_result", stream.clone(), fact).operation(parent.clone());
        match state.handler.execute_stream::<Operation>(&stream, &command, &ctx).await {
            Ok(_) | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => Ok(()),
            // The parent ended first: the result goes to its conversation instead.
            Err(CommandError::Domain(e @ DomainError::AlreadyFinished { .. })) => {
                match completion_notice(&child, &event) {
                    Some((topic_id, notice)) => deliver(state, fact, &child, &topic_id, notice).await,
                    None if matches!(&event, OperationEvent::Cancelled(c) if c.cascade_from.is_some()) => {
                        tracing::debug!(parent, child = child.id(), "cancelled with its parent; no result owed");
                        Ok(())
                    }
                    None => refusals::record(state, fact, &ctx, refused, &e).await,
                }
            }
            Err(CommandError::Domain(e)) => refusals::record(state, fact, &ctx, refused, &e).await,
            Err(e) => Err(e.into()),
        }
    }
}

/// Record a late child's completion notice on its parent's conversation (once: the message id
/// derives from the child).
async fn deliver(
    state: &App,
    fact: &RecordedEvent,
    child: &Operation,
    topic_id: &str,
    notice: agentlog_domain::conversations::ChatMessage,
) -> Result<(), ReactorError> {
    let ctx = Context::reacting_to(fact, &format!("{NAME}#notice"), Actor::system(NAME));
    let command = ConversationCommand::AppendMessage(notice);
    // The parent's topic is in its owner's ids (the child's owner, the fact's).
    let stream_id = state
        .handler
        .stream_of::<Conversation>(&child.user_id, topic_id)
        .await
        .map_err(crate::error::ApiError::from)?;
    match state.handler.execute_stream::<Conversation>(&stream_id, &command, &ctx).await {
        Ok(_)
        | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. }))
        | Err(CommandError::Domain(DomainError::AlreadyExists { .. })) => Ok(()),
        Err(CommandError::Domain(e)) => {
            let refused = Refused::new(NAME, "conversation.append_message", stream_id, fact).operation(child.id());
            refusals::record(state, fact, &ctx, refused, &e).await
        }
        Err(e) => Err(e.into()),
    }
}
