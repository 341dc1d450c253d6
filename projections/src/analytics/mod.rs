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
//! **Three tables of cells** (module `cells`), counted at the same moment from the same runs, each
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
mod runs;

use agentlog_domain::operations::OperationEvent;
use async_trait::async_trait;

pub use histogram::DurationHistogram;
pub use query::{
    AnalyticsBucket, AnalyticsDimension, AnalyticsQuery, AnalyticsReport, AnalyticsSummary, DurationSummary,
    Granularity, MAX_CELLS, query,
};

use cells::{Scope, count_finished};
use runs::{RUN_COLUMNS, apply, is_fed_by, load_runs};

use crate::{
    db::ReadTx,
    decoding::{DecodedEvent, OwnedKey, decode},
    error::ProjectionError,
    fold::{RowSet, group_by_owned_instance},
    projection::Projection,
};

/// Projects operation lifecycles into `analytics_runs` and the three rollup tables.
#[derive(Debug, Default, Clone, Copy)]
pub struct AnalyticsProjection;

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
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let groups = group_by_owned_instance(events)?;
        let keys: Vec<OwnedKey> = groups.iter().map(|(key, _)| key.clone()).collect();
        let mut runs = load_runs(tx, &keys).await?;
        let mut run_rows = RowSet::default();
        let mut finished = Vec::new();
        for (key, events) in &groups {
            let mut run = runs.remove(key).unwrap_or_default();
            for recorded in events {
                let event: &OperationEvent = decode(recorded)?;
                if let Some(f) = apply(&mut run, event, recorded.position)? {
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
