//! Clock passes: reactors that look at the truth every period and act on what is due
//! (scheduler, lease reaper, card timeouts). Each derives its ids from the job, lease or card
//! and the slot or deadline, so two processes passing at once, or a pass repeated after a
//! crash, append once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use crate::reactors::error::ReactorError;
use crate::state::App;

/// The ids a pass acted on, for its log line: the first ten and how many more. A pass may
/// act on thousands (every user's inbox after a long stop), and one line must not grow with them.
pub fn sample(ids: &[String]) -> String {
    let shown = ids.iter().take(SAMPLE).map(String::as_str).collect::<Vec<_>>().join(", ");
    match ids.len().saturating_sub(SAMPLE) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// Ids a pass's log line names at most.
const SAMPLE: usize = 10;

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

#[cfg(test)]
mod tests {
    #[test]
    fn a_sample_names_ten_and_counts_the_rest() {
        let ids: Vec<String> = (0..12).map(|i| format!("u{i}")).collect();
        assert_eq!(super::sample(&ids[..2]), "u0, u1");
        assert_eq!(super::sample(&ids), "u0, u1, u2, u3, u4, u5, u6, u7, u8, u9 and 2 more");
    }
}
