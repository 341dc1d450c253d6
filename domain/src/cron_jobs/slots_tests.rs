//! `latest_slot` and `next_due`: daylight-saving gaps and repeated hours, the catch-up window,
//! conditions, schedules that never or rarely fire, and the property that ties them: before
//! `next_due` no pass has an allowed slot to fire; at it, its slot is the one a pass fires.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use chrono_tz::{
    America::New_York,
    Australia::Lord_Howe,
    Europe::{Berlin, London},
    Tz,
};
use proptest::prelude::*;

use super::slots::{MAX_CATCH_UP_DAYS, latest_slot, next_due};
use super::{ActiveHours, CronJob, ExecutionConditions, pattern::CronPattern, should_fire};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("a time").with_timezone(&Utc)
}

fn pattern(p: &str) -> CronPattern {
    CronPattern::parse(p).expect("a pattern")
}

fn never_fired(_: NaiveDate) -> u32 {
    0
}

/// `next_due` without conditions.
fn due(p: &str, zone: &Tz, last: &str) -> Option<DateTime<Utc>> {
    next_due(&pattern(p), &ExecutionConditions::default(), never_fired, zone, at(last))
}

fn latest(p: &str, zone: &Tz, now: &str, last: &str) -> Option<DateTime<Utc>> {
    latest_slot(&pattern(p), zone, at(now), at(last)).map(|s| s.with_timezone(&Utc))
}

#[test]
fn latest_slot_skips_daylight_saving_gaps_and_takes_the_first_of_repeated_hours() {
    // 2026-03-29 02:30 does not exist in Berlin (02:00 → 03:00): the latest slot is the day before.
    let slot = latest("30 2 * * *", &Berlin, "2026-03-29T01:30:00Z", "2026-03-27T00:00:00Z");
    assert_eq!(slot, Some(at("2026-03-28T01:30:00Z")));
    // 2026-10-25 02:30 happens twice: the first (CEST, 00:30 UTC) is the slot.
    let slot = latest("30 2 * * *", &Berlin, "2026-10-25T02:00:00Z", "2026-10-24T12:00:00Z");
    assert_eq!(slot, Some(at("2026-10-25T00:30:00Z")));
}

#[test]
fn latest_slot_collapses_missed_slots_and_looks_back_at_most_the_catch_up_window() {
    // Down for three days: the latest slot only.
    let slot = latest("*/5 * * * *", &Tz::UTC, "2026-12-03T15:02:00Z", "2026-11-30T08:10:00Z");
    assert_eq!(slot, Some(at("2026-12-03T15:00:00Z")));
    // Nothing after the last fire's minute yet.
    assert_eq!(
        latest("*/5 * * * *", &Tz::UTC, "2026-11-30T08:14:59Z", "2026-11-30T08:10:00Z"),
        None
    );
    // A yearly slot: the latest one, however long ago the last fire.
    assert_eq!(MAX_CATCH_UP_DAYS, 366);
    let yearly = "0 12 1 1 *";
    let slot = latest(yearly, &Tz::UTC, "2026-01-03T00:00:00Z", "2020-01-01T00:00:00Z");
    assert_eq!(slot, Some(at("2026-01-01T12:00:00Z")));
    // The 29th of February: 2024's is more than the window back from mid-2027, 2028's is not
    // from 2029.
    let leap = "0 12 29 2 *";
    assert_eq!(latest(leap, &Tz::UTC, "2027-06-01T00:00:00Z", "2020-01-01T00:00:00Z"), None);
    let slot = latest(leap, &Tz::UTC, "2029-01-01T00:00:00Z", "2020-01-01T00:00:00Z");
    assert_eq!(slot, Some(at("2028-02-29T12:00:00Z")));
}

#[test]
fn next_due_is_the_first_slot_after_the_last_fires_minute() {
    assert_eq!(
        due("*/5 * * * *", &Tz::UTC, "2026-11-30T10:05:00Z"),
        Some(at("2026-11-30T10:10:00Z"))
    );
    assert_eq!(
        due("*/5 * * * *", &Tz::UTC, "2026-11-30T10:05:59Z"),
        Some(at("2026-11-30T10:10:00Z"))
    );
    assert_eq!(
        due("*/5 * * * *", &Tz::UTC, "2026-11-30T10:04:59Z"),
        Some(at("2026-11-30T10:05:00Z"))
    );
    // In the schedule's zone: 09:00 New York is 14:00 UTC in December.
    assert_eq!(
        due("0 9 * * *", &New_York, "2026-12-03T14:00:00Z"),
        Some(at("2026-12-04T14:00:00Z"))
    );
    // A last fire long ago: the due instant is long past (a pass fires the latest slot).
    assert_eq!(
        due("0 9 * * *", &Tz::UTC, "2020-01-01T10:00:00Z"),
        Some(at("2020-01-02T09:00:00Z"))
    );
}

