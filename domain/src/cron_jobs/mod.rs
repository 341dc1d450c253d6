//! CronJob: an agent's schedule (stream `cron-<id>`, upstream `agent_cron_jobs`).
//!
//! - create sets `remainingExecutions = maxExecutions` (none = unlimited);
//! - an update that really changes the pattern or the time zone resets `lastExecutedAt`; giving
//!   `maxExecutions` resets `remainingExecutions`;
//! - a fire counts one execution, and a job whose remaining executions reach 0 disables itself;
//! - reset re-enables it and restores its counters;
//! - [`should_fire`] is the pure fire rule (pattern, enabled, remaining, conditions), and
//!   [`next_fire_at`] the forward search for the next minute it holds (`next_fire`);
//! - [`slots`] places a pattern's slots in a zone: the latest one a scheduler pass fires, and
//!   the first one after the last fire, from which a job is due ([`next_due_at`]).
//!
//! The fire event's id is derived from the job and the minute it fires for, so two scheduler
//! instances firing the same minute write one event.

pub mod conditions;
pub mod next_fire;
pub mod pattern;
pub mod slots;

#[cfg(test)]
mod next_fire_tests;
#[cfg(test)]
mod slots_tests;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};
use serde::{Deserialize, Serialize};

pub use conditions::{ActiveHours, ExecutionConditions, FireSkip};
use pattern::CronPattern;

use crate::aggregate::{Aggregate, DomainEvent};
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::no_upcasts;
use crate::scope::Scope;
use crate::streams::StreamKind;

/// Everything needed to create a cron job. An unknown field is refused, not ignored: a limit
/// misspelled must not look accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCronJob {
    /// Its id.
    pub job_id: String,
    /// The agent it runs.
    pub agent_id: String,
    /// The chat group it runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// 5-field cron pattern.
    pub pattern: String,
    /// IANA time zone (default UTC).
    pub timezone: String,
    /// What the agent is told at each fire.
    pub content: String,
    /// Enabled at creation.
    pub enabled: bool,
    /// Total executions allowed (none = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_executions: Option<u32>,
    /// Conditions.
    #[serde(default)]
    pub conditions: ExecutionConditions,
}

/// A change to a job; `None` leaves a field. `max_executions: Some(None)` makes it unlimited.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CronJobPatch {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Max executions (resets the remaining count).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::event_codec::double_option"
    )]
    pub max_executions: Option<Option<u32>>,
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<ExecutionConditions>,
}

/// A command to a cron job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronCommand {
    /// Create it.
    Create(CreateCronJob),
    /// Change it.
    Update(CronJobPatch),
    /// Turn it on.
    Enable,
    /// Turn it off.
    Disable,
    /// It fires at `at` (local time in the job's zone), having fired `fires_today` times today.
    Fire {
        /// The fire time, in the job's time zone.
        at: DateTime<FixedOffset>,
        /// Fires so far on that local day.
        fires_today: u32,
    },
    /// Re-enable and restore the counters; optionally change the max.
    ResetExecutions {
        /// A new max (`None` keeps the old one).
        max_executions: Option<Option<u32>>,
    },
    /// Delete it.
    Delete,
}

/// `cron.created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronCreated {
    /// What was asked for.
    #[serde(flatten)]
    pub spec: CreateCronJob,
    /// Owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `cron.updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronUpdated {
    /// What changed.
    pub changes: CronJobPatch,
    /// The pattern or time zone changed, so `lastExecutedAt` is reset.
    pub last_executed_reset: bool,
    /// The new remaining count when `maxExecutions` was given.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::event_codec::double_option"
    )]
    pub remaining_executions: Option<Option<u32>>,
}

/// `cron.enabled` / `cron.disabled` / `cron.auto_disabled` / `cron.deleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronToggled {
    /// When.
    pub at: DateTime<Utc>,
}

/// `cron.fired`: one execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronFired {
    /// The job.
    pub job_id: String,
    /// The fire time in the job's zone.
    pub local_time: DateTime<FixedOffset>,
    /// Executions so far, this one included.
    pub total_executions: u64,
    /// Executions left (none = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_executions: Option<u32>,
    /// When (UTC).
    pub at: DateTime<Utc>,
}

/// `cron.executions_reset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronExecutionsReset {
    /// The max now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_executions: Option<u32>,
    /// When.
    pub at: DateTime<Utc>,
}

fn cron_idempotency_key(event: &CronEvent) -> Option<String> {
    match event {
        CronEvent::Fired(e) => Some(format!("{}@{}", e.job_id, e.at.format("%Y-%m-%dT%H:%M"))),
        _ => None,
    }
}

