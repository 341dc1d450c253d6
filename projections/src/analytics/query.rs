//! The analytics query: pick rollup rows of one granularity by time range and dimensions,
//! merge them (sums, histograms, reason counts) per bucket and per chosen dimensions, and read
//! percentiles from the merged histograms.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::histogram::DurationHistogram;
use crate::{conditions::Conditions, db::ReadDb, error::ProjectionError, read::RowExt};

/// Hour or day buckets (UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One bucket per hour.
    #[default]
    Hour,
    /// One bucket per UTC day.
    Day,
}

impl Granularity {
    fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }
}

/// A dimension to break the figures down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnalyticsDimension {
    /// By agent.
    Agent,
    /// By model.
    Model,
    /// By provider.
    Provider,
    /// By final status.
    Status,
}

/// What to report on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnalyticsQuery {
    /// Bucket size.
    pub granularity: Granularity,
    /// Buckets starting at or after (runs finished at or after, rounded down to a bucket).
    pub from: Option<DateTime<Utc>>,
    /// Buckets starting before.
    pub to: Option<DateTime<Utc>>,
    /// Only this agent.
    pub agent_id: Option<String>,
    /// Only this model (`""` = runs whose model was unknown).
    pub model: Option<String>,
    /// Only this provider (`""` = unknown).
    pub provider: Option<String>,
    /// Only runs that ended with this status (done, error, interrupted, cancelled).
    pub status: Option<String>,
    /// Break each bucket down by these dimensions (none: one row per bucket).
    pub group_by: Vec<AnalyticsDimension>,
}

/// Duration statistics of a set of runs (those that started; ms).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DurationSummary {
    /// Runs with a measured duration.
    pub count: i64,
    /// Mean (exact).
    pub mean_ms: Option<f64>,
    /// Shortest (exact).
    pub min_ms: Option<i64>,
    /// Longest (exact).
    pub max_ms: Option<i64>,
    /// Median (within ±0.78 %).
    pub p50_ms: Option<i64>,
    /// 95th percentile (within ±0.78 %).
    pub p95_ms: Option<i64>,
    /// 99th percentile (within ±0.78 %).
    pub p99_ms: Option<i64>,
}

/// Figures for a set of finished runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalyticsSummary {
    /// Runs finished.
    pub runs: i64,
    /// Prompt tokens (absent when no run measured them).
    pub input_tokens: Option<i64>,
    /// Completion tokens.
    pub output_tokens: Option<i64>,
    /// All tokens.
    pub total_tokens: Option<i64>,
    /// Cost, micro-units.
    pub cost_micros: Option<i64>,
    /// Durations.
    pub duration: DurationSummary,
    /// Runs per completion reason (done, max_steps, cost_limit, error, interrupted, cancelled).
    pub completion_reasons: BTreeMap<String, i64>,
}

/// One bucket (and, with `group_by`, one combination of dimensions).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalyticsBucket {
    /// Start of the bucket.
    pub bucket_start: DateTime<Utc>,
    /// The agent, when grouped by agent.
    pub agent_id: Option<String>,
    /// The model, when grouped by model (`""` = unknown).
    pub model: Option<String>,
    /// The provider, when grouped by provider (`""` = unknown).
    pub provider: Option<String>,
    /// The final status, when grouped by status.
    pub status: Option<String>,
    /// The figures.
    #[serde(flatten)]
    pub summary: AnalyticsSummary,
}

/// The answer: every bucket in time order, and the total over all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalyticsReport {
    /// Buckets (and dimension combinations), in time order.
    pub buckets: Vec<AnalyticsBucket>,
    /// All of them merged.
    pub total: AnalyticsSummary,
}

/// Sums being merged, before percentiles are read.
#[derive(Debug, Default)]
struct Accumulator {
    runs: i64,
    tokens: [Option<i64>; 4],
    duration_count: i64,
    duration_sum: i64,
    min: Option<i64>,
    max: Option<i64>,
    histogram: DurationHistogram,
    reasons: BTreeMap<String, i64>,
}

