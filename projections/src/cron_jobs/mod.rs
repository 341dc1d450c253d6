//! The cron jobs read model: `cron_jobs` (pattern, time zone, enabled, max and remaining
//! executions, conditions, last fire, total fires, fires on the last local day, and the instant
//! the job falls due for the scheduler), folded from `cron.*` events, with the list, dispatch
//! and due queries.
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::cron_jobs;
//! let now = chrono::Utc::now();
//! let due = cron_jobs::jobs_due(&db, None, now).await?;
//! # Ok(()) }
//! ```

mod due;
mod projection;
mod query;
mod rows;

pub use due::jobs_due;
pub use projection::CronJobsProjection;
pub use query::{CronJobFilter, cron_job, cron_jobs, dispatchable_jobs};
pub use rows::CronJobRow;
