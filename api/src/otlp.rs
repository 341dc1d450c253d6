//! The OTLP exporter: every run that ends goes out as an OpenTelemetry trace
//! (`agentlog_otel::RunSpans`) over OTLP/HTTP (protobuf, `POST <endpoint>/v1/traces`).
//!
//! A log follower with a checkpoint (`reactor_checkpoints`, name [`NAME`]): it reads the ends of
//! runs after its checkpoint, a page at a time, builds each run's spans from the run's stream (a
//! page of the stream at a time), and sends them in requests of at most
//! [`OtlpConfig::max_request_bytes`]. The checkpoint moves past a run as soon as every span of it
//! was taken (or refused as data, below), saved after the request that completed it, so a collector outage loses nothing (sent again, with
//! backoff, until accepted) and a restart sends nothing twice but the request in flight, whose
//! span ids derive from agentlog's ids, so a collector can drop the repeat.
//!
//! A collector's answer decides what happens to a request:
//! - 2xx: taken;
//! - unreachable, a timeout, 401, 403, 404, 407, 408, 429, 5xx: the collector or its
//!   configuration is at fault, not the data: sent again later, nothing skipped;
//! - any other 4xx (400, 413, …): the data is refused. A request of several runs is split at a
//!   run and each half sent alone, down to single runs (a 413 down to single spans), so only
//!   what the collector refuses is skipped, logged with its run — one user's run never costs
//!   another's its trace.
//!
//! With several instances on one database one exporter sends at a time: it holds a lease in
//! `export_leases` (migration 0018), renewed before every request; another instance takes over
//! when it lapses.

use std::{sync::atomic::Ordering, time::Duration};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::EventFilter;
use agentlog_otel::{Batches, Span, SpansOfEnd};
use agentlog_projections::SqlValue;
use chrono::Utc;
use prost::Message;
use tokio::sync::watch;

use crate::{
    metrics::Metrics,
    reactors::{OPERATION_ENDS, checkpoint},
    state::App,
};

