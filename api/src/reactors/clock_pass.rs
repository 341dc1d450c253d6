//! Clock passes: reactors that look at the truth every period and act on what is due
//! (scheduler, lease reaper, card timeouts). Each derives its ids from the job, lease or card
//! and the slot or deadline, so two processes passing at once, or a pass repeated after a
//! crash, append once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::reactors::error::ReactorError;
use crate::state::App;

/// Run `pass` every `period` until `stop` turns true, handing each pass's answer to `report`;
/// a pass that fails is logged and the next one tries again.
pub async fn every<R, Fut>(
    state: App,
    mut stop: watch::Receiver<bool>,
    name: &'static str,
    period: Duration,
    pass: impl Fn(App, DateTime<Utc>) -> Fut,
    report: impl Fn(R),
) where
    Fut: Future<Output = Result<R, ReactorError>>,
{
    loop {
        if *stop.borrow() {
            return;
        }
        match pass(state.clone(), Utc::now()).await {
            Ok(answer) => report(answer),
            Err(e) => tracing::warn!(error = %e, reactor = name, "clock pass failed; retrying"),
        }
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep(period) => {}
        }
    }
}
