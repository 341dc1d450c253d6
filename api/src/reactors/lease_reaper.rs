//! The lease reaper: a running operation whose worker stopped renewing its lease is
//! interrupted (resumable), and the signal bus tells its owner (`operation.lease_expired` →
//! a notification).
//!
//! The first pass runs as the server starts: that is the reconcile pass, which interrupts every
//! run whose lease ran out while no server was up. Each expiry's command id derives from the
//! operation and the lease's expiry instant, so two server processes expire a lease once.

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
pub const NAME: &str = "lease-reaper";

/// How often it looks for expired leases.
pub const PASS_EVERY: Duration = Duration::from_secs(1);

/// Pass every [`PASS_EVERY`] until `stop` turns true.
pub async fn run(state: App, stop: watch::Receiver<bool>) {
    let report = |expired: Vec<String>| {
        if !expired.is_empty() {
            tracing::info!(count = expired.len(), runs = %clock_pass::sample(&expired), "leases expired; runs interrupted");
        }
    };
    clock_pass::every(state, stop, NAME, PASS_EVERY, |s, now| async move { pass(&s, now).await }, report).await
}

/// One pass at `now`: interrupt every running operation whose lease expired. Answers the ids
/// of the operations this pass interrupted. Public so tests can drive the clock.
pub async fn pass(state: &App, now: DateTime<Utc>) -> Result<Vec<String>, ReactorError> {
    let mut expired = Vec::new();
    for (owner, id) in operations::expired_leases(&state.db, now).await? {
        let id = id.as_str();
        // The read model found the candidate; the operation's own state decides.
        let loaded = state.handler.load_of::<Operation>(&owner, id).await?;
        let op = loaded.state;
        let Some(lease) = op.lease.as_ref().filter(|l| l.expires_at <= now) else { continue };
        // An owned stream names the run in the key (two users' `op1` expire apart); a global
        // stream's run keeps the key its passes always had.
        let stream = loaded.stream_id;
        let name = if StreamKind::parse_owner(&stream).is_some() { stream.as_str() } else { id };
        let key = format!("{name}\u{0}{}\u{0}{}", lease.worker_id, lease.expires_at.timestamp_micros());
        let command_id = derived_id(NAME, &key, lease.expires_at.timestamp_millis());
        let ctx = Context::new(now, command_id, Actor::system(NAME), op.user_id.clone());
        match state.handler.execute_stream::<Operation>(&stream, &OperationCommand::ExpireLease, &ctx).await {
            Ok(_) => expired.push(id.to_string()),
            // Another process expired it, or the worker renewed or finished meanwhile.
            Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            Err(CommandError::Domain(e @ (DomainError::NotDue { .. } | DomainError::InvalidTransition { .. }))) => {
                tracing::debug!(operation = id, reason = %e, "lease not expired after all");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(expired)
}
