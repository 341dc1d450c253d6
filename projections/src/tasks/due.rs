//! When the scheduler must look at a task, kept on its row and indexed so that a pass reads the
//! tasks due and not every automated task: `next_schedule_at` (a scheduled task's first slot
//! after its last schedule run, or after the start of its schedule), `heartbeat_tick_due_at`
//! (its current heartbeat tick) and `heartbeat_deadline_at` (when a running task's heartbeat goes
//! stale). Each is a pure function of the row, so of the log: no clock. Each is none while the
//! scheduler's own rules would skip the task whatever the time — paused or finished, another
//! mode, a run in flight — so such a task is not read at all until an event changes that.

use agentlog_domain::{
    cron_jobs::{ExecutionConditions, pattern::CronPattern, slots},
    tasks::{AutomationMode, TaskStatus, heartbeat_deadline},
};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::rows::TaskRow;
use crate::{db::ReadDb, error::ProjectionError};

/// Derive `task`'s due instants from the rest of its row.
pub(crate) fn refresh(task: &mut TaskRow) {
    task.next_schedule_at = next_schedule_at(task);
    task.heartbeat_tick_due_at = heartbeat_tick_due_at(task);
    task.heartbeat_deadline_at = heartbeat_deadline_at(task);
}

/// The instant a scheduled task's schedule has a slot to run (`scheduler::schedule_tick`: its
/// first slot after the later of its last schedule run and the start of its schedule).
fn next_schedule_at(task: &TaskRow) -> Option<DateTime<Utc>> {
    let may_run = task.automation_mode == Some(AutomationMode::Schedule)
        && matches!(task.status, TaskStatus::Scheduled | TaskStatus::Running)
        && task.running_topics == 0;
    if !may_run {
        return None;
    }
    let (pattern, started) = (task.schedule_pattern.as_deref()?, task.schedule_started_at?);
    let last = task.last_schedule_run_at.map_or(started, |run| run.max(started));
    let Ok(zone) = task.schedule_timezone.parse::<Tz>() else {
        // A zone this build does not know (the API refuses such names): due at once, so each
        // pass reports it skipped with its reason, as before. Only such rows stay due for good.
        return Some(last);
    };
    let pattern = CronPattern::parse(pattern).ok()?;
    slots::next_due(&pattern, &ExecutionConditions::default(), |_| 0, &zone, last)
}

/// The current heartbeat tick's due instant, while the task may tick (`tick::heartbeat_tick`:
/// heartbeat mode with an interval, neither finished nor paused, no run in flight).
fn heartbeat_tick_due_at(task: &TaskRow) -> Option<DateTime<Utc>> {
    let may_tick = task.automation_mode == Some(AutomationMode::Heartbeat)
        && !task.status.is_terminal()
        && task.status != TaskStatus::Paused
        && task.heartbeat_interval_secs.is_some_and(|secs| secs > 0)
        && task.running_topics == 0
        && task.heartbeat_tick_token.is_some();
    may_tick.then_some(task.next_heartbeat_at).flatten()
}

/// When a running task's heartbeat goes stale (`Task::heartbeat_deadline`).
fn heartbeat_deadline_at(task: &TaskRow) -> Option<DateTime<Utc>> {
    if task.status != TaskStatus::Running {
        return None;
    }
    let timeout = u64::try_from(task.heartbeat_timeout_secs?).ok()?;
    heartbeat_deadline(task.last_heartbeat_at?, timeout)
}

/// Scheduled tasks whose schedule has a slot due at `now`, as `(owner, id)`: the scheduler's
/// schedule candidates (each one's own rules still decide, at its latest slot).
pub async fn schedules_due(db: &ReadDb, now: DateTime<Utc>) -> Result<Vec<(String, String)>, ProjectionError> {
    due_by(db, "next_schedule_at", now).await
}

/// Heartbeat tasks whose tick is due at `now`, as `(owner, id)`: the scheduler's tick
/// candidates.
pub async fn heartbeat_ticks_due(db: &ReadDb, now: DateTime<Utc>) -> Result<Vec<(String, String)>, ProjectionError> {
    due_by(db, "heartbeat_tick_due_at", now).await
}

/// Running tasks whose heartbeat is stale at `now`, as `(owner, id)`: the scheduler's timeout
/// candidates (`Task::heartbeat_stale`, in whole seconds).
pub async fn heartbeat_timeouts_due(db: &ReadDb, now: DateTime<Utc>) -> Result<Vec<(String, String)>, ProjectionError> {
    due_by(db, "heartbeat_deadline_at", now).await
}

/// The tasks whose due `column` is at or before `now` (an index range), by id.
async fn due_by(db: &ReadDb, column: &str, now: DateTime<Utc>) -> Result<Vec<(String, String)>, ProjectionError> {
    let sql = format!("SELECT user_id, task_id FROM tasks WHERE {column} <= $1 ORDER BY task_id, user_id");
    let rows = db.fetch(&sql, &[now.timestamp_micros().into()]).await?;
    Ok(rows.iter().filter_map(|r| Some((r.str(0)?.to_string(), r.str(1)?.to_string()))).collect())
}