crate::domain_events! {
    /// Everything a cron job records.
    pub enum CronEvent (upcast = no_upcasts, key = cron_idempotency_key) {
        /// Created.
        Created(CronCreated) = "cron.created" v 1,
        /// Changed.
        Updated(CronUpdated) = "cron.updated" v 1,
        /// Turned on.
        Enabled(CronToggled) = "cron.enabled" v 1,
        /// Turned off.
        Disabled(CronToggled) = "cron.disabled" v 1,
        /// Fired once.
        Fired(CronFired) = "cron.fired" v 1,
        /// Turned itself off: no executions left.
        AutoDisabled(CronToggled) = "cron.auto_disabled" v 1,
        /// Counters restored.
        ExecutionsReset(CronExecutionsReset) = "cron.executions_reset" v 1,
        /// Deleted.
        Deleted(CronToggled) = "cron.deleted" v 1,
    }
}

/// The state of a cron job, folded from `cron-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    /// Its id (empty while it does not exist).
    pub job_id: String,
    /// Owner.
    pub user_id: String,
    /// The agent it runs.
    pub agent_id: String,
    /// Name.
    pub name: Option<String>,
    /// Pattern.
    pub pattern: String,
    /// Time zone.
    pub timezone: String,
    /// Content.
    pub content: String,
    /// Enabled.
    pub enabled: bool,
    /// Max executions (none = unlimited).
    pub max_executions: Option<u32>,
    /// Remaining executions (none = unlimited).
    pub remaining_executions: Option<u32>,
    /// Conditions.
    pub conditions: ExecutionConditions,
    /// Last fire.
    pub last_executed_at: Option<DateTime<Utc>>,
    /// Fires so far.
    pub total_executions: u64,
    /// Deleted.
    pub deleted: bool,
}

impl CronJob {
    /// Does it exist (and was not deleted)?
    pub fn exists(&self) -> bool {
        !self.job_id.is_empty() && !self.deleted
    }
}

/// The instant `job` fires next after `now` in `zone` (its `timezone`, resolved by the
/// caller), having fired `fires_today` times on now's local day; `None` while it is disabled
/// or used up, or when nothing fires within [`next_fire::HORIZON_DAYS`].
pub fn next_fire_at<Z: chrono::TimeZone>(
    job: &CronJob,
    zone: &Z,
    now: DateTime<Utc>,
    fires_today: u32,
) -> Option<DateTime<Utc>> {
    if !job.enabled || job.deleted || job.remaining_executions == Some(0) {
        return None;
    }
    next_fire::next_slot(
        &job.pattern,
        &job.conditions,
        job.last_executed_at,
        zone,
        now,
        fires_today,
    )
}

/// The instant `job` falls due for the scheduler, a pure function of its state: its first slot
/// (in `zone`, its `timezone` resolved by the caller) after its last fire — after `created_at`
/// when it has not fired since it was created, reset, or its pattern or zone changed, as the
/// scheduler counts — that its conditions allow, `fires_on` counting its fires on a local day;
/// `None` while it is disabled or used up, or when its pattern has no such slot.
pub fn next_due_at<Z: chrono::TimeZone>(
    job: &CronJob,
    zone: &Z,
    created_at: DateTime<Utc>,
    fires_on: impl Fn(chrono::NaiveDate) -> u32,
) -> Option<DateTime<Utc>> {
    if !job.enabled || job.deleted || job.remaining_executions == Some(0) {
        return None;
    }
    let pattern = pattern::CronPattern::parse(&job.pattern).ok()?;
    let last = job.last_executed_at.unwrap_or(created_at);
    slots::next_due(&pattern, &job.conditions, fires_on, zone, last)
}

/// The most bytes of content a job may tell its agent: each fire copies it into the run it
/// starts, which must fit in one event with room to spare (the log takes 1 MiB an event).
pub const MAX_CONTENT_BYTES: usize = 256 * 1024;

fn check_common(
    pattern: Option<&str>,
    timezone: Option<&str>,
    conditions: Option<&ExecutionConditions>,
    content: Option<&str>,
) -> Result<(), DomainError> {
    if let Some(content) = content
        && content.len() > MAX_CONTENT_BYTES
    {
        return Err(DomainError::validation(
            "content",
            format!(
                "at most {MAX_CONTENT_BYTES} bytes (each fire copies it into the run it starts)"
            ),
        ));
    }
    if let Some(pattern) = pattern {
        pattern::check_pattern(pattern)
            .map_err(|e| DomainError::validation("pattern", e.to_string()))?;
    }
    if let Some(tz) = timezone {
        check_timezone(tz)?;
    }
    if let Some(c) = conditions {
        c.check()?;
    }
    Ok(())
}

