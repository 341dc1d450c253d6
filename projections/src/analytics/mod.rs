//! The analytics read model: finished runs rolled up by time bucket (hour and day, two
//! granularities side by side) × owner × agent × model × provider × final status, with run
//! counts, token and cost sums, a duration histogram (percentiles, see [`histogram`]) and counts
//! per completion reason.
//!
//! **What feeds it.** Only operation events: `operation.created` (owner, agent, model and
//! provider as snapshotted at creation), `operation.started` (start of the measured duration),
//! `operation.step_recorded` (tokens and cost, summed; a field stays unknown — NULL — until
//! some step measured it, never 0), and the four terminal events `operation.completed`,
//! `operation.failed`, `operation.interrupted`, `operation.cancelled`. Every kind of operation
//! counts (conversation, sub-agent, tool, group, task).
//!
//! **When a run is counted.** Once, when it finishes: at its terminal event, in the buckets of
//! the terminal event's time (`at`), with status and completion reason from that event. Pauses
//! (`waiting_for_human`, `waiting_for_async_tool`) are not ends and count nothing. Duration =
//! finished − started, in ms; a run that never started (cancelled while idle) is counted but
//! has no duration. Until then a run lives in `analytics_runs`, which keeps its facts (and keeps
//! them after, as a per-run fact table).
//!
//! Rows are additive: any set of rollup rows of one granularity can be summed, histograms
//! merged, and percentiles read from the merge — which is what [`query`] does.
//!
//! **Three tables of cells** ([`cells`]), counted at the same moment from the same runs, each
//! keyed by the dimensions it keeps: `analytics_rollups` (owner × agent × model × provider ×
//! status), `analytics_agent_rollups` (owner × agent × model: every provider and status summed)
//! and `analytics_fleet_rollups` (model × provider × status: every owner and agent summed). An
//! agent id is its owner's (two users may each have an `a1`), so a cell that names an agent
//! names its owner too. A report reads the smallest table that keeps every dimension it groups
//! or filters on (see [`query`]): a report by agent and model reads one row per bucket of its
//! answer, an admin's report that does not name agents reads the fleet's few rows.

mod cells;
pub mod histogram;
mod query;

use std::collections::HashMap;

use agentlog_domain::values::Usage;
use agentlog_domain::{
    envelope::RecordedEvent,
    operations::{OperationEvent, OperationStatus},
};
use async_trait::async_trait;

pub use histogram::DurationHistogram;
pub use query::{
    AnalyticsBucket, AnalyticsDimension, AnalyticsQuery, AnalyticsReport, AnalyticsSummary, DurationSummary,
    Granularity, MAX_CELLS, query,
};

use cells::{Scope, count_finished};

use crate::{
    db::{ReadTx, Row, SqlValue},
    decoding::OwnedKey,
    error::ProjectionError,
    fold::{RowSet, decode, group_by_owned_instance, int_opt, micros, placeholders, wire_name},
    projection::Projection,
    read::RowExt,
};

/// Projects operation lifecycles into `analytics_runs`, `analytics_rollups` and
/// `analytics_fleet_rollups`.
#[derive(Debug, Default, Clone, Copy)]
pub struct AnalyticsProjection;

const HOUR_MICROS: i64 = 3_600_000_000;
const DAY_MICROS: i64 = 24 * HOUR_MICROS;

/// What analytics knows of one run.
#[derive(Debug, Clone, Default, PartialEq)]
struct Run {
    user_id: String,
    agent_id: String,
    model: String,
    provider: String,
    created_at: i64,
    started_at: Option<i64>,
    usage: Usage,
    status: Option<String>,
    completion_reason: Option<String>,
    finished_at: Option<i64>,
    duration_ms: Option<i64>,
    updated_position: i64,
}

const RUN_COLUMNS: [&str; 16] = [
    "operation_id",
    "user_id",
    "agent_id",
    "model",
    "provider",
    "created_at",
    "started_at",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_micros",
    "status",
    "completion_reason",
    "finished_at",
    "duration_ms",
    "updated_position",
];

