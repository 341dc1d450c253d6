//! Folding `budget.*` events into `budgets` (as `Budget::evolve`; a removed budget's row goes).

use agentlog_domain::{budgets::BudgetEvent as E, envelope::RecordedEvent};
use async_trait::async_trait;

use super::rows::BudgetRow;
use crate::{
    db::ReadTx,
    decoding::decode_batch,
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
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &[BudgetRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("budget.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&RecordedEvent]) -> Result<(), ProjectionError> {
        let decoded = decode_batch::<E>(events)?;
        let mut budgets = Staged::<BudgetRow>::new();
        budgets.load(tx, "budget_id", decoded.iter().map(|(_, id, _)| id.clone())).await?;
        for (recorded, budget_id, event) in &decoded {
            match event {
                E::Set(e) => {
                    let created_at = budgets.get(budget_id).map_or(e.at, |b| b.created_at);
                    budgets.put(BudgetRow {
                        user_id: e.user_id.clone(),
                        spec: e.spec.clone(),
                        created_at,
                        updated_at: recorded.recorded_at,
                    });
                }
                E::Removed(_) => budgets.remove(budget_id),
            }
        }
        budgets.flush(tx).await
    }
}