/// A time zone name must look like `UTC` or an IANA `Area/Location` name; whether the zone
/// exists is checked by the api, which has the time-zone database.
pub fn check_timezone(tz: &str) -> Result<(), DomainError> {
    let shaped = !tz.is_empty()
        && tz.len() <= 64
        && tz.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '+'))
        && !tz.starts_with('/')
        && !tz.ends_with('/');
    if shaped {
        Ok(())
    } else {
        Err(DomainError::validation("timezone", format!("'{tz}' is not a time zone name")))
    }
}

/// May `job` fire at `at` (local time in the job's time zone), having fired `fires_today`
/// times so far on that local day?
pub fn should_fire(
    job: &CronJob,
    at: DateTime<FixedOffset>,
    fires_today: u32,
) -> Result<(), FireSkip> {
    if !job.enabled || job.deleted {
        return Err(FireSkip::Disabled);
    }
    if job.remaining_executions == Some(0) {
        return Err(FireSkip::NoExecutionsLeft);
    }
    let (minute, hour) = (at.minute() as u8, at.hour() as u8);
    let weekday = at.weekday().num_days_from_sunday() as u8;
    let matches = CronPattern::parse(&job.pattern)
        .map(|p| p.matches(minute, hour, at.day() as u8, at.month() as u8, weekday))
        .unwrap_or(false);
    if !matches {
        return Err(FireSkip::PatternMismatch);
    }
    let c = &job.conditions;
    if c.active_days.as_ref().is_some_and(|days| !days.contains(&weekday)) {
        return Err(FireSkip::InactiveDay);
    }
    if c.active_hours.is_some_and(|h| !h.contains(hour)) {
        return Err(FireSkip::InactiveHour);
    }
    if c.max_executions_per_day.is_some_and(|max| fires_today >= max) {
        return Err(FireSkip::DailyLimitReached);
    }
    Ok(())
}

impl Aggregate for CronJob {
    type Command = CronCommand;
    type Event = CronEvent;
    const KIND: StreamKind = StreamKind::Cron;

