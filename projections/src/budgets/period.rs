//! The period a budget counts over at a moment, in its time zone: shared by the server's checks,
//! its history query and `agentlog-replay`.

use agentlog_domain::budgets::{BudgetPeriod, BudgetSpec};
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

/// The period a budget counts over at a moment: when it began and when it resets (both absent
/// for a total budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodWindow {
    /// The period's first instant.
    pub start: Option<DateTime<Utc>>,
    /// When the next period begins.
    pub resets_at: Option<DateTime<Utc>>,
}

/// Midnight of `day` in `tz` (the first instant of the day where midnight falls in a gap).
fn day_start(tz: Tz, day: NaiveDate) -> Option<DateTime<Utc>> {
    let midnight = day.and_hms_opt(0, 0, 0)?;
    (0..=3)
        .find_map(|h| tz.from_local_datetime(&(midnight + Duration::hours(h))).earliest())
        .map(|t| t.with_timezone(&Utc))
}

/// The period of `spec` that `now` falls in. A zone the server does not know counts as UTC
/// (`setBudget` refuses one; this only guards the read).
pub fn period_window(spec: &BudgetSpec, now: DateTime<Utc>) -> PeriodWindow {
    let tz: Tz = spec.time_zone.parse().unwrap_or(Tz::UTC);
    let today = now.with_timezone(&tz).date_naive();
    let (first, next) = match spec.period {
        BudgetPeriod::Total => return PeriodWindow { start: None, resets_at: None },
        BudgetPeriod::Day => (Some(today), today.succ_opt()),
        BudgetPeriod::Month => {
            let first = today.with_day(1);
            let next = first.and_then(|f| f.checked_add_months(chrono::Months::new(1)));
            (first, next)
        }
    };
    PeriodWindow { start: first.and_then(|d| day_start(tz, d)), resets_at: next.and_then(|d| day_start(tz, d)) }
}
