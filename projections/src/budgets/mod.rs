//! The budgets read model: `budgets` (each budget's terms, folded from `budget.*`), and what a
//! budget's scope spent in a period: the usage its runs' steps reported, summed per quarter hour
//! in `budget_spend_rollups` as the operations projection records the steps (same transaction,
//! rebuilt with them from the log), so a standing reads a period's buckets, not its steps.
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::budgets::{self, RunScope};
//! let run = RunScope { user_id: "u1".into(), agent_id: "a1".into(), task_id: None, group_id: None };
//! for budget in budgets::budgets_of_run(&db, &run).await? {
//!     let spent = budgets::spent(&db, &budget, None).await?;
//! }
//! # Ok(()) }
//! ```

mod period;
mod projection;
mod query;
mod rows;
pub(crate) mod spend;

pub use period::{PeriodWindow, period_window};
pub use projection::BudgetsProjection;
pub use query::{RunScope, budget, budgets, budgets_of_run, spend_over_time};
pub use rows::BudgetRow;
pub use spend::spent;
