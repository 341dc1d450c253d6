//! How a log-following reactor runs: [`Reactor`] says what it reacts to and how; [`follow`]
//! feeds it its facts from its checkpoint, in log order, and survives failures.

use std::time::Duration;

use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
};
use agentlog_eventlog::{EventFilter, EventLogError};
use futures_util::{FutureExt, StreamExt};
use tokio::sync::watch;

use super::checkpoint;
use super::refusals::{self, Refused};
use crate::error::ApiError;
use crate::reactors::error::ReactorError;
use crate::state::App;

/// The events that end an operation (the task lifecycle and child results react to them).
pub const OPERATION_ENDS: [&str; 4] =
    ["operation.completed", "operation.failed", "operation.interrupted", "operation.cancelled"];

/// A reactor that follows the log: it reacts to each of its facts in log order, from its
/// checkpoint, and its reactions are idempotent (ids derived from the fact), so reacting again
/// after a crash, or in a second server process, appends nothing new.
pub trait Reactor {
    /// Its name (checkpoint, actor, command-id derivation).
    const NAME: &'static str;
    /// The event types it reacts to.
    const FACTS: &'static [&'static str];
    /// Append what `fact` calls for.
    fn react(state: &App, fact: &RecordedEvent) -> impl Future<Output = Result<(), ReactorError>> + Send;
}

/// Run reactor `R` until `stop` turns true; a failure (the database gone, …) is logged and the
/// reactor resumes from its checkpoint a second later.
pub async fn follow<R: Reactor>(state: App, mut stop: watch::Receiver<bool>) {
    loop {
        match follow_once::<R>(&state, &mut stop).await {
            Ok(()) => return,
            Err(e) => tracing::warn!(error = %e, reactor = R::NAME, "reactor failed; resuming from its checkpoint"),
        }
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

async fn follow_once<R: Reactor>(state: &App, stop: &mut watch::Receiver<bool>) -> Result<(), ReactorError> {
    let from = checkpoint::load(&state.db, R::NAME).await?;
    let mut facts = state.store.subscribe(from, EventFilter::types(R::FACTS.iter().copied()));
    // The checkpoint is saved once the facts at hand are handled (or every `SAVE_EVERY`), not
    // after each: a run reporting hundreds of steps would otherwise cost a read-model
    // transaction per step per reactor. Facts handled but not yet saved are reacted to again
    // after a crash, which appends nothing (the reactions' ids derive from the fact).
    let mut unsaved: Option<i64> = None;
    let mut handled = 0usize;
    loop {
        if *stop.borrow() {
            return save(state, R::NAME, unsaved).await;
        }
        let item = match facts.next().now_or_never() {
            Some(item) => item,
            None => {
                save(state, R::NAME, unsaved.take()).await?;
                tokio::select! {
                    _ = stop.changed() => return Ok(()),
                    item = facts.next() => item,
                }
            }
        };
        let Some(item) = item else {
            return Err(ReactorError::SubscriptionEnded);
        };
        let fact = item?;
        match R::react(state, &fact).await {
            Ok(()) => {}
            // A write the log itself refuses (a payload past its bound) fails the same way every
            // time: retried forever it would hold this reactor on that fact for every user.
            // It is the fact owner's refusal, recorded and told, and the reactor goes on.
            Err(ReactorError::Log(EventLogError::Validation(v)))
            | Err(ReactorError::Command(ApiError::Log(EventLogError::Validation(v)))) => {
                tracing::warn!(reactor = R::NAME, position = fact.position, error = %v, "the log refused a reaction; recorded as a refusal");
                let ctx = Context::reacting_to(&fact, R::NAME, Actor::system(R::NAME));
                let refused = Refused::new(R::NAME, "react", fact.stream_id.clone(), &fact);
                refusals::record_log_refusal(state, &fact, &ctx, refused, v).await?;
            }
            Err(e) => return Err(e),
        }
        unsaved = Some(fact.position);
        handled += 1;
        if handled.is_multiple_of(SAVE_EVERY) {
            save(state, R::NAME, unsaved.take()).await?;
        }
    }
}

/// Facts a reactor handles at most between two saves of its checkpoint.
const SAVE_EVERY: usize = 500;

async fn save(state: &App, name: &str, position: Option<i64>) -> Result<(), ReactorError> {
    match position {
        Some(p) => checkpoint::save_replayable(&state.db, name, p).await,
        None => Ok(()),
    }
}
