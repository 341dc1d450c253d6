//! Folding `cron.*` events into `cron_jobs` (as `CronJob::evolve`; a deleted job's row goes),
//! then each touched job's due instant from its new state.

use std::collections::HashSet;

use agentlog_domain::cron_jobs::CronEvent as E;
use async_trait::async_trait;

use super::{due::next_due_at, rows::CronJobRow};
use crate::{
    db::ReadTx,
    decoding::{DecodedEvent, decode_owned_batch},
    error::ProjectionError,
    projection::Projection,
    staging::{Staged, TableRow},
};

/// Projects cron jobs.
#[derive(Debug, Default, Clone, Copy)]
pub struct CronJobsProjection;

#[async_trait]
impl Projection for CronJobsProjection {
    fn name(&self) -> &'static str {
        "cron_jobs"
    }
    fn version(&self) -> i32 {
        // 3: `next_due_at`.
        3
    }
    fn tables(&self) -> &'static [&'static str] {
        &[CronJobRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("cron.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let decoded = decode_owned_batch::<E>(events)?;
        let mut jobs = Staged::<CronJobRow>::new();
        jobs.load_keys(tx, decoded.iter().map(|(_, key, _)| key.clone())).await?;
        for (recorded, key, event) in &decoded {
            let job_id = &key.1;
            let at = recorded.recorded_at;
            match event {
                E::Created(e) => {
                    let s = &e.spec;
                    jobs.put(CronJobRow {
                        job_id: job_id.clone(),
                        user_id: key.0.clone(),
                        agent_id: s.agent_id.clone(),
                        group_id: s.group_id.clone(),
                        name: s.name.clone(),
                        pattern: s.pattern.clone(),
                        timezone: s.timezone.clone(),
                        content: s.content.clone(),
                        enabled: s.enabled,
                        max_executions: s.max_executions.map(i64::from),
                        remaining_executions: s.max_executions.map(i64::from),
                        conditions: s.conditions.clone(),
                        last_executed_at: None,
                        total_executions: 0,
                        last_fire_local_day: None,
                        fires_on_last_day: 0,
                        next_due_at: None,
                        created_at: e.at,
                        updated_at: at,
                    });
                    continue;
                }
                E::Deleted(_) => {
                    jobs.remove(key);
                    continue;
                }
                _ => {}
            }
            let Some(job) = jobs.get_mut(key) else { continue };
            match event {
                E::Created(_) | E::Deleted(_) => {}
                E::Updated(e) => {
                    let c = &e.changes;
                    if let Some(name) = &c.name {
                        job.name = Some(name.clone());
                    }
                    if let Some(pattern) = &c.pattern {
                        job.pattern = pattern.clone();
                    }
                    if let Some(tz) = &c.timezone {
                        job.timezone = tz.clone();
                    }
                    if let Some(content) = &c.content {
                        job.content = content.clone();
                    }
                    if let Some(conditions) = &c.conditions {
                        job.conditions = conditions.clone();
                    }
                    if let Some(max) = c.max_executions {
                        job.max_executions = max.map(i64::from);
                    }
                    if let Some(remaining) = e.remaining_executions {
                        job.remaining_executions = remaining.map(i64::from);
                    }
                    if e.last_executed_reset {
                        job.last_executed_at = None;
                    }
                }
                E::Enabled(_) => job.enabled = true,
                E::Disabled(_) | E::AutoDisabled(_) => job.enabled = false,
                E::Fired(e) => {
                    job.total_executions = i64::try_from(e.total_executions).unwrap_or(i64::MAX);
                    job.remaining_executions = e.remaining_executions.map(i64::from);
                    job.last_executed_at = Some(e.at);
                    if e.remaining_executions == Some(0) {
                        job.enabled = false;
                    }
                    let day = e.local_time.date_naive().to_string();
                    if job.last_fire_local_day.as_deref() == Some(day.as_str()) {
                        job.fires_on_last_day += 1;
                    } else {
                        job.last_fire_local_day = Some(day);
                        job.fires_on_last_day = 1;
                    }
                }
                E::ExecutionsReset(e) => {
                    job.enabled = true;
                    job.max_executions = e.max_executions.map(i64::from);
                    job.remaining_executions = e.max_executions.map(i64::from);
                    job.total_executions = 0;
                    job.last_executed_at = None;
                }
            }
            job.updated_at = at;
        }
        // Once per job and batch: a rebuild folds many fires of a job in one batch.
        let touched: HashSet<&(String, String)> = decoded.iter().map(|(_, key, _)| key).collect();
        for key in touched {
            if let Some(job) = jobs.get_mut(key) {
                job.next_due_at = next_due_at(job);
            }
        }
        jobs.flush(tx).await
    }
}
