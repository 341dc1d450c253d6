//! Notification retention: archived notifications older than the retention leave the inbox
//! read model (the log keeps them), by a `notification.purged` event per user, so a rebuild
//! removes the same ones.
//!
//! A clock pass: each pass belongs to a slot (`now` rounded down to the pass period) and purges
//! what was archived up to the slot minus the retention. The command id derives from the user,
//! the cut-off and the slot, and the event's time is the slot's, so a pass repeated after a
//! restart, or run by two server processes in the same slot, appends the very same event once.

use std::time::Duration;

use agentlog_domain::{
    context::Context,
    envelope::Actor,
    ids::derived_id,
    notifications::{NotificationCommand, Notifications},
};
use agentlog_eventlog::{CommandError, EventLogError};
use agentlog_projections::notifications;
use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::clock_pass;
use crate::reactors::error::ReactorError;
use crate::state::App;

/// The reactor's name (actor, command-id derivation).
pub const NAME: &str = "notification-retention";

/// Most users one pass purges for (the rest wait for the next pass).
const USERS_PER_PASS: usize = 1_000;

/// Pass every `ApiLimits::notification_purge_every` until `stop` turns true; nothing when the
/// retention is off.
pub async fn run(state: App, stop: watch::Receiver<bool>) {
    let Some(retention) = state.settings.notification_retention else { return };
    let every = state.settings.notification_purge_every;
    let report = |purged: Vec<String>| {
        if !purged.is_empty() {
            tracing::info!(
                count = purged.len(),
                users = %clock_pass::sample(&purged),
                "archived notifications past the retention purged"
            );
        }
    };
    clock_pass::every(
        state,
        stop,
        NAME,
        every,
        move |s, now| async move { pass(&s, now, retention, every).await },
        report,
    )
    .await
}

/// The start of the slot `now` falls in, slots being `every` long from the epoch.
pub fn slot_of(now: DateTime<Utc>, every: Duration) -> DateTime<Utc> {
    let period = i64::try_from(every.as_micros()).unwrap_or(i64::MAX).max(1);
    let micros = now.timestamp_micros();
    DateTime::from_timestamp_micros(micros - micros.rem_euclid(period)).unwrap_or(now)
}

/// One pass at `now`: purge, for every user who has some, the notifications archived up to the
/// slot's start minus `retention`. Answers the users this pass purged for. Public so tests can
/// drive the clock.
pub async fn pass(
    state: &App,
    now: DateTime<Utc>,
    retention: Duration,
    every: Duration,
) -> Result<Vec<String>, ReactorError> {
    let slot = slot_of(now, every);
    let Some(cutoff) = chrono::Duration::from_std(retention).ok().and_then(|r| slot.checked_sub_signed(r)) else {
        return Ok(Vec::new());
    };
    let mut purged = Vec::new();
    for user in notifications::users_with_archived_before(&state.db, cutoff, USERS_PER_PASS).await? {
        let key = format!("{user}\u{0}{}", cutoff.timestamp_micros());
        let command_id = derived_id(NAME, &key, slot.timestamp_millis());
        let ctx = Context::new(slot, command_id, Actor::system(NAME), user.clone());
        let command = NotificationCommand::PurgeArchived { archived_before: cutoff };
        match state.handler.execute::<Notifications>(&user, &command, &ctx).await {
            Ok(outcome) if !outcome.replayed => purged.push(user),
            Ok(_) => {}
            // Another process purged for this slot first.
            Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(purged)
}
