//! Folding `budget.*` events into `budgets` (as `Budget::evolve`; a removed budget's row goes).

use agentlog_domain::budgets::BudgetEvent as E;
use async_trait::async_trait;

use super::rows::BudgetRow;
use crate::{
    db::ReadTx,
    decoding::{DecodedEvent, decode_owned_batch},
    error::ProjectionError,
    projection::Projection,
    staging::{Staged, TableRow},
};

/// Projects budgets.
#[derive(Debug, Default, Clone, Copy)]
pub struct BudgetsProjection;

#[async_trait]
impl Projection for BudgetsProjection {
    fn name(&self) -> &'static str {
        "budgets"
    }
    fn version(&self) -> i32 {
        2
    }
    fn tables(&self) -> &'static [&'static str] {
        &[BudgetRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("budget.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let decoded = decode_owned_batch::<E>(events)?;
        let mut budgets = Staged::<BudgetRow>::new();
        budgets.load_keys(tx, decoded.iter().map(|(_, key, _)| key.clone())).await?;
        for (recorded, key, event) in &decoded {
            match event {
                E::Set(e) => {
                    let created_at = budgets.get(key).map_or(e.at, |b| b.created_at);
                    budgets.put(BudgetRow {
                        // The stream's owner: the key the row is found by.
                        user_id: key.0.clone(),
                        spec: e.spec.clone(),
                        created_at,
                        updated_at: recorded.recorded_at,
                    });
                }
                E::Removed(_) => budgets.remove(key),
            }
        }
        budgets.flush(tx).await
    }
}
