//! Card timeouts: a human-in-the-loop card with a deadline ends its wait at the deadline as the
//! card says (`TimeoutCard`: the run goes on, with the default answer or without one, or it
//! fails or is cancelled).
//!
//! A clock pass like the lease reaper: candidates from the cards read model, then the
//! operation's own state decides. The command id derives from the operation, the card and its
//! deadline, and the decision is taken *at* the deadline, so a restart or two server processes
//! decide the very same events and the log keeps them once.

use std::time::Duration;

use agentlog_domain::{
    context::Context,
    envelope::Actor,
    error::DomainError,
    ids::derived_id,
    operations::{Operation, OperationCommand},
    streams::StreamKind,
};
use agentlog_eventlog::{CommandError, EventLogError};
use agentlog_projections::operations;
use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::clock_pass;
use crate::reactors::error::ReactorError;
use crate::state::App;

/// The reactor's name (actor, command-id derivation).
pub const NAME: &str = "card-timeouts";

/// How often it looks for cards past their deadline.
pub const PASS_EVERY: Duration = Duration::from_secs(1);

/// Pass every [`PASS_EVERY`] until `stop` turns true.
pub async fn run(state: App, stop: watch::Receiver<bool>) {
    let report = |timed_out: Vec<String>| {
        if !timed_out.is_empty() {
            tracing::info!(count = timed_out.len(), cards = %clock_pass::sample(&timed_out), "cards timed out");
        }
    };
    clock_pass::every(state, stop, NAME, PASS_EVERY, |s, now| async move { pass(&s, now).await }, report).await
}

/// One pass at `now`: time out every pending card whose deadline passed. Answers
/// `operationId/cardId` of the cards this pass timed out. Public so tests can drive the clock.
pub async fn pass(state: &App, now: DateTime<Utc>) -> Result<Vec<String>, ReactorError> {
    let mut timed_out = Vec::new();
    for (owner, id, card_id) in operations::due_cards(&state.db, now).await? {
        let loaded = state.handler.load_of::<Operation>(&owner, &id).await?;
        let (op, stream) = (loaded.state, loaded.stream_id);
        let Some(deadline) = op
            .pending_card
            .as_ref()
            .filter(|p| p.card.card_id == card_id)
            .and_then(|p| p.deadline)
            .filter(|d| *d <= now)
        else {
            continue;
        };
        // An owned stream names the run in the key (two users' `op1` time out apart); a global
        // stream's run keeps the key its passes always had.
        let name = if StreamKind::parse_owner(&stream).is_some() { stream.as_str() } else { id.as_str() };
        let key = format!("{name}\u{0}{card_id}\u{0}{}", deadline.timestamp_micros());
        let command_id = derived_id(NAME, &key, deadline.timestamp_millis());
        let ctx = Context::new(deadline, command_id, Actor::system(NAME), op.user_id.clone());
        let command = OperationCommand::TimeoutCard { card_id: card_id.clone() };
        match state.handler.execute_stream::<Operation>(&stream, &command, &ctx).await {
            Ok(outcome) if !outcome.replayed => timed_out.push(format!("{id}/{card_id}")),
            Ok(_) => {}
            // Another process timed it out, or a human answered or the run ended meanwhile.
            Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            Err(CommandError::Domain(
                e @ (DomainError::NotDue { .. } | DomainError::NotFound { .. } | DomainError::AlreadyFinished { .. }),
            )) => {
                tracing::debug!(operation = id, card = card_id, reason = %e, "card not due after all");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(timed_out)
}
