//! Feeds the GenAI histograms ([`crate::genai_metrics`]) from the log: each run is measured once,
//! at the event that ends it, from the spans the OTLP export sends. It appends nothing.

use std::time::Duration;

use agentlog_eventlog::EventFilter;
use futures_util::StreamExt;
use tokio::sync::watch;

use super::follow::OPERATION_ENDS;
use crate::state::App;

/// Follow the log from position `after` (the head at start), measuring each run at the event
/// that ends it, until `stop`. The run ends come through a log subscription (the tail's memory
/// while it holds them), which moves past every other event once. A run end whose spans cannot
/// be read is tried again, never skipped nor counted twice; a failed subscription is taken up
/// again after the last run end measured.
pub async fn follow(state: App, mut after: i64, mut stop: watch::Receiver<bool>) {
    loop {
        let mut ends = state.store.subscribe(after, EventFilter::types(OPERATION_ENDS.iter().copied()));
        loop {
            let end = tokio::select! {
                _ = stop.changed() => return,
                end = ends.next() => end,
            };
            let end = match end {
                Some(Ok(end)) => end,
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "GenAI metrics: reading the log failed; following again");
                    break;
                }
                None => return,
            };
            loop {
                match measure_run(state.store.as_ref(), &end).await {
                    Ok(run) => {
                        state.metrics.genai.record_run(&run);
                        after = end.position;
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, position = end.position, "GenAI metrics: reading a run failed; read again");
                        if pause(&mut stop).await {
                            return;
                        }
                    }
                }
            }
        }
        if pause(&mut stop).await {
            return;
        }
    }
}

/// The measurements of the run `end` ends, its stream read a page at a time (recorded together
/// once read whole, so a read that fails half-way and is tried again counts nothing twice).
async fn measure_run(
    store: &dyn agentlog_eventlog::EventStore,
    end: &agentlog_domain::envelope::RecordedEvent,
) -> Result<Vec<agentlog_otel::Measurement>, agentlog_eventlog::EventLogError> {
    let mut reader = agentlog_otel::SpansOfEnd::open(store, end).await?;
    let mut run = Vec::new();
    while let Some(spans) = reader.next().await? {
        run.extend(agentlog_otel::measurements(&spans));
    }
    Ok(run)
}

/// Wait a second before trying again; true when `stop` came first.
async fn pause(stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = stop.changed() => true,
        () = tokio::time::sleep(Duration::from_secs(1)) => false,
    }
}
