//! Analytics over finished runs: counts, tokens, cost, duration percentiles and completion
//! reasons by hour or day, broken down by agent, model, provider and status.

use agentlog_projections::analytics::{
    self, AnalyticsBucket, AnalyticsDimension, AnalyticsQuery, AnalyticsSummary, DurationSummary, Granularity,
};
use async_graphql::{Context, Enum, InputObject, Json, Object, SimpleObject};
use chrono::{DateTime, Utc};

use crate::error::{ApiError, GqlResult};
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::request::reads;
use crate::graphql::wire::json;

/// Bucket size.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Default)]
#[graphql(remote = "agentlog_projections::analytics::Granularity")]
pub enum GranularityInput {
    /// One bucket per hour (UTC).
    #[default]
    Hour,
    /// One bucket per UTC day.
    Day,
}

/// A dimension to break figures down by.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_projections::analytics::AnalyticsDimension")]
pub enum DimensionInput {
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
#[derive(InputObject, Default)]
pub struct AnalyticsInput {
    /// Bucket size (default hour).
    #[graphql(default)]
    pub granularity: GranularityInput,
    /// Buckets starting at or after.
    pub from: Option<DateTime<Utc>>,
    /// Buckets starting before.
    pub to: Option<DateTime<Utc>>,
    /// Only this agent.
    pub agent_id: Option<String>,
    /// Only this model.
    pub model: Option<String>,
    /// Only this provider.
    pub provider: Option<String>,
    /// Only this final status.
    pub status: Option<String>,
    /// Break down by these dimensions.
    #[graphql(default)]
    pub group_by: Vec<DimensionInput>,
}

/// Duration statistics, ms (percentiles within ±0.78 %, from a log-bucket histogram).
#[derive(SimpleObject, Clone)]
pub struct Durations {
    /// Runs with a measured duration.
    pub count: i64,
    /// Mean (exact).
    pub mean_ms: Option<f64>,
    /// Shortest (exact).
    pub min_ms: Option<i64>,
    /// Longest (exact).
    pub max_ms: Option<i64>,
    /// Median.
    pub p50_ms: Option<i64>,
    /// 95th percentile.
    pub p95_ms: Option<i64>,
    /// 99th percentile.
    pub p99_ms: Option<i64>,
}

impl From<DurationSummary> for Durations {
    fn from(d: DurationSummary) -> Self {
        Self {
            count: d.count,
            mean_ms: d.mean_ms,
            min_ms: d.min_ms,
            max_ms: d.max_ms,
            p50_ms: d.p50_ms,
            p95_ms: d.p95_ms,
            p99_ms: d.p99_ms,
        }
    }
}

/// Figures for a set of finished runs.
#[derive(SimpleObject, Clone)]
pub struct Figures {
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
    pub duration: Durations,
    /// Runs per completion reason (`{"done": 12, "error": 1, …}`).
    pub completion_reasons: Json<serde_json::Value>,
}

impl From<AnalyticsSummary> for Figures {
    fn from(s: AnalyticsSummary) -> Self {
        Self {
            completion_reasons: json(&s.completion_reasons),
            runs: s.runs,
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            total_tokens: s.total_tokens,
            cost_micros: s.cost_micros,
            duration: s.duration.into(),
        }
    }
}

/// One bucket (and dimension combination).
#[derive(SimpleObject, Clone)]
pub struct Bucket {
    /// Start of the bucket.
    pub bucket_start: DateTime<Utc>,
    /// The agent, when grouped by agent.
    pub agent_id: Option<String>,
    /// The agent's owner, when grouped by agent (agent ids are per owner: two users' `a1` are two
    /// buckets).
    pub user_id: Option<String>,
    /// The model, when grouped by model (`""` = unknown).
    pub model: Option<String>,
    /// The provider, when grouped by provider (`""` = unknown).
    pub provider: Option<String>,
    /// The final status, when grouped by status.
    pub status: Option<String>,
    /// The figures.
    pub figures: Figures,
}

impl From<AnalyticsBucket> for Bucket {
    fn from(b: AnalyticsBucket) -> Self {
        Self {
            bucket_start: b.bucket_start,
            agent_id: b.agent_id,
            user_id: b.user_id,
            model: b.model,
            provider: b.provider,
            status: b.status,
            figures: b.summary.into(),
        }
    }
}

/// The report: buckets in time order and their total.
#[derive(SimpleObject, Clone)]
#[graphql(name = "AnalyticsReport")]
pub struct AnalyticsReportNode {
    /// Buckets.
    pub buckets: Vec<Bucket>,
    /// All buckets merged.
    pub total: Figures,
}

/// Analytics queries.
#[derive(Default)]
pub struct AnalyticsQueryRoot;

/// Most buckets one report may span: a year of hours.
const MAX_BUCKETS: i64 = 24 * 366;
// The default `analytics`'s doc string names.
const _: () = assert!(analytics::MAX_CELLS == 100_000);

#[Object]
impl AnalyticsQueryRoot {
    /// Figures over finished runs (an admin's cover every user). A report reads at most
    /// `--max-analytics-cells` rollup cells (default 100,000; a cell: one bucket × owner × agent
    /// × model, × provider × status too when the report groups or filters on those; for an
    /// admin's report that names no agent, one bucket × model × provider × status): a larger one
    /// is refused with LIMIT — narrow from/to, the filters or groupBy.
    #[graphql(complexity = "super::cost::once(super::cost::ANALYTICS, child_complexity)")]
    async fn analytics(&self, ctx: &Context<'_>, input: Option<AnalyticsInput>) -> GqlResult<AnalyticsReportNode> {
        let input = input.unwrap_or_default();
        let granularity = Granularity::from(input.granularity);
        if let (Some(from), Some(to)) = (input.from, input.to) {
            if to < from {
                return Err(ApiError::validation("to", "must not be before from").into());
            }
            let span = match granularity {
                Granularity::Hour => (to - from).num_hours(),
                Granularity::Day => (to - from).num_days(),
            };
            if span > MAX_BUCKETS {
                return Err(ApiError::Limit(format!("at most {MAX_BUCKETS} buckets per report")).into());
            }
        }
        let mut group_by: Vec<AnalyticsDimension> = input.group_by.into_iter().map(Into::into).collect();
        group_by.dedup();
        let query = AnalyticsQuery {
            granularity,
            from: input.from,
            to: input.to,
            agent_id: input.agent_id,
            model: input.model,
            provider: input.provider,
            status: input.status,
            group_by,
        };
        let app = app(ctx);
        let report = analytics::query(reads(ctx), caller(ctx)?.owner(), &query, app.limits.max_analytics_cells).await?;
        Ok(AnalyticsReportNode {
            buckets: report.buckets.into_iter().map(Bucket::from).collect(),
            total: report.total.into(),
        })
    }
}
