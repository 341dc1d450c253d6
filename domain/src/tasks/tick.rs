//! The scheduler's tick rules (upstream `heartbeatTick` / `scheduleTick`). A tick may arrive
//! after the user paused, cancelled or changed the task, so every tick re-reads the task and
//! checks, in order, why it should not run.
//!
//! One deliberate difference: upstream's heartbeat tick has no `paused` check (a pending tick
//! runs a task the user paused); here both ticks skip paused tasks.
//!
//! **No idle burn.** A heartbeat task with `requireInput` runs a tick only when there is new
//! input since its last run started ([`new_input`]); otherwise the tick is skipped
//! (`skip_idle`: `task.tick_skipped` and the next tick, nothing run).

use chrono::{DateTime, Utc};

use super::event::{HeartbeatScheduled, TaskEvent as E, TickSkipped};
use super::model::{AutomationMode, TaskStatus as S};
use super::state::Task;
use crate::context::Context;
use crate::deadline::after;
use crate::error::DomainError;

/// Why a tick does not run the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickSkip {
    /// The task is gone.
    NotFound,
    /// The tick's token is not the task's current one (a newer tick replaced it).
    StaleTick,
    /// The task is no longer in this automation mode.
    ModeChanged,
    /// Completed, failed or canceled.
    Terminal,
    /// Paused by a human.
    Paused,
    /// Heartbeat mode without an interval.
    NoInterval,
    /// Schedule mode without a pattern.
    NoPattern,
    /// An unresolved urgent (non-error) brief waits for a human.
    HumanWaiting,
    /// The schedule's max executions for this window are used up; the task should complete.
    MaxExecutionsReached,
    /// A run is already going.
    InFlight,
}

impl TickSkip {
    /// The upstream reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not-found",
            Self::StaleTick => "stale-tick",
            Self::ModeChanged => "mode-changed",
            Self::Terminal => "terminal",
            Self::Paused => "paused",
            Self::NoInterval => "no-interval",
            Self::NoPattern => "no-pattern",
            Self::HumanWaiting => "human-waiting",
            Self::MaxExecutionsReached => "max-executions-reached",
            Self::InFlight => "in-flight",
        }
    }
}

/// May a heartbeat tick carrying `tick_token` run `task` now? (`None` token = a legacy
/// tokenless tick, allowed when the task has no current token either.)
pub fn heartbeat_tick(
    task: &Task,
    tick_token: Option<&str>,
    human_waiting: bool,
) -> Result<(), TickSkip> {
    if !task.exists() {
        return Err(TickSkip::NotFound);
    }
    match (task.tick_token.as_deref(), tick_token) {
        (Some(current), Some(token)) if current != token => return Err(TickSkip::StaleTick),
        (Some(_), None) => return Err(TickSkip::StaleTick),
        _ => {}
    }
    if task.automation_mode != Some(AutomationMode::Heartbeat) {
        return Err(TickSkip::ModeChanged);
    }
    if task.status.is_terminal() {
        return Err(TickSkip::Terminal);
    }
    if task.heartbeat.interval_secs.is_none_or(|i| i == 0) {
        return Err(TickSkip::NoInterval);
    }
    common(task, human_waiting)
}

/// May a schedule tick run `task` now?
pub fn schedule_tick(task: &Task, human_waiting: bool) -> Result<(), TickSkip> {
    if !task.exists() {
        return Err(TickSkip::NotFound);
    }
    if task.automation_mode != Some(AutomationMode::Schedule) {
        return Err(TickSkip::ModeChanged);
    }
    if task.schedule.pattern.is_none() {
        return Err(TickSkip::NoPattern);
    }
    common(task, human_waiting)?;
    if task.quota_reached() {
        return Err(TickSkip::MaxExecutionsReached);
    }
    Ok(())
}

fn common(task: &Task, human_waiting: bool) -> Result<(), TickSkip> {
    if task.status.is_terminal() {
        return Err(TickSkip::Terminal);
    }
    if task.status == S::Paused {
        return Err(TickSkip::Paused);
    }
    if human_waiting {
        return Err(TickSkip::HumanWaiting);
    }
    if task.running_topics().next().is_some() {
        return Err(TickSkip::InFlight);
    }
    Ok(())
}

/// Is there new input for `task` since its last run started: no run yet, a comment or document
/// a user added since, a dependency that completed since (`dependency_finished_at`, the
/// server's fact), or a last completed run whose hand-off names a `nextAction`? Comments and
/// documents of agents do not count: a run writes them.
pub fn new_input(task: &Task, dependency_finished_at: Option<DateTime<Utc>>) -> bool {
    let Some(last_run) = task.topics.values().max_by_key(|t| t.started_at) else { return true };
    let since = |at: Option<DateTime<Utc>>| at.is_some_and(|at| at >= last_run.started_at);
    let next_action = task.last_completed_topic_id.as_deref() == Some(last_run.topic_id.as_str())
        && task
            .last_handoff
            .as_ref()
            .and_then(|h| h.next_action.as_deref())
            .is_some_and(|a| !a.trim().is_empty());
    since(task.last_input_at) || since(dependency_finished_at) || next_action
}

/// Skip heartbeat tick `tick_token` of a task that requires input and has none new: the tick
/// is recorded as skipped and the next one scheduled an interval on. Refused when the tick
/// may not run at all, the task does not require input, or there is new input.
pub(super) fn skip_idle(
    task: &Task,
    tick_token: &str,
    dependency_finished_at: Option<DateTime<Utc>>,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    let refused =
        |reason: &str| DomainError::validation("tickToken", format!("not an idle tick: {reason}"));
    heartbeat_tick(task, Some(tick_token), false).map_err(|skip| refused(skip.as_str()))?;
    if !task.heartbeat.require_input {
        return Err(refused("the task does not require input"));
    }
    if new_input(task, dependency_finished_at) {
        return Err(refused("there is new input"));
    }
    let interval = task.heartbeat.interval_secs.unwrap_or(1);
    Ok(vec![
        E::TickSkipped(TickSkipped {
            tick_token: tick_token.to_string(),
            reason: "no-new-input".into(),
            at: ctx.now,
        }),
        E::HeartbeatScheduled(HeartbeatScheduled {
            due_at: after(ctx.now, interval),
            tick_token: ctx.derived_id("tick", 0),
        }),
    ])
}
