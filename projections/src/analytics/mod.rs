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
//! **Two scopes.** `analytics_rollups` has a row per owner; `analytics_fleet_rollups` has the
//! same cells summed over every owner, counted at the same moment from the same runs. A user's
//! report reads the first, an admin's (every user) the second, so neither reads more rows than
//! its answer's buckets × dimensions hold.

pub mod histogram;
mod query;

use std::collections::{BTreeMap, HashMap, HashSet};

use agentlog_domain::values::Usage;
use agentlog_domain::{
    envelope::RecordedEvent,
    operations::{OperationEvent, OperationStatus},
};
use async_trait::async_trait;

pub use histogram::DurationHistogram;
pub use query::{
    AnalyticsBucket, AnalyticsDimension, AnalyticsQuery, AnalyticsReport, AnalyticsSummary, DurationSummary,
    Granularity, query,
};

use crate::{
    db::{ReadTx, Row, SqlValue},
    decoding::OwnedKey,
    error::ProjectionError,
    fold::{RowSet, decode, group_by_owned_instance, int_opt, json_text, micros, placeholders, wire_name},
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

/// One rollup row.
#[derive(Debug, Clone, Default, PartialEq)]
struct Cell {
    granularity: &'static str,
    bucket_start: i64,
    user_id: String,
    agent_id: String,
    model: String,
    provider: String,
    status: String,
    runs: i64,
    usage: Usage,
    duration_count: i64,
    duration_sum_ms: i64,
    duration_min_ms: Option<i64>,
    duration_max_ms: Option<i64>,
    histogram: DurationHistogram,
    reasons: BTreeMap<String, i64>,
    updated_position: i64,
}

const CELL_COLUMNS: [&str; 20] = [
    "rollup_key",
    "granularity",
    "bucket_start",
    "user_id",
    "agent_id",
    "model",
    "provider",
    "status",
    "runs",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_micros",
    "duration_count",
    "duration_sum_ms",
    "duration_min_ms",
    "duration_max_ms",
    "duration_histogram",
    "completion_reasons",
    "updated_position",
];

/// Which rollup table a cell lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// `analytics_rollups`: one row per owner.
    Owner,
    /// `analytics_fleet_rollups`: every owner summed (no `user_id` column).
    Fleet,
}

impl Scope {
    fn table(self) -> &'static str {
        match self {
            Self::Owner => "analytics_rollups",
            Self::Fleet => "analytics_fleet_rollups",
        }
    }

    /// The table's columns, in [`CELL_COLUMNS`] order.
    fn columns(self) -> Vec<&'static str> {
        CELL_COLUMNS.iter().copied().filter(|c| self == Self::Owner || *c != "user_id").collect()
    }

    /// What to select to read a row as [`Cell::from_row`] does (the fleet reads `''` as owner).
    fn select_list(self) -> String {
        CELL_COLUMNS
            .iter()
            .map(|c| if self == Self::Fleet && *c == "user_id" { "'' AS user_id" } else { c })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The key of a cell: its dimensions, separated by a control character no id contains (the
/// fleet's keys have no owner).
fn cell_key(scope: Scope, granularity: &str, bucket_start: i64, run: &Run, status: &str) -> String {
    let owner = match scope {
        Scope::Owner => format!("\u{1f}{}", run.user_id),
        Scope::Fleet => String::new(),
    };
    format!(
        "{granularity}\u{1f}{bucket_start}{owner}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{status}",
        run.agent_id, run.model, run.provider
    )
}

impl Cell {
    fn from_row(r: &Row) -> Result<Self, ProjectionError> {
        let granularity = match r.str(1) {
            Some("hour") => "hour",
            Some("day") => "day",
            other => return Err(ProjectionError::Invalid(format!("analytics_rollups: granularity {other:?}"))),
        };
        let histogram = r
            .str(17)
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| ProjectionError::Invalid(format!("analytics_rollups: histogram unreadable: {e}")))?
            .unwrap_or_default();
        let reasons = r
            .str(18)
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| ProjectionError::Invalid(format!("analytics_rollups: reasons unreadable: {e}")))?
            .unwrap_or_default();
        Ok(Self {
            granularity,
            bucket_start: r.int_or_zero(2),
            user_id: r.text_or_empty(3),
            agent_id: r.text_or_empty(4),
            model: r.text_or_empty(5),
            provider: r.text_or_empty(6),
            status: r.text_or_empty(7),
            runs: r.int_or_zero(8),
            usage: Usage {
                input_tokens: measure(r.i64(9)),
                output_tokens: measure(r.i64(10)),
                total_tokens: measure(r.i64(11)),
                cost_micros: measure(r.i64(12)),
            },
            duration_count: r.int_or_zero(13),
            duration_sum_ms: r.int_or_zero(14),
            duration_min_ms: r.i64(15),
            duration_max_ms: r.i64(16),
            histogram,
            reasons,
            updated_position: r.int_or_zero(19),
        })
    }

    fn count(&mut self, run: &Run, reason: &str, position: i64) {
        self.runs += 1;
        self.usage = self.usage.plus(run.usage);
        if let Some(d) = run.duration_ms {
            self.duration_count += 1;
            self.duration_sum_ms = self.duration_sum_ms.saturating_add(d);
            self.duration_min_ms = Some(self.duration_min_ms.map_or(d, |m| m.min(d)));
            self.duration_max_ms = Some(self.duration_max_ms.map_or(d, |m| m.max(d)));
            self.histogram.record(u64::try_from(d).unwrap_or(0));
        }
        *self.reasons.entry(reason.to_string()).or_insert(0) += 1;
        // A batch counts its runs grouped by operation, not in log order: keep the latest.
        self.updated_position = self.updated_position.max(position);
    }

    fn row(&self, scope: Scope, key: &str) -> Result<Vec<SqlValue>, ProjectionError> {
        let mut row = vec![
            key.into(),
            self.granularity.into(),
            self.bucket_start.into(),
            self.user_id.as_str().into(),
            self.agent_id.as_str().into(),
            self.model.as_str().into(),
            self.provider.as_str().into(),
            self.status.as_str().into(),
            self.runs.into(),
            int_opt(self.usage.input_tokens),
            int_opt(self.usage.output_tokens),
            int_opt(self.usage.total_tokens),
            int_opt(self.usage.cost_micros),
            self.duration_count.into(),
            self.duration_sum_ms.into(),
            self.duration_min_ms.into(),
            self.duration_max_ms.into(),
            json_text(&self.histogram)?.into(),
            json_text(&self.reasons)?.into(),
            self.updated_position.into(),
        ];
        if scope == Scope::Fleet {
            row.remove(3);
        }
        Ok(row)
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
        // by (user_id, operation_id).
        3
    }
    fn tables(&self) -> &'static [&'static str] {
        &["analytics_runs", "analytics_rollups", "analytics_fleet_rollups"]
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
        count_finished(tx, Scope::Owner, &finished).await?;
        count_finished(tx, Scope::Fleet, &finished).await
    }
}

