//! When a cron job fires next: the first local minute after now that the scheduler fires —
//! its pattern and conditions hold, the minute exists in the job's zone (a daylight-saving gap
//! is skipped), and it comes after the last fire's local minute (so a repeated hour fires once,
//! at the first occurrence the scheduler can still reach).
//!
//! [`next_due_at`](super::next_due_at) is its clock-free twin, the instant from which the scheduler has a slot of
//! the job to fire (it may be past): what the cron jobs read model keeps, so that a pass reads
//! only the jobs due.
//!
//! The zone is any `chrono::TimeZone` (the api passes chrono-tz's): the domain holds no
//! time-zone database, and `now` is passed in.

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike, Utc};

use super::{conditions::ExecutionConditions, pattern::CronPattern, slots::first_allowed};

/// How far ahead [`next_slot`] looks; a schedule with no fire within it has none.
pub const HORIZON_DAYS: i64 = 366;

/// The instant a schedule of `pattern` under `conditions`, last fired at `last`, fires next
/// after `now` in `zone`, having fired `fires_today` times on now's local day; `None` when the
/// pattern does not parse or nothing fires within [`HORIZON_DAYS`].
pub fn next_slot<Z: TimeZone>(
    pattern: &str,
    conditions: &ExecutionConditions,
    last: Option<DateTime<Utc>>,
    zone: &Z,
    now: DateTime<Utc>,
    fires_today: u32,
) -> Option<DateTime<Utc>> {
    let pattern = CronPattern::parse(pattern).ok()?;
    let local = |t: DateTime<Utc>| t.with_timezone(zone).naive_local();
    let today = local(now).date();
    let after = last.map_or(local(now), |last| local(last).max(local(now)));
    let from = after.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
    let horizon = from + Duration::days(HORIZON_DAYS);
    let fires_on = |day| if day == today { fires_today } else { 0 };
    first_allowed(&pattern, conditions, fires_on, from, horizon, |slot| {
        instant_after(zone, slot, now)
    })
}

/// The instant local `slot` falls on that is after `now`: of a repeated minute the first one
/// still ahead; none in a gap.
fn instant_after<Z: TimeZone>(
    zone: &Z,
    slot: NaiveDateTime,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let utc = |t: DateTime<Z>| t.with_timezone(&Utc);
    match zone.from_local_datetime(&slot) {
        LocalResult::Single(t) => Some(utc(t)),
        LocalResult::Ambiguous(first, second) => {
            Some(if utc(first.clone()) > now { utc(first) } else { utc(second) })
        }
        LocalResult::None => None,
    }
    .filter(|t| *t > now)
}
