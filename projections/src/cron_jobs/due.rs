//! When the scheduler must look at a cron job: `next_due_at`, the instant from which a pass has
//! a slot of the job to fire (`cron_jobs::next_due_at`: its first slot after its last
//! fire that its conditions allow), kept on the row and indexed, so that a pass reads the jobs
//! due and not every job. A pure function of the row, so of the log: no clock.

use agentlog_domain::cron_jobs;
use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

use super::rows::CronJobRow;
use crate::{db::ReadDb, error::ProjectionError, select::Select, staging::TableRow};

/// The instant `job` falls due; `None` while it is disabled or used up, or when its pattern
/// does not parse or has no slot its conditions allow.
pub(crate) fn next_due_at(job: &CronJobRow) -> Option<DateTime<Utc>> {
    if !job.enabled || job.remaining_executions.is_some_and(|left| left <= 0) {
        return None;
    }
    let Ok(zone) = job.timezone.parse::<Tz>() else {
        // A zone this build does not know (the API refuses such names; an imported log, or a
        // zone a newer database dropped, may hold one): due from its last fire on, so each pass
        // reports it skipped with its reason, as before. Only such rows stay due for good.
        return Some(job.last_executed_at.unwrap_or(job.created_at));
    };
    let fires_on = |day: NaiveDate| job.fires_on(&day.to_string());
    cron_jobs::next_due_at(&job.to_domain(), &zone, job.created_at, fires_on)
}

/// Jobs due at `now` (`next_due_at <= now`, an index range: a pass reads only these), least
/// recently fired first (never fired before any that fired), as `dispatchable_jobs` orders.
/// Each job's own rules still decide at its latest slot.
pub async fn jobs_due(
    db: &ReadDb,
    owner: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<CronJobRow>, ProjectionError> {
    let mut q = Select::new(CronJobRow::COLUMNS, CronJobRow::TABLE);
    let now = q.bind(now.timestamp_micros());
    q.owner(owner).condition(format!("next_due_at <= {now}"));
    let rows = q.all(db, "(last_executed_at IS NOT NULL), last_executed_at, job_id").await?;
    rows.iter().map(CronJobRow::from_row).collect()
}