#[test]
fn next_due_skips_daylight_saving_gaps() {
    // 2026-03-29 02:30 does not exist in Berlin: the next 02:30 is the day after.
    assert_eq!(
        due("30 2 * * *", &Berlin, "2026-03-28T01:30:00Z"),
        Some(at("2026-03-30T00:30:00Z"))
    );
    // Every 15 minutes across the gap: 01:45 CET, then 03:00 CEST.
    assert_eq!(
        due("*/15 * * * *", &Berlin, "2026-03-29T00:45:00Z"),
        Some(at("2026-03-29T01:00:00Z"))
    );
    // Lord Howe moves its clocks by half an hour: 02:00–02:29 do not exist on 2026-10-04.
    assert_eq!(
        due("15 2 * * *", &Lord_Howe, "2026-10-02T16:00:00Z"),
        Some(at("2026-10-04T15:15:00Z"))
    );
}

#[test]
fn next_due_takes_the_first_of_a_repeated_hour_once() {
    // 2026-10-25 02:00–02:59 happens twice in Berlin: the first 02:30 (00:30 UTC) is due.
    assert_eq!(
        due("30 2 * * *", &Berlin, "2026-10-24T12:00:00Z"),
        Some(at("2026-10-25T00:30:00Z"))
    );
    // Fired then: the second 02:30 is not a new slot; the next is the day after.
    assert_eq!(
        due("30 2 * * *", &Berlin, "2026-10-25T00:30:00Z"),
        Some(at("2026-10-26T01:30:00Z"))
    );
    // London, every 20 minutes: after the first 01:40 comes 02:00 local, past the repeat.
    assert_eq!(
        due("*/20 * * * *", &London, "2026-10-25T00:40:00Z"),
        Some(at("2026-10-25T02:00:00Z"))
    );
}

#[test]
fn next_due_follows_the_conditions() {
    let weekdays_9_to_17 = ExecutionConditions {
        active_days: Some(vec![1, 2, 3, 4, 5]),
        active_hours: Some(ActiveHours { start: 9, end: 17 }),
        max_executions_per_day: Some(2),
    };
    let hourly = pattern("0 * * * *");
    let due = |last: &str, fires_on: &dyn Fn(NaiveDate) -> u32| {
        next_due(&hourly, &weekdays_9_to_17, fires_on, &Tz::UTC, at(last))
    };
    // Friday 16:00 fired: the next allowed slot is Monday 09:00.
    assert_eq!(due("2026-12-04T16:00:00Z", &never_fired), Some(at("2026-12-07T09:00:00Z")));
    // Tuesday 10:00 fired, the second fire that day: Wednesday 09:00.
    let tuesday = NaiveDate::from_ymd_opt(2026, 12, 1).expect("a date");
    let twice_on_tuesday = |d: NaiveDate| if d == tuesday { 2 } else { 0 };
    assert_eq!(due("2026-12-01T10:00:00Z", &twice_on_tuesday), Some(at("2026-12-02T09:00:00Z")));
    assert_eq!(due("2026-12-01T10:00:00Z", &never_fired), Some(at("2026-12-01T11:00:00Z")));
    // Night hours wrap past midnight.
    let night = ExecutionConditions {
        active_hours: Some(ActiveHours { start: 22, end: 6 }),
        ..Default::default()
    };
    let d = next_due(&hourly, &night, never_fired, &Tz::UTC, at("2026-12-01T05:00:00Z"));
    assert_eq!(d, Some(at("2026-12-01T22:00:00Z")));
}

#[test]
fn next_due_finds_rare_slots_and_none_for_slots_that_never_come() {
    // The 29th of February on a Monday: 2044.
    let monday = ExecutionConditions { active_days: Some(vec![1]), ..Default::default() };
    let d = next_due(
        &pattern("0 12 29 2 *"),
        &monday,
        never_fired,
        &Tz::UTC,
        at("2026-01-01T00:00:00Z"),
    );
    assert_eq!(d, Some(at("2044-02-29T12:00:00Z")));
    // The 30th of February, or an hour outside the active hours: never.
    assert_eq!(due("0 0 30 2 *", &Tz::UTC, "2026-01-01T00:00:00Z"), None);
    let day = ExecutionConditions {
        active_hours: Some(ActiveHours { start: 9, end: 17 }),
        ..Default::default()
    };
    let d =
        next_due(&pattern("0 3 * * *"), &day, never_fired, &Tz::UTC, at("2026-01-01T00:00:00Z"));
    assert_eq!(d, None);
    // Sundays only, active on Mondays only: never (a 400-year walk, still quick).
    let started = std::time::Instant::now();
    let d = next_due(
        &pattern("0 9 * * SUN"),
        &monday,
        never_fired,
        &Tz::UTC,
        at("2026-01-01T00:00:00Z"),
    );
    assert_eq!(d, None);
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
}