/// The stored runs of these `(owner, operation)` keys.
async fn load_runs(tx: &mut ReadTx, keys: &[OwnedKey]) -> Result<HashMap<OwnedKey, Run>, ProjectionError> {
    let ids: Vec<&str> = keys.iter().map(|(_, id)| id.as_str()).collect();
    let wanted: HashSet<&OwnedKey> = keys.iter().collect();
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
            if wanted.contains(&key) {
                out.insert(key, Run::from_row(&row));
            }
        }
    }
    Ok(out)
}

/// Add the runs that finished in this batch to their hour and day cells of one scope.
async fn count_finished(tx: &mut ReadTx, scope: Scope, finished: &[Finished]) -> Result<(), ProjectionError> {
    if finished.is_empty() {
        return Ok(());
    }
    let mut cells: BTreeMap<String, Cell> = BTreeMap::new();
    let mut keyed = Vec::with_capacity(finished.len() * 2);
    for f in finished {
        let at = f.run.finished_at.unwrap_or(0);
        for (granularity, width) in [("hour", HOUR_MICROS), ("day", DAY_MICROS)] {
            let bucket_start = at.div_euclid(width) * width;
            let key = cell_key(scope, granularity, bucket_start, &f.run, &f.status);
            cells.entry(key.clone()).or_insert_with(|| Cell {
                granularity,
                bucket_start,
                user_id: if scope == Scope::Owner { f.run.user_id.clone() } else { String::new() },
                agent_id: f.run.agent_id.clone(),
                model: f.run.model.clone(),
                provider: f.run.provider.clone(),
                status: f.status.clone(),
                ..Cell::default()
            });
            keyed.push((key, f));
        }
    }
    let keys: Vec<&str> = cells.keys().map(String::as_str).collect();
    let mut stored = HashMap::new();
    for chunk in keys.chunks(10_000) {
        let sql = format!(
            "SELECT {} FROM {} WHERE rollup_key IN ({})",
            scope.select_list(),
            scope.table(),
            placeholders(chunk.len())
        );
        let args: Vec<SqlValue> = chunk.iter().map(|k| SqlValue::from(*k)).collect();
        for row in tx.fetch(&sql, &args).await? {
            stored.insert(row.text_or_empty(0), Cell::from_row(&row)?);
        }
    }
    for (key, cell) in stored {
        cells.insert(key, cell);
    }
    for (key, f) in keyed {
        if let Some(cell) = cells.get_mut(&key) {
            cell.count(&f.run, &f.reason, f.position);
        }
    }
    let mut rows = RowSet::default();
    for (key, cell) in &cells {
        rows.put(key.clone(), cell.row(scope, key)?);
    }
    rows.upsert(tx, scope.table(), &scope.columns(), &["rollup_key"]).await
}