    fn decide(&self, command: &CronCommand, ctx: &Context) -> Result<Vec<CronEvent>, DomainError> {
        use CronCommand as C;
        use CronEvent as E;
        let at = ctx.now;
        match command {
            C::Create(create) => {
                if !self.job_id.is_empty() {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "cron job",
                        id: self.job_id.clone(),
                    });
                }
                if create.job_id.trim().is_empty() || create.agent_id.trim().is_empty() {
                    return Err(DomainError::validation("jobId", "a job needs an id and an agent"));
                }
                if create.max_executions == Some(0) {
                    return Err(DomainError::validation(
                        "maxExecutions",
                        "must be at least 1 (leave it out for unlimited)",
                    ));
                }
                check_common(
                    Some(&create.pattern),
                    Some(&create.timezone),
                    Some(&create.conditions),
                    Some(&create.content),
                )?;
                Ok(vec![E::Created(CronCreated {
                    spec: create.clone(),
                    user_id: ctx.user_id.clone(),
                    at,
                })])
            }
            _ if !self.exists() => Err(DomainError::not_found("cron job", self.job_id.clone())),
            C::Update(patch) => {
                check_common(
                    patch.pattern.as_deref(),
                    patch.timezone.as_deref(),
                    patch.conditions.as_ref(),
                    patch.content.as_deref(),
                )?;
                if patch.max_executions == Some(Some(0)) {
                    return Err(DomainError::validation(
                        "maxExecutions",
                        "must be at least 1 (leave it out for unlimited)",
                    ));
                }
                if *patch == CronJobPatch::default() {
                    return Ok(Vec::new());
                }
                let pattern_changed = patch.pattern.as_ref().is_some_and(|p| *p != self.pattern);
                let tz_changed = patch.timezone.as_ref().is_some_and(|t| *t != self.timezone);
                Ok(vec![E::Updated(CronUpdated {
                    changes: patch.clone(),
                    last_executed_reset: pattern_changed || tz_changed,
                    remaining_executions: patch.max_executions,
                })])
            }
            C::Enable if self.enabled => Ok(Vec::new()),
            C::Enable => {
                if self.remaining_executions == Some(0) {
                    return Err(DomainError::transition(
                        "cron job",
                        "out of executions",
                        "enable (reset it instead)",
                    ));
                }
                Ok(vec![E::Enabled(CronToggled { at })])
            }
            C::Disable if !self.enabled => Ok(Vec::new()),
            C::Disable => Ok(vec![E::Disabled(CronToggled { at })]),
            C::Fire { at: local, fires_today } => {
                should_fire(self, *local, *fires_today).map_err(|skip| {
                    DomainError::ConditionNotMet {
                        job_id: self.job_id.clone(),
                        reason: skip.to_string(),
                    }
                })?;
                let remaining = self.remaining_executions.map(|r| r.saturating_sub(1));
                let mut events = vec![E::Fired(CronFired {
                    job_id: self.job_id.clone(),
                    local_time: *local,
                    total_executions: self.total_executions + 1,
                    remaining_executions: remaining,
                    at: local.with_timezone(&Utc),
                })];
                if remaining == Some(0) {
                    events.push(E::AutoDisabled(CronToggled { at }));
                }
                Ok(events)
            }
            C::ResetExecutions { max_executions } => {
                if *max_executions == Some(Some(0)) {
                    return Err(DomainError::validation(
                        "maxExecutions",
                        "must be at least 1 (leave it out for unlimited)",
                    ));
                }
                let max = max_executions.unwrap_or(self.max_executions);
                Ok(vec![E::ExecutionsReset(CronExecutionsReset { max_executions: max, at })])
            }
            C::Delete => Ok(vec![E::Deleted(CronToggled { at })]),
        }
    }

    fn evolve(mut self, event: &CronEvent) -> Self {
        use CronEvent as E;
        match event {
            E::Created(e) => {
                let s = &e.spec;
                self.job_id = s.job_id.clone();
                self.user_id = e.user_id.clone();
                self.agent_id = s.agent_id.clone();
                self.name = s.name.clone();
                self.pattern = s.pattern.clone();
                self.timezone = s.timezone.clone();
                self.content = s.content.clone();
                self.enabled = s.enabled;
                self.max_executions = s.max_executions;
                self.remaining_executions = s.max_executions;
                self.conditions = s.conditions.clone();
            }
            E::Updated(e) => {
                let c = &e.changes;
                if let Some(name) = &c.name {
                    self.name = Some(name.clone());
                }
                if let Some(pattern) = &c.pattern {
                    self.pattern = pattern.clone();
                }
                if let Some(tz) = &c.timezone {
                    self.timezone = tz.clone();
                }
                if let Some(content) = &c.content {
                    self.content = content.clone();
                }
                if let Some(conditions) = &c.conditions {
                    self.conditions = conditions.clone();
                }
                if let Some(max) = c.max_executions {
                    self.max_executions = max;
                }
                if let Some(remaining) = e.remaining_executions {
                    self.remaining_executions = remaining;
                }
                if e.last_executed_reset {
                    self.last_executed_at = None;
                }
            }
            E::Enabled(_) => self.enabled = true,
            E::Disabled(_) | E::AutoDisabled(_) => self.enabled = false,
            E::Fired(e) => {
                self.total_executions = e.total_executions;
                self.remaining_executions = e.remaining_executions;
                self.last_executed_at = Some(e.at);
                // The last execution disables the job at once; `cron.auto_disabled` follows
                // as the explicit fact for read models and notifications.
                if e.remaining_executions == Some(0) {
                    self.enabled = false;
                }
            }
            E::ExecutionsReset(e) => {
                self.enabled = true;
                self.max_executions = e.max_executions;
                self.remaining_executions = e.max_executions;
                self.total_executions = 0;
                self.last_executed_at = None;
            }
            E::Deleted(_) => {
                self.deleted = true;
                self.enabled = false;
            }
        }
        self
    }

    fn scope(&self) -> Scope {
        Scope {
            agent_id: (!self.agent_id.is_empty()).then(|| self.agent_id.clone()),
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if let (Some(max), Some(left)) = (self.max_executions, self.remaining_executions)
            && left > max
        {
            return Err(format!("{left} executions left of {max}"));
        }
        if self.max_executions.is_none() && self.remaining_executions.is_some() {
            return Err("unlimited job with a remaining count".into());
        }
        if self.enabled && self.remaining_executions == Some(0) {
            return Err("enabled with no executions left".into());
        }
        if self.deleted && self.enabled {
            return Err("a deleted job is enabled".into());
        }
        Ok(())
    }
}

/// The id `cron.fired` gets for `owner`'s job `job_id` firing at `at`: the handler can check
/// it to tell a minute that already fired.
pub fn fire_event_id(owner: &str, job_id: &str, at: DateTime<Utc>) -> uuid::Uuid {
    let probe = CronEvent::Fired(CronFired {
        job_id: job_id.to_string(),
        local_time: at.fixed_offset(),
        total_executions: 0,
        remaining_executions: None,
        at,
    });
    let key = probe.idempotency_key().unwrap_or_default();
    crate::ids::derived_id(probe.event_type(), &crate::stamp::owned_key(owner, &key), 0)
}