#[test]
fn a_jobs_due_instant_follows_its_state() {
    use super::next_due_at;
    let created = at("2026-11-30T08:00:30Z");
    let mut job = CronJob {
        job_id: "j1".into(),
        pattern: "*/5 * * * *".into(),
        timezone: "UTC".into(),
        enabled: true,
        ..CronJob::default()
    };
    assert_eq!(next_due_at(&job, &Tz::UTC, created, never_fired), Some(at("2026-11-30T08:05:00Z")));
    job.last_executed_at = Some(at("2026-11-30T08:10:00Z"));
    assert_eq!(next_due_at(&job, &Tz::UTC, created, never_fired), Some(at("2026-11-30T08:15:00Z")));
    job.enabled = false;
    assert_eq!(next_due_at(&job, &Tz::UTC, created, never_fired), None);
    job.enabled = true;
    job.remaining_executions = Some(0);
    assert_eq!(next_due_at(&job, &Tz::UTC, created, never_fired), None);
    job.remaining_executions = None;
    job.pattern = "not a pattern".into();
    assert_eq!(next_due_at(&job, &Tz::UTC, created, never_fired), None);
}

const PATTERNS: &[&str] = &[
    "*/5 * * * *",
    "30 2 * * *",
    "0 * * * *",
    "15,45 1-3 * * *",
    "0 9 * * MON-FRI",
    "*/7 0-5 1,15 * *",
    "59 23 * * 0",
];

fn zone(i: usize) -> Tz {
    [Tz::UTC, Berlin, New_York, Lord_Howe, London][i]
}

fn conditions(i: usize) -> ExecutionConditions {
    match i {
        0 => ExecutionConditions::default(),
        1 => ExecutionConditions {
            active_days: Some(vec![0, 2, 4]),
            active_hours: Some(ActiveHours { start: 1, end: 3 }),
            ..Default::default()
        },
        _ => ExecutionConditions {
            active_hours: Some(ActiveHours { start: 22, end: 2 }),
            max_executions_per_day: Some(1),
            ..Default::default()
        },
    }
}

/// What a pass at `now` fires, having fired at `last`: the latest slot, if the job's rules
/// allow it, `fires_on` counting fires on the slot's local day.
fn fires_at(
    job: &CronJob,
    zone: &Tz,
    now: DateTime<Utc>,
    last: DateTime<Utc>,
    fires_on: impl Fn(NaiveDate) -> u32,
) -> Option<DateTime<Utc>> {
    let slot = latest_slot(&CronPattern::parse(&job.pattern).ok()?, zone, now, last)?;
    should_fire(job, slot.fixed_offset(), fires_on(slot.date_naive())).ok()?;
    Some(slot.with_timezone(&Utc))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Over a year of last fires (DST changes included) in zones with whole- and half-hour
    /// shifts: no pass before the due instant fires; a pass at it fires the due slot.
    #[test]
    fn no_pass_fires_before_the_due_instant_and_one_at_it_fires_its_slot(
        p in 0..PATTERNS.len(),
        z in 0..5usize,
        c in 0..3usize,
        minutes in 0i64..(366 * 24 * 60),
        fired_that_day in 0u32..2,
        probes in proptest::collection::vec(0i64..(3 * 24 * 60 * 60), 8),
    ) {
        let zone = zone(z);
        let last = at("2026-01-01T00:00:00Z") + Duration::minutes(minutes) + Duration::seconds(minutes % 60);
        let job = CronJob { pattern: PATTERNS[p].into(), enabled: true, conditions: conditions(c), ..CronJob::default() };
        let last_day = last.with_timezone(&zone).date_naive();
        let fires_on = |d: NaiveDate| if d == last_day { fired_that_day } else { 0 };
        let Some(due) = next_due(&pattern(PATTERNS[p]), &job.conditions, fires_on, &zone, last) else {
            return Ok(());
        };
        prop_assert!(due > last - Duration::hours(1), "{} after {} (a repeated hour at most)", due, last);
        for probe in probes {
            let now = last + Duration::seconds(probe);
            if now < due {
                prop_assert_eq!(fires_at(&job, &zone, now, last, fires_on), None, "a pass at {} before {}", now, due);
            }
        }
        prop_assert_eq!(fires_at(&job, &zone, due, last, fires_on), Some(due));
    }
}
