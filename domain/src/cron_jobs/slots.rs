//! When a schedule's slots fall, in its zone: the slot a scheduler pass fires — the latest at or
//! before now after the last fire, missed slots collapsing into it ([`latest_slot`]) — and the
//! first slot after the last fire that its rules allow ([`next_due`]): the instant from which a
//! pass has something to fire, which a read model keeps so that a pass reads only what is due.
//!
//! Both walk local minutes of a [`CronPattern`] in the schedule's zone. A minute in a
//! daylight-saving gap has no instant and is skipped; a minute of a repeated hour falls on its
//! first occurrence. The zone is any `chrono::TimeZone` (the api and the read models pass
//! chrono-tz's): the domain holds no time-zone database, and takes no clock — [`next_due`] is a
//! pure function of the schedule and its last fire.

use chrono::{
    DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Timelike, Utc,
};

use super::{conditions::ExecutionConditions, pattern::CronPattern};

/// How far back a pass looks for a missed slot.
pub const MAX_CATCH_UP_DAYS: i64 = 366;

/// How far ahead [`next_due`] looks: 400 years, the Gregorian cycle after which dates fall on
/// the same weekdays again, so a schedule with no slot within it has none at all (`0 0 30 2 *`).
/// A rare schedule (the 29th of February on a Monday) still finds its slot decades ahead.
pub const SEARCH_DAYS: i64 = 146_097;

/// The latest slot of `pattern` in `zone` at or before `now` and after `last` (exclusive, by
/// local minute), not older than [`MAX_CATCH_UP_DAYS`], as the instant it falls on; `None` when
/// there is none.
pub fn latest_slot<Z: TimeZone>(
    pattern: &CronPattern,
    zone: &Z,
    now: DateTime<Utc>,
    last: DateTime<Utc>,
) -> Option<DateTime<Z>> {
    let local_now = now.with_timezone(zone).naive_local();
    let after_last = minute_of(last.with_timezone(zone).naive_local()) + Duration::minutes(1);
    let not_before = after_last.max(local_now - Duration::days(MAX_CATCH_UP_DAYS));
    let mut at = local_now;
    // A slot in a DST gap has no instant: look further back.
    loop {
        let slot = pattern.latest_at_or_before(at, not_before)?;
        if let Some(instant) = zone.from_local_datetime(&slot).earliest() {
            return Some(instant);
        }
        at = slot - Duration::minutes(1);
    }
}

/// The instant a schedule last fired at `last` falls due: the first occurrence of its first
/// slot after `last` (exclusive, by local minute) that exists in `zone` and that `conditions`
/// allow, `fires_on` counting its fires on a local day (for the daily maximum); `None` when
/// there is none within [`SEARCH_DAYS`].
///
/// Before that instant no pass can fire: the slot a pass picks is at or before its local now,
/// so it would be an allowed slot after `last` earlier than the first one. From that instant on
/// a pass may fire (its rules still decide, at the latest slot).
pub fn next_due<Z: TimeZone>(
    pattern: &CronPattern,
    conditions: &ExecutionConditions,
    fires_on: impl Fn(NaiveDate) -> u32,
    zone: &Z,
    last: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let from = minute_of(last.with_timezone(zone).naive_local()) + Duration::minutes(1);
    let until = from + Duration::days(SEARCH_DAYS);
    first_allowed(pattern, conditions, fires_on, from, until, |slot| {
        zone.from_local_datetime(&slot).earliest().map(|t| t.with_timezone(&Utc))
    })
}

/// The first local minute in `[from, until]` that matches `pattern`, that `conditions` allow
/// (active days and hours; the daily maximum, against `fires_on` of its day) and that `instant`
/// places (`None` for a minute that does not exist), with that instant.
pub(crate) fn first_allowed(
    pattern: &CronPattern,
    conditions: &ExecutionConditions,
    fires_on: impl Fn(NaiveDate) -> u32,
    mut from: NaiveDateTime,
    until: NaiveDateTime,
    instant: impl Fn(NaiveDateTime) -> Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    let c = conditions;
    // No hour of the pattern inside the active hours: no slot ever, without walking 400 years
    // of days to find out.
    if let Some(hours) = c.active_hours
        && !pattern.hours().any(|h| hours.contains(h))
    {
        return None;
    }
    while let Some(slot) = pattern.earliest_at_or_after(from, until) {
        let date = slot.date();
        let weekday = date.weekday().num_days_from_sunday() as u8;
        if c.active_days.as_ref().is_some_and(|days| !days.contains(&weekday))
            || c.max_executions_per_day.is_some_and(|max| fires_on(date) >= max)
        {
            from = date.succ_opt()?.and_time(NaiveTime::MIN);
            continue;
        }
        if c.active_hours.is_some_and(|h| !h.contains(slot.hour() as u8)) {
            from = slot.with_minute(0)? + Duration::hours(1);
            continue;
        }
        match instant(slot) {
            Some(at) => return Some(at),
            None => from = slot + Duration::minutes(1),
        }
    }
    None
}

/// The local minute `t` falls in.
fn minute_of(t: NaiveDateTime) -> NaiveDateTime {
    t.with_second(0).and_then(|t| t.with_nanosecond(0)).unwrap_or(t)
}
