//! The analytics query: pick rollup rows of one granularity by time range and dimensions from
//! the smallest table that keeps every dimension the report groups or filters on, merge them
//! (sums, histograms, reason counts) per bucket and per chosen dimensions, and read percentiles
//! from the merged histograms. A report reads at most [`MAX_CELLS`] rows.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{cells::Scope, histogram::DurationHistogram};
use crate::{
    conditions::Conditions,
    db::{ReadDb, Row, SqlValue},
    error::ProjectionError,
    read::RowExt,
};

/// The default bound on the rollup rows one report reads (its cost is bounded by them).
pub const MAX_CELLS: usize = 100_000;

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
    /// The agent's owner, when grouped by agent (an agent id is its owner's: two users' `a1`
    /// are two buckets).
    pub user_id: Option<String>,
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

/// Bucket start, agent, owner, model, provider, status: the dimensions grouped on.
type BucketKey = (i64, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);

/// The table a report reads: the smallest that keeps every dimension it groups or filters on.
fn source(owner: Option<&str>, q: &AnalyticsQuery) -> Scope {
    let uses = |d: AnalyticsDimension, filter: &Option<String>| q.group_by.contains(&d) || filter.is_some();
    let agent = uses(AnalyticsDimension::Agent, &q.agent_id);
    let provider_or_status =
        uses(AnalyticsDimension::Provider, &q.provider) || uses(AnalyticsDimension::Status, &q.status);
    if owner.is_none() && !agent {
        Scope::Fleet
    } else if !provider_or_status {
        Scope::Agents
    } else {
        Scope::Owner
    }
}

/// Column `i`'s text, moved out of the row.
fn take_text(r: &mut Row, i: usize) -> String {
    match r.0.get_mut(i) {
        Some(SqlValue::Text(s)) => std::mem::take(s),
        _ => String::new(),
    }
}

/// Figures for finished runs matching `q` (the owner's runs, or everyone's for an admin),
/// reading at most `max_cells` rollup rows: a larger report is refused with
/// [`ProjectionError::Limit`] (narrow its time range, its filters or its `group_by`).
pub async fn query(
    db: &ReadDb,
    owner: Option<&str>,
    q: &AnalyticsQuery,
    max_cells: usize,
) -> Result<AnalyticsReport, ProjectionError> {
    let scope = source(owner, q);
    let table = scope.table();
    let mut w = Conditions::default();
    w.eq("granularity", Some(q.granularity.as_str()));
    w.at_least("bucket_start", q.from.map(|t| t.timestamp_micros()));
    w.below("bucket_start", q.to.map(|t| t.timestamp_micros()));
    w.owner("user_id", owner);
    w.eq("agent_id", q.agent_id.as_deref());
    w.eq("model", q.model.as_deref());
    w.eq("provider", q.provider.as_deref());
    w.eq("status", q.status.as_deref());
    let sql = format!(
        "SELECT bucket_start, runs, input_tokens, output_tokens, total_tokens, cost_micros, duration_count, \
         duration_sum_ms, duration_min_ms, duration_max_ms, duration_histogram, completion_reasons, {}, {}, {}, {}, {} \
         FROM {table} {} LIMIT {}",
        scope.select("agent_id"),
        scope.select("user_id"),
        scope.select("model"),
        scope.select("provider"),
        scope.select("status"),
        w.sql(),
        max_cells.saturating_add(1)
    );
    let by = |d: AnalyticsDimension| q.group_by.contains(&d);
    let by_agent = by(AnalyticsDimension::Agent);
    let mut buckets: BTreeMap<BucketKey, Accumulator> = BTreeMap::new();
    let mut total = Accumulator::default();
    let mut unreadable = false;
    let read = db
        .for_each_row(&sql, w.args(), |mut r| {
            let mut histogram = DurationHistogram::default();
            if histogram.merge_text(r.str(10).unwrap_or_default()).is_none() {
                unreadable = true;
            }
            let row = Accumulator {
                runs: r.int_or_zero(1),
                tokens: [r.i64(2), r.i64(3), r.i64(4), r.i64(5)],
                duration_count: r.int_or_zero(6),
                duration_sum: r.int_or_zero(7),
                min: r.i64(8),
                max: r.i64(9),
                histogram,
                reasons: r.json_as(11).unwrap_or_default(),
            };
            let key = (
                r.int_or_zero(0),
                by_agent.then(|| take_text(&mut r, 12)),
                by_agent.then(|| take_text(&mut r, 13)),
                by(AnalyticsDimension::Model).then(|| take_text(&mut r, 14)),
                by(AnalyticsDimension::Provider).then(|| take_text(&mut r, 15)),
                by(AnalyticsDimension::Status).then(|| take_text(&mut r, 16)),
            );
            total.add(&row);
            match buckets.entry(key) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(row);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().add(&row),
            }
        })
        .await?;
    if unreadable {
        return Err(ProjectionError::Invalid(format!("{table}: a duration histogram is unreadable")));
    }
    if usize::try_from(read).unwrap_or(usize::MAX) > max_cells {
        return Err(ProjectionError::Limit(format!(
            "the report would read more than {max_cells} rollup cells: narrow from/to, the filters or groupBy"
        )));
    }
    Ok(AnalyticsReport {
        buckets: buckets
            .into_iter()
            .map(|((start, agent_id, user_id, model, provider, status), acc)| AnalyticsBucket {
                bucket_start: DateTime::from_timestamp_micros(start).unwrap_or(DateTime::UNIX_EPOCH),
                agent_id,
                user_id,
                model,
                provider,
                status,
                summary: acc.summary(),
            })
            .collect(),
        total: total.summary(),
    })
}
