//! The operations read model: one row per operation (agent run) in `operations` — status,
//! phase, kind, agent and config version, links (topic, thread, task, group, parent), step
//! count, usage (NULL until measured), the pending HITL card, lease, timings, error,
//! interruption, cancellation, plan and todos — and its history in side tables:
//! `operation_steps`, `operation_cards` (every card asked and how it closed),
//! `operation_artifacts`, `operation_scores`, `operation_async_results` (results of async tools
//! and children delivered to it). Children are found by `parent_operation_id`.
//!
//! Fed by every `operation.*` event. A batch loads the touched operations' folds
//! (`operations.state`) in one query, applies the events with the domain's own
//! [`Operation::evolve`](agentlog_domain::operations::Operation), and writes every table back with
//! multi-row upserts.
//!
//! ```no_run
//! # async fn demo(db: &agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_domain::operations::OperationStatus;
//! use agentlog_projections::{operations::{self, OperationFilter}, page::PageRequest};
//! let filter = OperationFilter { status: Some(OperationStatus::Running), ..Default::default() };
//! let running = operations::list(db, Some("user-1"), &filter, &PageRequest::first(20)).await?;
//! for op in &running.items { println!("{} {}", op.id, op.step_count); }
//! # Ok(()) }
//! ```

mod fold;
mod query;
mod rows;

use agentlog_domain::operations::OperationEvent;
use async_trait::async_trait;

pub use fold::Cancellation;
pub use query::{
    LeaseRow, OperationArtifactRow, OperationAsyncResultRow, OperationCardRow, OperationFilter, OperationRow,
    OperationScoreRow, OperationStepRow, artifacts, async_results, cards, children, claimable, due_cards,
    expired_leases, get, list, pending_cards, scores, steps,
};

use self::{
    fold::OperationFold,
    rows::{
        ARTIFACT_COLUMNS, ASYNC_RESULT_COLUMNS, CARD_COLUMNS, OPERATION_COLUMNS, SCORE_COLUMNS, STEP_COLUMNS, SideRows,
    },
};
use crate::{
    db::ReadTx,
    decoding::{DecodedEvent, OwnedKey, decode},
    error::ProjectionError,
    fold::{RowSet, group_by_owned_instance, load_owned_states},
    projection::Projection,
};

/// Projects `operation.*` events into the operations tables.
#[derive(Debug, Default, Clone, Copy)]
pub struct OperationsProjection;

#[async_trait]
impl Projection for OperationsProjection {
    fn name(&self) -> &'static str {
        "operations"
    }
    fn version(&self) -> i32 {
        // 2: keyed by (user_id, operation_id): operation ids are per owner. 3: the budgets'
        // spend rollups.
        3
    }
    fn tables(&self) -> &'static [&'static str] {
        &[
            "operations",
            "operation_steps",
            "operation_cards",
            "operation_artifacts",
            "operation_scores",
            "operation_async_results",
            crate::budgets::spend::TABLE,
        ]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("operation.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let groups = group_by_owned_instance(events)?;
        let keys: Vec<OwnedKey> = groups.iter().map(|(key, _)| key.clone()).collect();
        let mut folds: std::collections::HashMap<OwnedKey, OperationFold> =
            load_owned_states(tx, "operations", "id", &keys).await?;
        let mut operations = RowSet::default();
        let mut side = SideRows::default();
        for (key, events) in &groups {
            let mut fold = folds.remove(key).unwrap_or_default();
            for recorded in events {
                let event: &OperationEvent = decode(recorded)?;
                fold.apply(key, recorded, event, &mut side)?;
            }
            if !fold.op.exists() {
                // The domain never records anything before `operation.created`; if a log holds
                // such events anyway there is no row to show them in.
                tracing::warn!(operation = %key.1, owner = %key.0, "events for an operation that was never created; skipped");
                continue;
            }
            // The row's owner is the stream's: the key it is loaded by next time.
            fold.op.user_id.clone_from(&key.0);
            operations.put(key.clone(), fold::operation_row(&key.1, &fold)?);
        }
        operations.upsert(tx, "operations", &OPERATION_COLUMNS, &["user_id", "id"]).await?;
        side.steps.upsert(tx, "operation_steps", &STEP_COLUMNS, &["user_id", "operation_id", "step_index"]).await?;
        side.cards.upsert(tx, "operation_cards", &CARD_COLUMNS, &["user_id", "operation_id", "asked_position"]).await?;
        side.artifacts
            .upsert(tx, "operation_artifacts", &ARTIFACT_COLUMNS, &["user_id", "operation_id", "artifact_id"])
            .await?;
        side.scores.upsert(tx, "operation_scores", &SCORE_COLUMNS, &["user_id", "operation_id", "seq"]).await?;
        side.async_results
            .upsert(tx, "operation_async_results", &ASYNC_RESULT_COLUMNS, &["user_id", "operation_id", "result_key"])
            .await?;
        crate::budgets::spend::count_steps(tx, &side.spend).await
    }
}
