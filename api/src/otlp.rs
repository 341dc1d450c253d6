//! The OTLP exporter: every run that ends goes out as an OpenTelemetry trace
//! (`agentlog_otel::run_spans`) over OTLP/HTTP (protobuf, `POST <endpoint>/v1/traces`).
//!
//! A log follower with a checkpoint (`reactor_checkpoints`, name [`NAME`]): it reads the ends of
//! runs after its checkpoint, a page at a time, builds each run's spans from the run's stream,
//! sends the page in one request, and moves the checkpoint only when the collector accepted it.
//! So a collector outage loses nothing (the page is sent again, with backoff, until accepted)
//! and a restart sends nothing twice except the one page in flight when it stopped — and that
//! page has the same span ids, derived from agentlog's ids, so a collector can drop it.
//!
//! With several instances on one database one exporter sends at a time: it holds a lease in
//! `export_leases` (migration 0018), renewed on every page; another instance takes over when it
//! lapses.

use std::time::Duration;

use agentlog_eventlog::EventFilter;
use agentlog_projections::SqlValue;
use chrono::Utc;
use prost::Message;
use tokio::sync::watch;

use crate::{
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

/// Ends of runs sent in one request at most.
const PAGE: usize = 100;

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
}

impl OtlpConfig {
    /// The config for an OTLP/HTTP endpoint: a base URL (`http://collector:4318`) or the
    /// traces URL itself.
    pub fn new(endpoint: &str) -> Self {
        let trimmed = endpoint.trim_end_matches('/');
        let traces_url =
            if trimmed.ends_with("/v1/traces") { trimmed.to_string() } else { format!("{trimmed}/v1/traces") };
        Self { traces_url, service_name: "agentlog".into(), headers: Vec::new() }
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

/// Why a page was not delivered.
enum Refused {
    /// Try again later (connection refused, timeout, 429, 5xx).
    Retry(String),
    /// The collector refused the data itself (4xx): sending it again cannot help.
    Rejected(String),
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
    } else if status.as_u16() == 429 || status.is_server_error() {
        Err(Refused::Retry(format!("the collector answered {status}")))
    } else {
        Err(Refused::Rejected(format!("the collector answered {status}")))
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
    let mut spans = Vec::new();
    for end in &ends {
        spans.extend(agentlog_otel::spans_of_end(state.store.as_ref(), end).await?);
    }
    let count = spans.len();
    if count > 0 {
        let body = agentlog_otel::export_request(&config.service_name, spans).encode_to_vec();
        match send(client, config, body).await {
            Ok(()) => {}
            Err(Refused::Retry(why)) => return Err(ExportError::Collector(why)),
            Err(Refused::Rejected(why)) => {
                tracing::error!(why, spans = count, "the collector refused a page of spans; it is skipped");
            }
        }
    }
    let reached = if complete { last.max(head_seen) } else { last };
    checkpoint::save(&state.db, NAME, reached).await?;
    tracing::debug!(spans = count, position = reached, "exported a page of runs");
    Ok(!complete)
}