fn add_measured(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Accumulator {
    fn add(&mut self, other: &Accumulator) {
        self.runs += other.runs;
        for i in 0..4 {
            self.tokens[i] = add_measured(self.tokens[i], other.tokens[i]);
        }
        self.duration_count += other.duration_count;
        self.duration_sum = self.duration_sum.saturating_add(other.duration_sum);
        self.min = match (self.min, other.min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max = match (self.max, other.max) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.histogram.merge(&other.histogram);
        for (reason, n) in &other.reasons {
            *self.reasons.entry(reason.clone()).or_insert(0) += n;
        }
    }

    fn summary(&self) -> AnalyticsSummary {
        let clamp = |v: Option<u64>| {
            v.map(|v| {
                let v = i64::try_from(v).unwrap_or(i64::MAX);
                v.clamp(self.min.unwrap_or(v), self.max.unwrap_or(v))
            })
        };
        AnalyticsSummary {
            runs: self.runs,
            input_tokens: self.tokens[0],
            output_tokens: self.tokens[1],
            total_tokens: self.tokens[2],
            cost_micros: self.tokens[3],
            duration: DurationSummary {
                count: self.duration_count,
                mean_ms: (self.duration_count > 0).then(|| self.duration_sum as f64 / self.duration_count as f64),
                min_ms: self.min,
                max_ms: self.max,
                p50_ms: clamp(self.histogram.quantile(0.50)),
                p95_ms: clamp(self.histogram.quantile(0.95)),
                p99_ms: clamp(self.histogram.quantile(0.99)),
            },
            completion_reasons: self.reasons.clone(),
        }
    }
}

type BucketKey = (i64, Option<String>, Option<String>, Option<String>, Option<String>);

/// Figures for finished runs matching `q` (the owner's runs, or everyone's for an admin: read
/// from the rollups summed over every owner).
pub async fn query(db: &ReadDb, owner: Option<&str>, q: &AnalyticsQuery) -> Result<AnalyticsReport, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("granularity", Some(q.granularity.as_str()));
    w.at_least("bucket_start", q.from.map(|t| t.timestamp_micros()));
    w.below("bucket_start", q.to.map(|t| t.timestamp_micros()));
    w.owner("user_id", owner);
    let table = if owner.is_some() { "analytics_rollups" } else { "analytics_fleet_rollups" };
    w.eq("agent_id", q.agent_id.as_deref());
    w.eq("model", q.model.as_deref());
    w.eq("provider", q.provider.as_deref());
    w.eq("status", q.status.as_deref());
    let sql = format!(
        "SELECT bucket_start, agent_id, model, provider, status, runs, input_tokens, output_tokens, total_tokens, \
         cost_micros, duration_count, duration_sum_ms, duration_min_ms, duration_max_ms, duration_histogram, \
         completion_reasons FROM {table} {}",
        w.sql()
    );
    let by = |d: AnalyticsDimension| q.group_by.contains(&d);
    let mut buckets: BTreeMap<BucketKey, Accumulator> = BTreeMap::new();
    let mut total = Accumulator::default();
    for r in db.fetch(&sql, w.args()).await? {
        let histogram: DurationHistogram = r
            .json_as(14)
            .ok_or_else(|| ProjectionError::Invalid(format!("{table}: a duration histogram is unreadable")))?;
        let row = Accumulator {
            runs: r.int_or_zero(5),
            tokens: [r.i64(6), r.i64(7), r.i64(8), r.i64(9)],
            duration_count: r.int_or_zero(10),
            duration_sum: r.int_or_zero(11),
            min: r.i64(12),
            max: r.i64(13),
            histogram,
            reasons: r.json_as(15).unwrap_or_default(),
        };
        let key = (
            r.int_or_zero(0),
            by(AnalyticsDimension::Agent).then(|| r.text_or_empty(1)),
            by(AnalyticsDimension::Model).then(|| r.text_or_empty(2)),
            by(AnalyticsDimension::Provider).then(|| r.text_or_empty(3)),
            by(AnalyticsDimension::Status).then(|| r.text_or_empty(4)),
        );
        total.add(&row);
        buckets.entry(key).or_default().add(&row);
    }
    Ok(AnalyticsReport {
        buckets: buckets
            .into_iter()
            .map(|((start, agent_id, model, provider, status), acc)| AnalyticsBucket {
                bucket_start: DateTime::from_timestamp_micros(start).unwrap_or(DateTime::UNIX_EPOCH),
                agent_id,
                model,
                provider,
                status,
                summary: acc.summary(),
            })
            .collect(),
        total: total.summary(),
    })
}
