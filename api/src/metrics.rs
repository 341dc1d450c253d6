//! Prometheus metrics in text exposition format, from plain atomics (no registry crate needed
//! for a handful of counters).

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
};

/// The server's counters and gauges.
#[derive(Debug, Default)]
pub struct Metrics {
    /// HTTP requests answered.
    pub http_requests: AtomicU64,
    /// GraphQL operations executed.
    pub graphql_requests: AtomicU64,
    /// GraphQL operations that returned errors.
    pub graphql_errors: AtomicU64,
    /// Open subscriptions.
    pub subscribers: AtomicI64,
    /// Reactor commands the domain refused, recorded by this instance, by (reactor, code).
    pub reactor_refusals: Mutex<BTreeMap<(String, String), u64>>,
    /// How long GraphQL requests over HTTP took.
    pub requests: crate::graphql::durations::RequestDurations,
    /// The OpenTelemetry GenAI histograms.
    pub genai: crate::genai_metrics::GenAiMetrics,
    /// OTLP export: spans the collector took, spans it refused as data (skipped), and requests
    /// to send again (unreachable, a timeout, 401, 429, 5xx, …), by this instance.
    pub otlp_spans_sent: AtomicU64,
    /// See `otlp_spans_sent`.
    pub otlp_spans_refused: AtomicU64,
    /// See `otlp_spans_sent`.
    pub otlp_retries: AtomicU64,
}

/// Figures read at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    /// Head of the log.
    pub head_position: i64,
    /// Lowest position every healthy projection has applied.
    pub projection_position: i64,
    /// Projections that failed.
    pub failed_projections: usize,
    /// Times the projection runner failed and resumed from its checkpoints.
    pub projection_resumes: u64,
    /// What the command handler did (appends, conflicts, commands decided on cached states).
    pub commands: agentlog_eventlog::CommandCounts,
    /// GraphQL documents taken from the parsed ones, and texts parsed.
    pub documents: crate::graphql::parsed::DocumentCounts,
    /// SQLite: the background WAL checkpointer's passes, frames copied back and failed passes.
    pub wal_checkpoints: Option<(u64, u64, u64)>,
}

impl Metrics {
    /// Add one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Count one refusal of `reactor`'s command, with the refusal's `code`.
    pub fn refused(&self, reactor: &str, code: &str) {
        // A poisoned lock only means another thread panicked mid-increment: the map is intact.
        let mut counts = self.reactor_refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry((reactor.to_string(), code.to_string())).or_default() += 1;
    }

