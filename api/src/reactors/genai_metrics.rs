//! Feeds the GenAI histograms ([`crate::genai_metrics`]) from the log: each run is measured once,
//! at the event that ends it, from the spans the OTLP export sends. It appends nothing.

use std::time::Duration;

use agentlog_eventlog::EventFilter;
use tokio::sync::watch;

use super::follow::OPERATION_ENDS;
use crate::state::App;

/// Run ends read per pass.
const PAGE: usize = 200;

/// Follow the log from position `after` (the head at start), measuring each run at the event
/// that ends it, until `stop`.
pub async fn follow(state: App, mut after: i64, mut stop: watch::Receiver<bool>) {
    let filter = EventFilter::types(OPERATION_ENDS.iter().copied());
    let mut head = state.store.watch_head();
    loop {
        if *stop.borrow() {
            return;
        }
        // Every event at or below the published head is committed and visible, so a page
        // that comes back short has covered the log up to it: the next read starts there,
        // not at the last run end (a log without run ends would be scanned again and again).
        let head_seen = *head.borrow_and_update();
        let more = match measure_page(&state, &filter, after, head_seen).await {
            Ok(next) => {
                // Read on at once only when the page stopped short of the head it was read at.
                let more = next > after && next != head_seen;
                after = next;
                more
            }
            Err(e) => {
                tracing::warn!(error = %e, "GenAI metrics: reading the log failed; the page is read again");
                false
            }
        };
        if more {
            continue;
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = head.changed() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// Measure the run ends after `after`; answers the position reached: past `head_seen` when the
/// page was not full and every run end in it was measured. A run end whose spans cannot be read
/// stops the page before it, so it is read again, never skipped nor counted twice.
async fn measure_page(
    state: &App,
    filter: &EventFilter,
    after: i64,
    head_seen: i64,
) -> Result<i64, agentlog_eventlog::EventLogError> {
    let ends = state.store.read_all(after, filter, PAGE).await?;
    let complete = ends.len() < PAGE;
    let mut reached = after;
    for end in &ends {
        match agentlog_otel::spans_of_end(state.store.as_ref(), end).await {
            Ok(spans) => {
                state.metrics.genai.record_run(&agentlog_otel::measurements(&spans));
                reached = end.position;
            }
            Err(e) => {
                tracing::warn!(error = %e, position = end.position, "GenAI metrics: reading a run failed; read again");
                return Ok(reached);
            }
        }
    }
    Ok(if complete { reached.max(head_seen) } else { reached })
}
