//! The OpenTelemetry GenAI metrics on `/metrics` (semantic conventions
//! [`agentlog_otel::conventions::VERSION`], the version the OTLP export follows), named as the
//! OpenTelemetry → Prometheus mapping names them:
//!
//! - `gen_ai.client.token.usage` (unit `{token}`) → `gen_ai_client_token_usage`, a histogram by
//!   `gen_ai_operation_name` (`chat`), `gen_ai_provider_name`, `gen_ai_request_model`,
//!   `gen_ai_agent_id` and `gen_ai_token_type` (`input` / `output`);
//! - `gen_ai.client.operation.duration` (unit `s`) → `gen_ai_client_operation_duration_seconds`,
//!   by operation (`invoke_agent` per run, `chat` per step), provider, model, agent and, for a
//!   run that did not end well, `error_type`.
//!
//! Both are derived from the log, as the traces are (`reactors::genai_metrics` follows it): each
//! instance follows the log from its head
//! at start (history is not counted again after a restart) and measures each run once, at the
//! event that ends it, from the same spans the export sends. Every instance therefore measures
//! every run the fleet records while it runs: a fleet reads one instance, or `max by (…)`
//! across instances, never `sum`.
//!
//! Agent ids, models, providers and error types come from users, so each histogram keeps at
//! most `max_series` label sets (`--max-genai-series`); a measurement with a new set beyond that
//! counts in one overflow series labelled `otel_metric_overflow="true"`, as OpenTelemetry SDKs
//! do at their cardinality limit. A user cannot grow the server's memory or a scrape's size
//! without bound.

use std::{collections::BTreeMap, sync::Mutex};

use agentlog_otel::Measurement;

use crate::histogram::{Histogram, Labels, render_histogram};

/// The conventions' advised buckets for token counts.
const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// The conventions' advised buckets for durations, in seconds.
const DURATION_BUCKETS: &[f64] =
    &[0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// The default of `--max-genai-series`: label sets kept per histogram.
pub const DEFAULT_MAX_SERIES: usize = 1000;

/// The GenAI histograms of this instance.
#[derive(Debug)]
pub struct GenAiMetrics {
    /// Both histograms under one lock: a scrape sees a run's measurements all or not at all.
    histograms: Mutex<Histograms>,
}

impl Default for GenAiMetrics {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_SERIES)
    }
}

#[derive(Debug, Clone, Default)]
struct Histograms {
    token_usage: BTreeMap<Labels, Histogram>,
    duration: BTreeMap<Labels, Histogram>,
    /// Label sets kept per histogram before the overflow series.
    max_series: usize,
}

impl GenAiMetrics {
    /// Histograms keeping at most `max_series` label sets each (then one overflow series).
    pub fn new(max_series: usize) -> Self {
        Self { histograms: Mutex::new(Histograms { max_series, ..Histograms::default() }) }
    }

    /// Record one run's measurements (its own and its operations'), together.
    pub fn record_run(&self, run: &[Measurement]) {
        // A poisoned lock only means another thread panicked mid-update: the figures stand.
        let mut h = self.histograms.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for m in run {
            h.record(m);
        }
    }

    /// Append both histograms in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let h = self.histograms.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let version = agentlog_otel::conventions::VERSION;
        render_histogram(
            out,
            "gen_ai_client_token_usage",
            &format!("Tokens used per GenAI operation (gen_ai.client.token.usage, semantic conventions {version})."),
            TOKEN_BUCKETS,
            &h.token_usage,
        );
        render_histogram(
            out,
            "gen_ai_client_operation_duration_seconds",
            &format!(
                "Duration of GenAI operations (gen_ai.client.operation.duration, semantic conventions {version})."
            ),
            DURATION_BUCKETS,
            &h.duration,
        );
    }
}

impl Histograms {
    /// Record one operation's measurements.
    fn record(&mut self, m: &Measurement) {
        let mut labels: Labels = vec![
            ("gen_ai_operation_name", m.operation.clone()),
            ("gen_ai_provider_name", m.provider.clone()),
            ("gen_ai_request_model", m.model.clone()),
            ("gen_ai_agent_id", m.agent.clone()),
        ];
        for (kind, tokens) in [("input", m.input_tokens), ("output", m.output_tokens)] {
            if let Some(t) = tokens {
                let mut l = labels.clone();
                l.push(("gen_ai_token_type", kind.to_string()));
                series(&mut self.token_usage, l, self.max_series).observe(TOKEN_BUCKETS, t.max(0) as f64);
            }
        }
        if let Some(e) = &m.error_type {
            labels.push(("error_type", e.clone()));
        }
        series(&mut self.duration, labels, self.max_series).observe(DURATION_BUCKETS, m.duration_secs.max(0.0));
    }
}

/// The histogram of `labels` in `map`: its own while the map holds fewer than `max` label sets
/// (the overflow series aside) or already has it, else the overflow series.
fn series(map: &mut BTreeMap<Labels, Histogram>, labels: Labels, max: usize) -> &mut Histogram {
    let overflow: Labels = vec![("otel_metric_overflow", "true".to_string())];
    let kept = map.len() - usize::from(map.contains_key(&overflow));
    let labels = if map.contains_key(&labels) || kept < max { labels } else { overflow };
    map.entry(labels).or_default()
}
