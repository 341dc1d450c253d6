//! Queries over the cron jobs read model, owner-scoped (`owner: None` = admin).

use super::rows::CronJobRow;
use crate::{
    db::ReadDb,
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    select::{Order, Select},
    staging::TableRow,
};

/// Filters of [`cron_jobs`]; all given filters must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CronJobFilter {
    /// Only this agent's jobs.
    pub agent_id: Option<String>,
    /// Only enabled (`true`) or disabled (`false`) jobs.
    pub enabled: Option<bool>,
}

/// `owner`'s cron job `job_id` (job ids are per owner).
pub async fn cron_job(db: &ReadDb, owner: &str, job_id: &str) -> Result<Option<CronJobRow>, ProjectionError> {
    let mut q = Select::new(CronJobRow::COLUMNS, CronJobRow::TABLE);
    q.eq("user_id", owner).eq("job_id", job_id);
    q.one(db).await?.as_ref().map(CronJobRow::from_row).transpose()
}

/// Cron jobs, oldest first, filtered.
pub async fn cron_jobs(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &CronJobFilter,
    page: &PageRequest,
) -> Result<Page<CronJobRow>, ProjectionError> {
    let mut q = Select::new(CronJobRow::COLUMNS, CronJobRow::TABLE);
    q.owner(owner).eq_opt("agent_id", filter.agent_id.as_deref()).eq_opt("enabled", filter.enabled);
    q.page(db, "created_at", "job_id", Order::Asc, page, CronJobRow::from_row, |j| {
        Cursor::new(j.created_at.timestamp_micros(), &j.job_id)
    })
    .await
}

/// Jobs that may be dispatched (upstream's list): enabled with executions left, least
/// recently fired first (never fired before any that fired).
pub async fn dispatchable_jobs(db: &ReadDb, owner: Option<&str>) -> Result<Vec<CronJobRow>, ProjectionError> {
    let mut q = Select::new(CronJobRow::COLUMNS, CronJobRow::TABLE);
    q.owner(owner).condition("enabled = 1").condition("(remaining_executions IS NULL OR remaining_executions > 0)");
    let rows = q.all(db, "(last_executed_at IS NOT NULL), last_executed_at, job_id").await?;
    rows.iter().map(CronJobRow::from_row).collect()
}
