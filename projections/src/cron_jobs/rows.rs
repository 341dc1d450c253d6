//! The cron job row: what the API serves and how it maps to `cron_jobs`.

use agentlog_domain::cron_jobs::{CronJob, ExecutionConditions};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::{
    columns::{Columns, json_text, micros, opt_micros},
    db::{Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A cron job as it stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJobRow {
    /// Its id.
    pub job_id: String,
    /// Owner.
    pub user_id: String,
    /// The agent it runs.
    pub agent_id: String,
    /// The chat group it runs in.
    pub group_id: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// 5-field cron pattern.
    pub pattern: String,
    /// IANA time zone of the pattern.
    pub timezone: String,
    /// What the agent is told at each fire.
    pub content: String,
    /// Enabled.
    pub enabled: bool,
    /// Total executions allowed (none = unlimited).
    pub max_executions: Option<i64>,
    /// Executions left (none = unlimited).
    pub remaining_executions: Option<i64>,
    /// Active days, active hours, max executions per day.
    pub conditions: ExecutionConditions,
    /// Last fire.
    pub last_executed_at: Option<DateTime<Utc>>,
    /// Fires so far.
    pub total_executions: i64,
    /// The local day (`YYYY-MM-DD`, in the job's zone) of the last fire.
    pub last_fire_local_day: Option<String>,
    /// Fires on that local day (for `maxExecutionsPerDay`).
    pub fires_on_last_day: i64,
    /// When the scheduler has a slot of it to fire (none: disabled, used up, or no slot ever);
    /// derived from the other fields.
    pub next_due_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
}

impl CronJobRow {
    /// Fires so far on the local day `day` (`YYYY-MM-DD`).
    pub fn fires_on(&self, day: &str) -> u32 {
        if self.last_fire_local_day.as_deref() == Some(day) {
            u32::try_from(self.fires_on_last_day).unwrap_or(u32::MAX)
        } else {
            0
        }
    }

    /// The domain's view of the job (for `cron::should_fire`).
    pub fn to_domain(&self) -> CronJob {
        let count = |v: Option<i64>| v.map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX));
        CronJob {
            job_id: self.job_id.clone(),
            user_id: self.user_id.clone(),
            agent_id: self.agent_id.clone(),
            name: self.name.clone(),
            pattern: self.pattern.clone(),
            timezone: self.timezone.clone(),
            content: self.content.clone(),
            enabled: self.enabled,
            max_executions: count(self.max_executions),
            remaining_executions: count(self.remaining_executions),
            conditions: self.conditions.clone(),
            last_executed_at: self.last_executed_at,
            total_executions: u64::try_from(self.total_executions).unwrap_or(0),
            deleted: false,
        }
    }
}

impl TableRow for CronJobRow {
    /// `(user_id, job_id)`: job ids are per owner.
    type Key = (String, String);
    const TABLE: &'static str = "cron_jobs";
    const COLUMNS: &'static [&'static str] = &[
        "job_id",
        "user_id",
        "agent_id",
        "group_id",
        "name",
        "pattern",
        "timezone",
        "content",
        "enabled",
        "max_executions",
        "remaining_executions",
        "conditions",
        "last_executed_at",
        "total_executions",
        "last_fire_local_day",
        "fires_on_last_day",
        "next_due_at",
        "created_at",
        "updated_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "job_id"];

    fn key(&self) -> (String, String) {
        (self.user_id.clone(), self.job_id.clone())
    }
    fn key_values(key: &(String, String)) -> Vec<SqlValue> {
        vec![key.0.as_str().into(), key.1.as_str().into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.job_id.as_str().into(),
            self.user_id.as_str().into(),
            self.agent_id.as_str().into(),
            self.group_id.as_deref().into(),
            self.name.as_deref().into(),
            self.pattern.as_str().into(),
            self.timezone.as_str().into(),
            self.content.as_str().into(),
            self.enabled.into(),
            self.max_executions.into(),
            self.remaining_executions.into(),
            json_text(&self.conditions),
            opt_micros(self.last_executed_at),
            self.total_executions.into(),
            self.last_fire_local_day.as_deref().into(),
            self.fires_on_last_day.into(),
            opt_micros(self.next_due_at),
            micros(self.created_at),
            micros(self.updated_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            job_id: c.text()?,
            user_id: c.text()?,
            agent_id: c.text()?,
            group_id: c.opt_text(),
            name: c.opt_text(),
            pattern: c.text()?,
            timezone: c.text()?,
            content: c.text()?,
            enabled: c.flag()?,
            max_executions: c.opt_int(),
            remaining_executions: c.opt_int(),
            conditions: c.json()?,
            last_executed_at: c.opt_time()?,
            total_executions: c.int()?,
            last_fire_local_day: c.opt_text(),
            fires_on_last_day: c.int()?,
            next_due_at: c.opt_time()?,
            created_at: c.time()?,
            updated_at: c.time()?,
        })
    }
}
