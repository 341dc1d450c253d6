//! The scheduler's tick rules (upstream `heartbeatTick` / `scheduleTick`). A tick may arrive
//! after the user paused, cancelled or changed the task, so every tick re-reads the task and
//! checks, in order, why it should not run.
//!
//! One deliberate difference: upstream's heartbeat tick has no `paused` check (a pending tick
//! runs a task the user paused); here both ticks skip paused tasks.

use super::model::{AutomationMode, TaskStatus as S};
use super::state::Task;

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