fn measure(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

impl Run {
    fn from_row(r: &Row) -> Self {
        Self {
            user_id: r.text_or_empty(1),
            agent_id: r.text_or_empty(2),
            model: r.text_or_empty(3),
            provider: r.text_or_empty(4),
            created_at: r.int_or_zero(5),
            started_at: r.i64(6),
            usage: Usage {
                input_tokens: measure(r.i64(7)),
                output_tokens: measure(r.i64(8)),
                total_tokens: measure(r.i64(9)),
                cost_micros: measure(r.i64(10)),
            },
            status: r.text(11),
            completion_reason: r.text(12),
            finished_at: r.i64(13),
            duration_ms: r.i64(14),
            updated_position: r.int_or_zero(15),
        }
    }

    fn row(&self, id: &str) -> Vec<SqlValue> {
        vec![
            id.into(),
            self.user_id.as_str().into(),
            self.agent_id.as_str().into(),
            self.model.as_str().into(),
            self.provider.as_str().into(),
            self.created_at.into(),
            self.started_at.into(),
            int_opt(self.usage.input_tokens),
            int_opt(self.usage.output_tokens),
            int_opt(self.usage.total_tokens),
            int_opt(self.usage.cost_micros),
            self.status.as_deref().into(),
            self.completion_reason.as_deref().into(),
            self.finished_at.into(),
            self.duration_ms.into(),
            self.updated_position.into(),
        ]
    }
}

/// A run that finished in this batch, to be counted.
struct Finished {
    run: Run,
    status: String,
    reason: String,
    position: i64,
}

/// Apply one event to a run; returns the run's count when the event ends it.
fn apply(run: &mut Run, event: &OperationEvent, position: i64) -> Result<Option<Finished>, ProjectionError> {
    let (status, reason, at) = match event {
        OperationEvent::Created(e) => {
            *run = Run {
                user_id: e.user_id.clone(),
                agent_id: e.spec.agent.agent_id.clone(),
                model: e.spec.agent.model.clone().unwrap_or_default(),
                provider: e.spec.agent.provider.clone().unwrap_or_default(),
                created_at: micros(e.at),
                ..Run::default()
            };
            run.updated_position = position;
            return Ok(None);
        }
        OperationEvent::Started(e) => {
            run.started_at = Some(micros(e.at));
            run.updated_position = position;
            return Ok(None);
        }
        OperationEvent::StepRecorded(e) => {
            run.usage = run.usage.plus(e.usage);
            run.updated_position = position;
            return Ok(None);
        }
        OperationEvent::Completed(e) => (OperationStatus::Done, wire_name(&e.reason)?, e.at),
        OperationEvent::Failed(e) => (OperationStatus::Error, "error".to_string(), e.at),
        OperationEvent::Interrupted(e) => (OperationStatus::Interrupted, "interrupted".to_string(), e.at),
        OperationEvent::Cancelled(e) => (OperationStatus::Cancelled, "cancelled".to_string(), e.at),
        _ => return Ok(None),
    };
    if run.finished_at.is_some() || run.agent_id.is_empty() {
        // Counted already (the domain ends a run once), or never created: nothing to count.
        return Ok(None);
    }
    let finished_at = micros(at);
    run.finished_at = Some(finished_at);
    run.duration_ms = run.started_at.map(|s| (finished_at - s).max(0) / 1_000);
    run.status = Some(status.as_str().to_string());
    run.completion_reason = Some(reason.clone());
    run.updated_position = position;
    Ok(Some(Finished { run: run.clone(), status: status.as_str().to_string(), reason, position }))
}

/// Does analytics read this event type?
fn is_fed_by(event_type: &str) -> bool {
    matches!(
        event_type,
        "operation.created"
            | "operation.started"
            | "operation.step_recorded"
            | "operation.completed"
            | "operation.failed"
            | "operation.interrupted"
            | "operation.cancelled"
    )
}

#[async_trait]
impl Projection for AnalyticsProjection {
    fn name(&self) -> &'static str {
        "analytics"
    }
    fn version(&self) -> i32 {
        // 2: the fleet rollups (a database at 1 rebuilds analytics to fill them); 3: runs keyed
        // by (user_id, operation_id); 4: the agent rollups, the fleet's without agents, and
        // histograms as compact text.
        4
    }
    fn tables(&self) -> &'static [&'static str] {
        &["analytics_runs", "analytics_rollups", "analytics_agent_rollups", "analytics_fleet_rollups"]
    }
    fn handles(&self, event_type: &str) -> bool {
        is_fed_by(event_type)
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&RecordedEvent]) -> Result<(), ProjectionError> {
        let groups = group_by_owned_instance(events)?;
        let keys: Vec<OwnedKey> = groups.iter().map(|(key, _)| key.clone()).collect();
        let mut runs = load_runs(tx, &keys).await?;
        let mut run_rows = RowSet::default();
        let mut finished = Vec::new();
        for (key, events) in &groups {
            let mut run = runs.remove(key).unwrap_or_default();
            for recorded in events {
                let event: OperationEvent = decode(recorded)?;
                if let Some(f) = apply(&mut run, &event, recorded.position)? {
                    finished.push(f);
                }
            }
            if run.agent_id.is_empty() {
                continue;
            }
            // The row's owner is the stream's: the key it is loaded by next time.
            run.user_id.clone_from(&key.0);
            run_rows.put(key.clone(), run.row(&key.1));
        }
        run_rows.upsert(tx, "analytics_runs", &RUN_COLUMNS, &["user_id", "operation_id"]).await?;
        for scope in Scope::ALL {
            count_finished(tx, scope, &finished).await?;
        }
        Ok(())
    }
}

/// The stored runs of these `(owner, operation)` keys.
async fn load_runs(tx: &mut ReadTx, keys: &[OwnedKey]) -> Result<HashMap<OwnedKey, Run>, ProjectionError> {
    let ids: Vec<&str> = keys.iter().map(|(_, id)| id.as_str()).collect();
    let mut out = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(10_000) {
        let sql = format!(
            "SELECT {} FROM analytics_runs WHERE operation_id IN ({})",
            RUN_COLUMNS.join(", "),
            placeholders(chunk.len())
        );
        let args: Vec<SqlValue> = chunk.iter().map(|id| SqlValue::from(*id)).collect();
        for row in tx.fetch(&sql, &args).await? {
            let key = (row.text_or_empty(1), row.text_or_empty(0));
            if keys.contains(&key) {
                out.insert(key, Run::from_row(&row));
            }
        }
    }
    Ok(out)
}
