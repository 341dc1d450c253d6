//! `next_fire_at`: daylight-saving gaps and repeated hours, conditions, disabled jobs.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::{America::New_York, Tz};

use super::pattern::CronPattern;
use super::*;

fn job(pattern: &str, conditions: ExecutionConditions) -> CronJob {
    CronJob {
        job_id: "j1".into(),
        pattern: pattern.into(),
        timezone: "America/New_York".into(),
        enabled: true,
        conditions,
        ..CronJob::default()
    }
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().expect("a valid instant")
}

fn next(job: &CronJob, zone: &Tz, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    next_fire_at(job, zone, now, 0)
}

#[test]
fn a_minute_in_the_spring_gap_is_skipped() {
    // 2026-03-08 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
    let j = job("30 2 * * *", ExecutionConditions::default());
    assert_eq!(next(&j, &New_York, utc(2026, 3, 8, 6, 0)), Some(utc(2026, 3, 9, 6, 30)));
    // Every 15 minutes: 01:45 EST, then 03:00 EDT.
    let j = job("*/15 * * * *", ExecutionConditions::default());
    assert_eq!(next(&j, &New_York, utc(2026, 3, 8, 6, 40)), Some(utc(2026, 3, 8, 6, 45)));
    assert_eq!(next(&j, &New_York, utc(2026, 3, 8, 6, 45)), Some(utc(2026, 3, 8, 7, 0)));
}

#[test]
fn a_repeated_hour_fires_once() {
    // 2026-11-01 02:00 EDT falls back to 01:00 EST: 01:30 happens twice.
    let mut j = job("30 1 * * *", ExecutionConditions::default());
    assert_eq!(
        next(&j, &New_York, utc(2026, 11, 1, 5, 0)),
        Some(utc(2026, 11, 1, 5, 30)),
        "the first 01:30"
    );
    j.last_executed_at = Some(utc(2026, 11, 1, 5, 30));
    assert_eq!(
        next(&j, &New_York, utc(2026, 11, 1, 6, 0)),
        Some(utc(2026, 11, 2, 6, 30)),
        "not the second"
    );
    // Never fired and past the first 01:30: the second one is still ahead.
    j.last_executed_at = None;
    assert_eq!(next(&j, &New_York, utc(2026, 11, 1, 6, 10)), Some(utc(2026, 11, 1, 6, 30)));
}

#[test]
fn conditions_move_it_to_the_next_allowed_minute() {
    let weekdays_9_to_17 = ExecutionConditions {
        active_days: Some(vec![1, 2, 3, 4, 5]),
        active_hours: Some(ActiveHours { start: 9, end: 17 }),
        max_executions_per_day: Some(1),
    };
    let mut j = job("0 * * * *", weekdays_9_to_17);
    j.timezone = "UTC".into();
    // Saturday 2026-12-05 10:00 → Monday 09:00.
    assert_eq!(next(&j, &Tz::UTC, utc(2026, 12, 5, 10, 0)), Some(utc(2026, 12, 7, 9, 0)));
    // Tuesday 18:30 → Wednesday 09:00; Tuesday 10:05 → 11:00, or Wednesday once fired today.
    assert_eq!(next(&j, &Tz::UTC, utc(2026, 12, 1, 18, 30)), Some(utc(2026, 12, 2, 9, 0)));
    assert_eq!(next(&j, &Tz::UTC, utc(2026, 12, 1, 10, 5)), Some(utc(2026, 12, 1, 11, 0)));
    assert_eq!(
        next_fire_at(&j, &Tz::UTC, utc(2026, 12, 1, 10, 5), 1),
        Some(utc(2026, 12, 2, 9, 0))
    );
    // Night hours wrap past midnight.
    j.conditions = ExecutionConditions {
        active_hours: Some(ActiveHours { start: 22, end: 6 }),
        ..Default::default()
    };
    assert_eq!(next(&j, &Tz::UTC, utc(2026, 12, 1, 6, 0)), Some(utc(2026, 12, 1, 22, 0)));
}

#[test]
fn disabled_used_up_or_never_matching_jobs_have_none() {
    let now = utc(2026, 12, 1, 10, 0);
    let mut j = job("* * * * *", ExecutionConditions::default());
    assert_eq!(next(&j, &New_York, now), Some(utc(2026, 12, 1, 10, 1)));
    j.enabled = false;
    assert_eq!(next(&j, &New_York, now), None);
    j.enabled = true;
    j.remaining_executions = Some(0);
    assert_eq!(next(&j, &New_York, now), None);
    assert_eq!(
        next(&job("0 0 30 2 *", ExecutionConditions::default()), &New_York, now),
        None,
        "Feb 30"
    );
}

#[test]
fn the_forward_search_mirrors_the_backward_one() {
    let p = CronPattern::parse("*/20 9-17 * * MON-FRI").expect("a pattern");
    let mut t = utc(2026, 12, 4, 16, 50).naive_utc();
    let end = t + chrono::Duration::days(30);
    while let Some(s) = p.earliest_at_or_after(t, end) {
        let back = p.latest_at_or_before(s, t);
        assert_eq!(back, Some(s), "{s}");
        assert_eq!(
            p.latest_at_or_before(s - chrono::Duration::minutes(1), t),
            None,
            "nothing between {t} and {s}"
        );
        t = s + chrono::Duration::minutes(1);
    }
}
