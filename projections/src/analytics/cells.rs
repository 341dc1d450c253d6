//! The rollup cells: finished runs counted into hour and day buckets of three tables, each keyed
//! by the dimensions it keeps ([`Scope`]). Every cell holds the same additive figures (runs,
//! token and cost sums, duration count/sum/min/max, a [`DurationHistogram`] and counts per
//! completion reason), so the query can sum any set of one granularity's cells.

use std::collections::{BTreeMap, HashMap};

use agentlog_domain::values::Usage;

use super::{
    histogram::DurationHistogram,
    runs::{Finished, Run, usage_at},
};
use crate::{
    db::{ReadTx, Row, SqlValue},
    error::ProjectionError,
    fold::{RowSet, int_opt, json_text},
    read::RowExt,
};

const HOUR_MICROS: i64 = 3_600_000_000;
const DAY_MICROS: i64 = 24 * HOUR_MICROS;

/// Which rollup table a cell lives in, named by the dimensions it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// `analytics_rollups`: bucket × owner × agent × model × provider × status.
    Owner,
    /// `analytics_agent_rollups`: bucket × owner × agent × model, every provider and status
    /// summed — the cells of a report by agent and model, one row per answer's bucket.
    Agents,
    /// `analytics_fleet_rollups`: bucket × model × provider × status, every owner and agent
    /// summed — an admin's report that does not name agents.
    Fleet,
}

/// The dimension columns, in key order.
const DIMENSIONS: [&str; 5] = ["user_id", "agent_id", "model", "provider", "status"];

impl Scope {
    /// Every scope, in the order a batch writes them.
    pub(super) const ALL: [Scope; 3] = [Scope::Owner, Scope::Agents, Scope::Fleet];

    pub(super) fn table(self) -> &'static str {
        match self {
            Self::Owner => "analytics_rollups",
            Self::Agents => "analytics_agent_rollups",
            Self::Fleet => "analytics_fleet_rollups",
        }
    }

    /// Does the table have this column? (Every figure column; only its own dimensions.)
    pub(super) fn has(self, column: &str) -> bool {
        match self {
            Self::Owner => true,
            Self::Agents => !matches!(column, "provider" | "status"),
            Self::Fleet => !matches!(column, "user_id" | "agent_id"),
        }
    }

    /// `column`, or `''` under its name when the table sums over it.
    pub(super) fn select(self, column: &'static str) -> String {
        if self.has(column) { column.to_string() } else { format!("'' AS {column}") }
    }

    /// The table's columns, in [`CELL_COLUMNS`] order.
    fn columns(self) -> Vec<&'static str> {
        CELL_COLUMNS.iter().copied().filter(|c| self.has(c)).collect()
    }

    /// What to select to read a row as [`Cell::from_row`] does.
    fn select_list(self) -> String {
        CELL_COLUMNS.iter().map(|c| self.select(c)).collect::<Vec<_>>().join(", ")
    }

    /// The key of a cell: its granularity, bucket and the dimensions this table keeps,
    /// separated by a control character no id contains.
    fn key(self, granularity: &str, bucket_start: i64, run: &Run, status: &str) -> String {
        let values = [run.user_id.as_str(), &run.agent_id, &run.model, &run.provider, status];
        let mut key = format!("{granularity}\u{1f}{bucket_start}");
        for (column, value) in DIMENSIONS.iter().zip(values) {
            if self.has(column) {
                key.push('\u{1f}');
                key.push_str(value);
            }
        }
        key
    }

    /// `value` when the table keeps `column`, else `''`.
    fn dimension(self, column: &str, value: &str) -> String {
        if self.has(column) { value.to_string() } else { String::new() }
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

impl Cell {
    fn from_row(scope: Scope, r: &Row) -> Result<Self, ProjectionError> {
        let table = scope.table();
        let granularity = match r.str(1) {
            Some("hour") => "hour",
            Some("day") => "day",
            other => return Err(ProjectionError::Invalid(format!("{table}: granularity {other:?}"))),
        };
        let histogram = DurationHistogram::from_text(r.str(17).unwrap_or_default())
            .ok_or_else(|| ProjectionError::Invalid(format!("{table}: a duration histogram is unreadable")))?;
        let reasons = r
            .str(18)
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| ProjectionError::Invalid(format!("{table}: reasons unreadable: {e}")))?
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
            usage: usage_at(r, 9),
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
        let values: [SqlValue; 20] = [
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
            self.histogram.to_text().into(),
            json_text(&self.reasons)?.into(),
            self.updated_position.into(),
        ];
        Ok(CELL_COLUMNS.iter().zip(values).filter(|(c, _)| scope.has(c)).map(|(_, v)| v).collect())
    }
}

/// Add the runs that finished in this batch to their hour and day cells of one scope.
pub(super) async fn count_finished(
    tx: &mut ReadTx,
    scope: Scope,
    finished: &[Finished],
) -> Result<(), ProjectionError> {
    if finished.is_empty() {
        return Ok(());
    }
    let mut cells: BTreeMap<String, Cell> = BTreeMap::new();
    let mut keyed = Vec::with_capacity(finished.len() * 2);
    for f in finished {
        let at = f.run.finished_at.unwrap_or(0);
        for (granularity, width) in [("hour", HOUR_MICROS), ("day", DAY_MICROS)] {
            let bucket_start = at.div_euclid(width) * width;
            let key = scope.key(granularity, bucket_start, &f.run, &f.status);
            cells.entry(key.clone()).or_insert_with(|| Cell {
                granularity,
                bucket_start,
                user_id: scope.dimension("user_id", &f.run.user_id),
                agent_id: scope.dimension("agent_id", &f.run.agent_id),
                model: f.run.model.clone(),
                provider: scope.dimension("provider", &f.run.provider),
                status: scope.dimension("status", &f.status),
                ..Cell::default()
            });
            keyed.push((key, f));
        }
    }
    let keys: Vec<Vec<SqlValue>> = cells.keys().map(|k| vec![SqlValue::from(k.as_str())]).collect();
    let mut stored = HashMap::new();
    let select = format!("SELECT {} FROM {}", scope.select_list(), scope.table());
    for row in tx.fetch_keyed(&select, &["rollup_key"], &keys).await? {
        stored.insert(row.text_or_empty(0), Cell::from_row(scope, &row)?);
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