    /// Render everything in Prometheus text format.
    pub fn render(&self, g: Gauges) -> String {
        let lag = (g.head_position - g.projection_position).max(0);
        let mut out = String::new();
        let mut line = |name: &str, kind: &str, help: &str, value: String| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
        };
        line(
            "agentlog_http_requests_total",
            "counter",
            "HTTP requests answered.",
            self.http_requests.load(Ordering::Relaxed).to_string(),
        );
        line(
            "agentlog_graphql_requests_total",
            "counter",
            "GraphQL operations executed.",
            self.graphql_requests.load(Ordering::Relaxed).to_string(),
        );
        line(
            "agentlog_graphql_errors_total",
            "counter",
            "GraphQL operations answered with errors.",
            self.graphql_errors.load(Ordering::Relaxed).to_string(),
        );
        line(
            "agentlog_appends_total",
            "counter",
            "Appends that wrote a command's events (a resend answered from the log is not one).",
            g.commands.appends.to_string(),
        );
        line(
            "agentlog_conflicts_total",
            "counter",
            "Command attempts refused because another writer had moved the stream (then decided again).",
            g.commands.conflicts.to_string(),
        );
        line(
            "agentlog_subscribers",
            "gauge",
            "Open GraphQL subscriptions.",
            self.subscribers.load(Ordering::Relaxed).to_string(),
        );
        line(
            "agentlog_log_head_position",
            "gauge",
            "Highest committed position of the log.",
            g.head_position.to_string(),
        );
        line(
            "agentlog_projection_position",
            "gauge",
            "Lowest position applied by every healthy projection.",
            g.projection_position.to_string(),
        );
        line("agentlog_projection_lag_events", "gauge", "Events committed but not yet projected.", lag.to_string());
        line(
            "agentlog_projections_failed",
            "gauge",
            "Projections stopped by an error.",
            g.failed_projections.to_string(),
        );
        line(
            "agentlog_projection_resumes_total",
            "counter",
            "Times the projection runner failed (a database failure that passes) and resumed from its checkpoints.",
            g.projection_resumes.to_string(),
        );
        if let Some((passes, frames, failures)) = g.wal_checkpoints {
            line(
                "agentlog_sqlite_wal_checkpoints_total",
                "counter",
                "WAL checkpoints run on the log's checkpointer thread (SQLite).",
                passes.to_string(),
            );
            line(
                "agentlog_sqlite_wal_checkpointed_frames_total",
                "counter",
                "WAL frames copied back into the database file by the checkpointer (SQLite).",
                frames.to_string(),
            );
            line(
                "agentlog_sqlite_wal_checkpoint_failures_total",
                "counter",
                "Checkpointer passes that failed (SQLite; the next one tries again).",
                failures.to_string(),
            );
        }
        labelled(
            &mut out,
            "agentlog_cached_state_commands_total",
            "Commands tried on a cached state without reading the log: appended, or reloaded (run again \
             on the stream as stored).",
            [
                ("outcome=\"appended\"".to_string(), g.commands.on_cache),
                ("outcome=\"reloaded\"".to_string(), g.commands.reloaded),
            ],
        );
        labelled(
            &mut out,
            "agentlog_graphql_documents_total",
            "GraphQL request texts: reused (parsed before) or parsed.",
            [
                ("outcome=\"reused\"".to_string(), g.documents.reused),
                ("outcome=\"parsed\"".to_string(), g.documents.parsed),
            ],
        );
        let counts = self.reactor_refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        labelled(
            &mut out,
            "agentlog_reactor_refusals_total",
            "Reactor commands the domain refused (each recorded as reactor.command_refused).",
            counts.iter().map(|((reactor, code), n)| (format!("reactor=\"{reactor}\",code=\"{code}\""), *n)),
        );
        drop(counts);
        labelled(
            &mut out,
            "agentlog_otlp_spans_total",
            "Spans the OTLP exporter sent: taken by the collector, or refused by it as data and skipped.",
            [
                ("outcome=\"sent\"".to_string(), self.otlp_spans_sent.load(Ordering::Relaxed)),
                ("outcome=\"refused\"".to_string(), self.otlp_spans_refused.load(Ordering::Relaxed)),
            ],
        );
        line_into(
            &mut out,
            "agentlog_otlp_retries_total",
            "OTLP export requests to be sent again: the collector unreachable, a timeout, 401, 403, 404, 408, 429, 5xx.",
            self.otlp_retries.load(Ordering::Relaxed),
        );
        self.requests.render(&mut out);
        self.genai.render(&mut out);
        out
    }
}

/// A counter without labels.
fn line_into(out: &mut String, name: &str, help: &str, value: u64) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"));
}

/// A counter with labelled samples, each `(labels, value)`: `outcome="reused"`, 3.
fn labelled(out: &mut String, name: &str, help: &str, samples: impl IntoIterator<Item = (String, u64)>) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n"));
    for (labels, value) in samples {
        out.push_str(&format!("{name}{{{labels}}} {value}\n"));
    }
}

/// Counts one open subscription for as long as it lives.
pub struct SubscriberCount(std::sync::Arc<Metrics>);

impl SubscriberCount {
    /// Count one more subscriber, unless `max` are open already (then `None`, nothing counted).
    pub fn admit(metrics: std::sync::Arc<Metrics>, max: usize) -> Option<Self> {
        let before = metrics.subscribers.fetch_add(1, Ordering::Relaxed);
        if usize::try_from(before).is_ok_and(|n| n >= max) {
            metrics.subscribers.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Self(metrics))
    }
}

impl Drop for SubscriberCount {
    fn drop(&mut self) {
        self.0.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}
