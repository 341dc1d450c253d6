//! When a cron job may fire: enabled, executions left, its pattern matches the minute, and its
//! execution conditions (active days, active hours, max executions per day) hold.
//!
//! Time zones: the domain has no time-zone database, so the caller converts the instant into
//! the job's time zone (the api uses chrono-tz) and passes a `DateTime<FixedOffset>`; every
//! check here reads that local time.

use serde::{Deserialize, Serialize};

use crate::error::DomainError;

/// Hours of the day a job may fire: `start` ≤ hour < `end`, wrapping past midnight when
/// `start` > `end` (22–6 is the night).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveHours {
    /// First active hour, 0–23.
    pub start: u8,
    /// First inactive hour after the window, 1–24.
    pub end: u8,
}

impl ActiveHours {
    /// Is `hour` inside the window?
    pub fn contains(&self, hour: u8) -> bool {
        if self.start < self.end {
            self.start <= hour && hour < self.end
        } else {
            hour >= self.start || hour < self.end
        }
    }
}

/// Upstream `execution_conditions`. An unknown field is refused, not ignored: a condition the
/// job would not apply must not look accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionConditions {
    /// Weekdays it may fire on, 0 = Sunday … 6 = Saturday (none = every day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_days: Option<Vec<u8>>,
    /// Hours it may fire in (none = all day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_hours: Option<ActiveHours>,
    /// Most fires per local day (none = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_executions_per_day: Option<u32>,
}

impl ExecutionConditions {
    /// Are the conditions well-formed?
    pub fn check(&self) -> Result<(), DomainError> {
        if let Some(days) = &self.active_days {
            if days.is_empty() {
                return Err(DomainError::validation(
                    "conditions.activeDays",
                    "list at least one day, or leave it out",
                ));
            }
            if let Some(bad) = days.iter().find(|d| **d > 6) {
                return Err(DomainError::validation(
                    "conditions.activeDays",
                    format!("{bad} is not a weekday (0 = Sunday … 6)"),
                ));
            }
        }
        if let Some(h) = self.active_hours
            && (h.start > 23 || h.end == 0 || h.end > 24 || h.start == h.end)
        {
            return Err(DomainError::validation(
                "conditions.activeHours",
                "start is 0–23, end is 1–24, and they differ",
            ));
        }
        if self.max_executions_per_day == Some(0) {
            return Err(DomainError::validation(
                "conditions.maxExecutionsPerDay",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// Why a job does not fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FireSkip {
    /// Disabled (by hand or after its last execution).
    #[error("it is disabled")]
    Disabled,
    /// Its remaining executions are used up.
    #[error("it has no executions left")]
    NoExecutionsLeft,
    /// The pattern does not match this minute.
    #[error("its pattern does not match this minute")]
    PatternMismatch,
    /// Not an active day.
    #[error("today is not one of its active days")]
    InactiveDay,
    /// Outside the active hours.
    #[error("this hour is outside its active hours")]
    InactiveHour,
    /// The daily maximum is reached.
    #[error("it already fired the most times allowed today")]
    DailyLimitReached,
}