/// Why a page could not be exported now (it is sent again later).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the log failed.
    #[error("reading the log: {0}")]
    Log(#[from] agentlog_eventlog::EventLogError),
    /// Reading or writing the checkpoint or the lease failed.
    #[error("the read-model database: {0}")]
    Db(#[from] agentlog_projections::ProjectionError),
    /// Reading or writing the checkpoint failed.
    #[error("{0}")]
    Checkpoint(#[from] crate::reactors::error::ReactorError),
    /// The collector did not take the page (unreachable, 429, 5xx).
    #[error("the OTLP collector: {0}")]
    Collector(String),
}

/// The checkpoint's and the lease's name.
pub const NAME: &str = "otlp_export";

/// How long a lease lasts without renewal.
const LEASE: Duration = Duration::from_secs(15);

/// Ends of runs read from the log at a time.
const PAGE: usize = 100;

/// The default bound of one export request.
pub use agentlog_otel::MAX_REQUEST_BYTES;

/// Where and how to export.
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    /// The traces URL (`…/v1/traces`; a base URL gets that path added).
    pub traces_url: String,
    /// `service.name` of the resource.
    pub service_name: String,
    /// Headers sent with every export (a backend's credentials: Langfuse's
    /// `Authorization: Basic …`); never logged.
    pub headers: Vec<(String, String)>,
    /// Most encoded bytes in one request; a run with more goes out in several.
    pub max_request_bytes: usize,
}

impl OtlpConfig {
    /// The config for an OTLP/HTTP endpoint: a base URL (`http://collector:4318`) or the
    /// traces URL itself.
    pub fn new(endpoint: &str) -> Self {
        let trimmed = endpoint.trim_end_matches('/');
        let traces_url =
            if trimmed.ends_with("/v1/traces") { trimmed.to_string() } else { format!("{trimmed}/v1/traces") };
        Self { traces_url, service_name: "agentlog".into(), headers: Vec::new(), max_request_bytes: MAX_REQUEST_BYTES }
    }

    /// The same config with `headers`, each `name=value` (as `OTEL_EXPORTER_OTLP_HEADERS`
    /// writes them); an entry without `=` is refused, naming only its position.
    pub fn with_headers(mut self, headers: &[String]) -> Result<Self, String> {
        for (i, h) in headers.iter().enumerate() {
            let (name, value) = h.split_once('=').ok_or_else(|| format!("OTLP header {} is not name=value", i + 1))?;
            self.headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        Ok(self)
    }
}

/// Take or renew the export lease for `holder`; true when this instance holds it now.
async fn hold_lease(state: &App, holder: &str) -> Result<bool, ExportError> {
    let now = Utc::now().timestamp_micros();
    let until = now + i64::try_from(LEASE.as_micros()).unwrap_or(i64::MAX);
    let args: [SqlValue; 4] = [NAME.into(), holder.into(), until.into(), now.into()];
    state
        .db
        .execute(
            "INSERT INTO export_leases (name, holder, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
             WHERE export_leases.holder = excluded.holder OR export_leases.expires_at < $4",
            &args,
        )
        .await?;
    let rows = state.db.fetch("SELECT holder FROM export_leases WHERE name = $1", &[NAME.into()]).await?;
    Ok(rows.first().and_then(|r| r.str(0)) == Some(holder))
}

/// Why a request was not taken.
enum Refused {
    /// Try again later: the collector or its configuration is at fault.
    Retry(String),
    /// The collector refused the data itself: sending it again cannot help.
    Rejected { status: u16, why: String },
}

/// Whether a refusal with `status` blames the collector (or its configuration: credentials, the
/// URL) rather than the data, so the request is sent again.
fn retried(status: reqwest::StatusCode) -> bool {
    matches!(status.as_u16(), 401 | 403 | 404 | 407 | 408 | 429) || status.is_server_error()
}

async fn send(client: &reqwest::Client, config: &OtlpConfig, body: Vec<u8>) -> Result<(), Refused> {
    let mut request = client.post(&config.traces_url).header("content-type", "application/x-protobuf");
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    let response = request.body(body).send().await.map_err(|e| Refused::Retry(e.to_string()))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else if retried(status) {
        Err(Refused::Retry(format!("the collector answered {status}")))
    } else {
        Err(Refused::Rejected { status: status.as_u16(), why: format!("the collector answered {status}") })
    }
}

/// Export until `stop` turns true.
pub async fn run(state: App, config: OtlpConfig, mut stop: watch::Receiver<bool>) {
    let holder = uuid::Uuid::new_v4().to_string();
    let client = match reqwest::Client::builder().timeout(Duration::from_secs(10)).build() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the OTLP client; not exporting");
            return;
        }
    };
    tracing::info!(url = %config.traces_url, "exporting runs as OpenTelemetry traces");
    let filter = EventFilter::types(OPERATION_ENDS.iter().copied());
    let mut head = state.store.watch_head();
    let mut backoff = Duration::from_secs(1);
    loop {
        if *stop.borrow() {
            return;
        }
        // Committed and visible up to the published head: a short page covers the log to it.
        let head_seen = *head.borrow_and_update();
        let wait = match export_page(&state, &config, &client, &holder, &filter, head_seen).await {
            Ok(true) => {
                backoff = Duration::from_secs(1);
                continue;
            }
            // Nothing new, or another instance holds the lease: wait for the log to move.
            Ok(false) => {
                backoff = Duration::from_secs(1);
                Duration::from_millis(500)
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "OTLP export failed; the page is sent again");
                let wait = backoff;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                wait
            }
        };
        tokio::select! {
            _ = stop.changed() => return,
            _ = head.changed(), if wait < Duration::from_secs(1) => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Send the next page; Ok(true) when one was sent and more may follow at once. A page that
/// comes back short moves the checkpoint to `head_seen`, so a log without run ends is not
/// scanned again from the last one at every pass.
async fn export_page(
    state: &App,
    config: &OtlpConfig,
    client: &reqwest::Client,
    holder: &str,
    filter: &EventFilter,
    head_seen: i64,
) -> Result<bool, ExportError> {
    if !hold_lease(state, holder).await? {
        return Ok(false);
    }
    let from = checkpoint::load(&state.db, NAME).await?;
    let ends = state.store.read_all(from, filter, PAGE).await?;
    let complete = ends.len() < PAGE;
    let Some(last) = ends.last().map(|e| e.position) else {
        if head_seen > from {
            // Nothing was sent below it: losing this save costs a scan, never a span twice.
            checkpoint::save_replayable(&state.db, NAME, head_seen).await?;
        }
        return Ok(false);
    };
    let mut out = Outbox {
        state,
        config,
        client,
        holder,
        ends: &ends,
        batches: Batches::new(&config.service_name, config.max_request_bytes),
        runs: Vec::new(),
        gathered: None,
        sent: None,
        spans: 0,
    };
    match out.send_page().await {
        Ok(true) => {}
        Ok(false) => return Ok(false),
        Err(e) => return Err(e),
    }
    let reached = if complete { last.max(head_seen) } else { last };
    checkpoint::save(&state.db, NAME, reached).await?;
    tracing::debug!(spans = out.spans, position = reached, "exported a page of runs");
    Ok(!complete)
}

/// A page of run ends on its way out: spans gathered into requests, and how far the runs
/// sent whole reach.
struct Outbox<'a> {
    state: &'a App,
    config: &'a OtlpConfig,
    client: &'a reqwest::Client,
    holder: &'a str,
    ends: &'a [RecordedEvent],
    batches: Batches,
    /// For each gathered span, the index in `ends` of the run it belongs to.
    runs: Vec<usize>,
    /// The position of the last run all of whose spans are gathered or sent.
    gathered: Option<i64>,
    /// The position of the last run all of whose spans were taken (or refused as data).
    sent: Option<i64>,
    /// Spans taken so far.
    spans: usize,
}

impl Outbox<'_> {
    /// Send every run of the page; Ok(false) when the lease was lost on the way.
    async fn send_page(&mut self) -> Result<bool, ExportError> {
        for (run, end) in self.ends.iter().enumerate() {
            let mut reader = SpansOfEnd::open(self.state.store.as_ref(), end).await?;
            while let Some(spans) = reader.next().await? {
                for span in spans {
                    if let Some(full) = self.batches.push(span) {
                        let runs = self.runs.drain(..full.len()).collect();
                        if !self.deliver(full, runs).await? {
                            return Ok(false);
                        }
                    }
                    self.runs.push(run);
                }
            }
            self.gathered = Some(end.position);
        }
        if !self.batches.is_empty() {
            let (spans, runs) = (self.batches.take(), std::mem::take(&mut self.runs));
            if !self.deliver(spans, runs).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Send one request's spans (`runs[i]` is span i's run). A refusal of the data splits the
    /// request at a run (a single run's at its middle span, on 413) and sends each part, down
    /// to what the collector will not take, which is skipped. Ok(false) when the lease was lost.
    async fn deliver(&mut self, spans: Vec<Span>, runs: Vec<usize>) -> Result<bool, ExportError> {
        // Parts still to send, the next on top.
        let mut parts = Vec::new();
        parts.push(0..spans.len());
        while let Some(part) = parts.pop() {
            if !hold_lease(self.state, self.holder).await? {
                return Ok(false);
            }
            let body = agentlog_otel::export_request(&self.config.service_name, spans[part.clone()].to_vec());
            match send(self.client, self.config, body.encode_to_vec()).await {
                Ok(()) => {
                    self.spans += part.len();
                    self.state.metrics.otlp_spans_sent.fetch_add(part.len() as u64, Ordering::Relaxed);
                }
                Err(Refused::Retry(why)) => {
                    Metrics::inc(&self.state.metrics.otlp_retries);
                    return Err(ExportError::Collector(why));
                }
                Err(Refused::Rejected { status, why }) => match split(&runs[part.clone()], status) {
                    Some(at) => {
                        parts.push(part.start + at..part.end);
                        parts.push(part.start..part.start + at);
                    }
                    None => {
                        self.state.metrics.otlp_spans_refused.fetch_add(part.len() as u64, Ordering::Relaxed);
                        let run = &self.ends[runs[part.start]];
                        tracing::error!(
                            why,
                            stream = %run.stream_id,
                            end = run.position,
                            spans = part.len(),
                            "the collector refused a run's spans; they are skipped"
                        );
                    }
                },
            }
        }
        if self.gathered > self.sent
            && let Some(at) = self.gathered
        {
            // Saved at once (forward only), lease or not: what a collector took is never sent
            // again by the instance that takes over.
            checkpoint::save(&self.state.db, NAME, at).await?;
        }
        self.sent = self.gathered;
        Ok(true)
    }
}

/// Where to split a refused request whose spans belong to `runs`: at the run boundary nearest
/// its middle; a single run's on 413 (too large) at its middle span; `None` when the refusal is
/// the data's own (one run, or one span).
fn split(runs: &[usize], status: u16) -> Option<usize> {
    let middle = runs.len() / 2;
    let boundary = (1..runs.len()).filter(|&i| runs[i] != runs[i - 1]).min_by_key(|&i| i.abs_diff(middle));
    match boundary {
        Some(at) => Some(at),
        None if status == 413 && runs.len() > 1 => Some(middle),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_refused_request_splits_at_the_run_nearest_its_middle() {
        assert_eq!(split(&[0, 0, 0, 1, 1, 2], 400), Some(3));
        assert_eq!(split(&[0, 1, 1, 1, 1, 1], 400), Some(1));
        assert_eq!(split(&[4, 4, 4, 4], 400), None, "one run refused as data is skipped");
        assert_eq!(split(&[4, 4, 4, 4], 413), Some(2), "too large: halves of the run");
        assert_eq!(split(&[4], 413), None, "a single span too large is skipped");
    }

    #[test]
    fn the_collectors_faults_are_retried_and_the_datas_are_not() {
        use reqwest::StatusCode;
        for code in [401, 403, 404, 407, 408, 429, 500, 502, 503, 504] {
            assert!(super::retried(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        for code in [400, 409, 413, 415, 422] {
            assert!(!super::retried(StatusCode::from_u16(code).unwrap()), "{code}");
        }
    }
}
