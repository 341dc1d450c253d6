//! Cron jobs: patterns, conditions, remaining executions, transition table, properties.

use chrono::{FixedOffset, TimeZone};
use proptest::prelude::*;

use super::pattern::{CronPattern, check_pattern};
use super::*;
use crate::envelope::Actor;
use crate::testing::*;

fn create(max: Option<u32>, conditions: ExecutionConditions) -> CronCommand {
    CronCommand::Create(CreateCronJob {
        job_id: "j1".into(),
        agent_id: "a1".into(),
        group_id: None,
        name: Some("daily".into()),
        pattern: "0 9 * * *".into(),
        timezone: "Europe/Berlin".into(),
        content: "report".into(),
        enabled: true,
        max_executions: max,
        conditions,
    })
}

/// 2026-12-07 is a Monday. `local(d, h, m)` is that day + d at h:m in UTC+1.
fn local(day_offset: u32, hour: u32, minute: u32) -> chrono::DateTime<FixedOffset> {
    FixedOffset::east_opt(3600)
        .and_then(|tz| tz.with_ymd_and_hms(2026, 12, 7 + day_offset, hour, minute, 0).single())
        .expect("valid test time")
}

fn fire(at: chrono::DateTime<FixedOffset>, fires_today: u32) -> CronCommand {
    CronCommand::Fire { at, fires_today }
}

#[test]
fn patterns_are_checked_field_by_field() {
    for ok in [
        "* * * * *",
        "*/15 9-17 * * MON-FRI",
        "0 0 1,15 * *",
        "5 4 * JAN,jul 0",
        "0 22 * * 7",
        "30 8-18/2 * * 1-5",
        "0/10 * * * *",
    ] {
        assert!(check_pattern(ok).is_ok(), "{ok}");
    }
    let bad = [
        ("* * * *", "5 fields"),
        ("0 0 * * * *", "5 fields"),
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("*/0 * * * *", "step"),
        ("5-1 * * * *", "backwards"),
        ("a * * * *", "not a number"),
        ("1,,2 * * * *", "empty"),
    ];
    for (pattern, words) in bad {
        let e = check_pattern(pattern).expect_err(pattern).to_string();
        assert!(e.contains(words), "{pattern}: {e}");
    }
}

#[test]
fn patterns_match_local_minutes_with_classic_day_rules() {
    let p = CronPattern::parse("*/15 9-17 * * MON-FRI").unwrap();
    assert!(p.matches(45, 9, 30, 11, 1));
    assert!(!p.matches(50, 9, 30, 11, 1));
    assert!(!p.matches(0, 9, 29, 11, 0), "Sunday");
    let either = CronPattern::parse("0 0 1 * 1").unwrap();
    assert!(either.matches(0, 0, 1, 5, 3), "the 1st of the month");
    assert!(either.matches(0, 0, 9, 5, 1), "a Monday");
    assert!(!either.matches(0, 0, 9, 5, 2));
    assert!(CronPattern::parse("0 0 * * 7").unwrap().matches(0, 0, 6, 12, 0), "7 is Sunday too");
}

#[test]
fn conditions_active_days_hours_and_daily_maximum() {
    let conditions = ExecutionConditions {
        active_days: Some(vec![1, 2]),
        active_hours: Some(ActiveHours { start: 8, end: 10 }),
        max_executions_per_day: Some(2),
    };
    let mut job = run_all::<CronJob>(&[create(None, conditions)]);
    job.pattern = "* * * * *".into();
    assert_eq!(should_fire(&job, local(0, 9, 0), 0), Ok(()), "Monday 09:00");
    assert_eq!(should_fire(&job, local(2, 9, 0), 0), Err(FireSkip::InactiveDay), "Wednesday");
    assert_eq!(
        should_fire(&job, local(0, 10, 0), 0),
        Err(FireSkip::InactiveHour),
        "end is exclusive"
    );
    assert_eq!(should_fire(&job, local(0, 7, 59), 0), Err(FireSkip::InactiveHour));
    assert_eq!(should_fire(&job, local(0, 9, 0), 2), Err(FireSkip::DailyLimitReached));
    let night = ActiveHours { start: 22, end: 6 };
    assert!(
        night.contains(23)
            && night.contains(0)
            && night.contains(5)
            && !night.contains(6)
            && !night.contains(12)
    );
    job.pattern = "0 9 * * *".into();
    assert_eq!(should_fire(&job, local(0, 9, 1), 0), Err(FireSkip::PatternMismatch));
    job.enabled = false;
    assert_eq!(should_fire(&job, local(0, 9, 0), 0), Err(FireSkip::Disabled));
}

#[test]
fn bad_conditions_and_time_zones_are_refused() {
    let bad_days =
        ExecutionConditions { active_days: Some(vec![7]), ..ExecutionConditions::default() };
    let bad_hours = ExecutionConditions {
        active_hours: Some(ActiveHours { start: 5, end: 5 }),
        ..ExecutionConditions::default()
    };
    let zero =
        ExecutionConditions { max_executions_per_day: Some(0), ..ExecutionConditions::default() };
    for c in [bad_days, bad_hours, zero] {
        assert!(matches!(
            refused(&CronJob::default(), &create(None, c), &system_ctx(1)),
            DomainError::Validation { .. }
        ));
    }
    assert!(check_timezone("America/Argentina/Buenos_Aires").is_ok());
    assert!(check_timezone("Etc/GMT+3").is_ok());
    assert!(check_timezone("Mars Time").is_err());
}

#[test]
fn remaining_executions_count_down_and_auto_disable_at_zero() {
    let job = run_all::<CronJob>(&[create(Some(2), ExecutionConditions::default())]);
    assert_eq!(job.remaining_executions, Some(2));
    let (job, e1) = apply(job, &fire(local(0, 9, 0), 0), &system_ctx(10));
    assert_eq!(types(&e1), ["cron.fired"]);
    assert_eq!((job.remaining_executions, job.total_executions), (Some(1), 1));
    let (job, e2) = apply(job, &fire(local(1, 9, 0), 0), &system_ctx(11));
    assert_eq!(types(&e2), ["cron.fired", "cron.auto_disabled"]);
    assert!(!job.enabled);
    assert!(matches!(
        refused(&job, &fire(local(2, 9, 0), 0), &system_ctx(12)),
        DomainError::ConditionNotMet { .. }
    ));
    assert!(matches!(
        refused(&job, &CronCommand::Enable, &system_ctx(12)),
        DomainError::InvalidTransition { .. }
    ));
    let (job, _) =
        apply(job, &CronCommand::ResetExecutions { max_executions: None }, &system_ctx(13));
    assert_eq!((job.enabled, job.remaining_executions, job.total_executions), (true, Some(2), 0));
    let unlimited = run_all::<CronJob>(&[create(None, ExecutionConditions::default())]);
    let (unlimited, _) = apply(unlimited, &fire(local(0, 9, 0), 0), &system_ctx(10));
    assert_eq!(unlimited.remaining_executions, None, "unlimited stays unlimited");
}

#[test]
fn updates_reset_last_execution_on_real_pattern_or_zone_changes_and_remaining_on_max() {
    let job = run_all::<CronJob>(&[create(Some(5), ExecutionConditions::default())]);
    let (job, _) = apply(job, &fire(local(0, 9, 0), 0), &system_ctx(10));
    assert!(job.last_executed_at.is_some());
    let same = CronCommand::Update(CronJobPatch {
        pattern: Some("0 9 * * *".into()),
        ..CronJobPatch::default()
    });
    let (job, _) = apply(job, &same, &system_ctx(11));
    assert!(job.last_executed_at.is_some(), "same pattern: no reset");
    let other = CronCommand::Update(CronJobPatch {
        timezone: Some("UTC".into()),
        ..CronJobPatch::default()
    });
    let (job, _) = apply(job, &other, &system_ctx(12));
    assert!(job.last_executed_at.is_none());
    let max = CronCommand::Update(CronJobPatch {
        max_executions: Some(Some(9)),
        ..CronJobPatch::default()
    });
    let (job, _) = apply(job, &max, &system_ctx(13));
    assert_eq!(job.remaining_executions, Some(9));
    let bad = CronCommand::Update(CronJobPatch {
        pattern: Some("99 * * * *".into()),
        ..CronJobPatch::default()
    });
    assert!(matches!(refused(&job, &bad, &system_ctx(14)), DomainError::Validation { .. }));
}

#[test]
fn firing_the_same_minute_twice_is_one_event_id() {
    let job = run_all::<CronJob>(&[create(None, ExecutionConditions::default())]);
    let (a_ctx, b_ctx) = (system_ctx(10), system_ctx(20));
    let a =
        crate::stamp::stamp(&job, &job.decide(&fire(local(0, 9, 0), 0), &a_ctx).unwrap(), &a_ctx);
    let b =
        crate::stamp::stamp(&job, &job.decide(&fire(local(0, 9, 0), 0), &b_ctx).unwrap(), &b_ctx);
    assert_eq!(a[0].event_id, b[0].event_id);
    assert_eq!(
        a[0].event_id,
        fire_event_id(&a_ctx.user_id, "j1", local(0, 9, 0).with_timezone(&chrono::Utc))
    );
    // Job ids are per owner: another user's job `j1` firing that minute is another event.
    let mut other = a_ctx.clone();
    other.user_id = format!("{}-other", a_ctx.user_id);
    let c =
        crate::stamp::stamp(&job, &job.decide(&fire(local(0, 9, 0), 0), &other).unwrap(), &other);
    assert_ne!(a[0].event_id, c[0].event_id);
}

#[test]
fn transition_table() {
    use CronCommand as C;
    let none = CronJob::default();
    let enabled = run_all::<CronJob>(&[create(Some(3), ExecutionConditions::default())]);
    let disabled =
        run_all::<CronJob>(&[create(Some(3), ExecutionConditions::default()), C::Disable]);
    let deleted = run_all::<CronJob>(&[create(Some(3), ExecutionConditions::default()), C::Delete]);
    let states =
        [("none", &none), ("enabled", &enabled), ("disabled", &disabled), ("deleted", &deleted)];
    let update = C::Update(CronJobPatch { name: Some("x".into()), ..CronJobPatch::default() });
    let reset = C::ResetExecutions { max_executions: Some(Some(4)) };
    let table: Vec<(&str, C, [Expect; 4])> = vec![
        (
            "create",
            create(None, ExecutionConditions::default()),
            [ok(&["cron.created"]), no("AlreadyExists"), no("AlreadyExists"), no("AlreadyExists")],
        ),
        (
            "update",
            update,
            [no("NotFound"), ok(&["cron.updated"]), ok(&["cron.updated"]), no("NotFound")],
        ),
        ("enable", C::Enable, [no("NotFound"), ok(&[]), ok(&["cron.enabled"]), no("NotFound")]),
        ("disable", C::Disable, [no("NotFound"), ok(&["cron.disabled"]), ok(&[]), no("NotFound")]),
        (
            "fire",
            fire(local(0, 9, 0), 0),
            [no("NotFound"), ok(&["cron.fired"]), no("ConditionNotMet"), no("NotFound")],
        ),
        (
            "fire off-pattern",
            fire(local(0, 9, 5), 0),
            [no("NotFound"), no("ConditionNotMet"), no("ConditionNotMet"), no("NotFound")],
        ),
        (
            "reset",
            reset,
            [
                no("NotFound"),
                ok(&["cron.executions_reset"]),
                ok(&["cron.executions_reset"]),
                no("NotFound"),
            ],
        ),
        (
            "delete",
            C::Delete,
            [no("NotFound"), ok(&["cron.deleted"]), ok(&["cron.deleted"]), no("NotFound")],
        ),
    ];
    let mut failures = Vec::new();
    for (name, command, row) in &table {
        for ((state_name, state), expect) in states.iter().zip(row) {
            if let Some(m) = check(*state, command, &system_ctx(10), expect) {
                failures.push(format!("{name} on {state_name}: {m}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn command() -> impl Strategy<Value = CronCommand> {
    use CronCommand as C;
    prop_oneof![
        prop::option::of(1u32..4).prop_map(|m| create(m, ExecutionConditions::default())),
        (0u32..3, 8u32..11, prop::sample::select(vec![0u32, 5]), 0u32..3)
            .prop_map(|(d, h, m, n)| fire(local(d, h, m), n)),
        Just(C::Enable),
        Just(C::Disable),
        prop::option::of(prop::option::of(0u32..4))
            .prop_map(|max_executions| C::ResetExecutions { max_executions }),
        (
            prop::option::of(prop::sample::select(vec!["0 9 * * *", "* * * * *", "bad"])),
            prop::option::of(prop::option::of(0u32..4))
        )
            .prop_map(|(p, m)| C::Update(CronJobPatch {
                pattern: p.map(str::to_string),
                max_executions: m,
                ..CronJobPatch::default()
            })),
        Just(C::Delete),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_the_job_consistent(commands in prop::collection::vec(command(), 1..30)) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (60, Actor::system("scheduler"))).collect();
        let mut steps = vec![(create(Some(2), ExecutionConditions::default()), system_ctx(0))];
        steps.extend(commands.into_iter().zip(timeline(&times)));
        exercise::<CronJob>(&steps);
    }
}

fn naive(s: &str) -> chrono::NaiveDateTime {
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
}

#[test]
fn the_latest_matching_minute_is_found_walking_back() {
    let latest = |p: &str, at: &str, since: &str| {
        CronPattern::parse(p)
            .unwrap()
            .latest_at_or_before(naive(at), naive(since))
            .map(|t| t.to_string())
    };
    // Every 15 minutes: the slot at or before `at`.
    assert_eq!(
        latest("*/15 * * * *", "2026-11-30 12:44", "2026-11-30 00:00").as_deref(),
        Some("2026-11-30 12:30:00")
    );
    assert_eq!(
        latest("*/15 * * * *", "2026-11-30 12:45", "2026-11-30 00:00").as_deref(),
        Some("2026-11-30 12:45:00")
    );
    // Not before the window: nothing.
    assert_eq!(latest("*/15 * * * *", "2026-11-30 12:44", "2026-11-30 12:31"), None);
    // Weekdays at 09:30; 2026-11-30 is a Monday, so Sunday morning finds Friday's slot.
    assert_eq!(
        latest("30 9 * * MON-FRI", "2026-11-29 10:00", "2026-11-01 00:00").as_deref(),
        Some("2026-11-27 09:30:00")
    );
    // Hour rollover: 23:05 daily seen just after midnight is yesterday's.
    assert_eq!(
        latest("5 23 * * *", "2026-11-30 00:01", "2026-11-01 00:00").as_deref(),
        Some("2026-11-29 23:05:00")
    );
    // Yearly (Feb 29): more than a year back is found in a few hundred steps.
    assert_eq!(
        latest("0 0 29 2 *", "2026-11-30 00:00", "2020-01-01 00:00").as_deref(),
        Some("2024-02-29 00:00:00")
    );
    // Day of month OR weekday when both are restricted.
    assert_eq!(
        latest("0 12 1 * SUN", "2026-11-30 13:00", "2026-11-01 00:00").as_deref(),
        Some("2026-11-29 12:00:00")
    );
}

proptest! {
    /// The walk agrees with checking every minute, and never returns a minute outside the window.
    #[test]
    fn latest_matches_a_minute_by_minute_scan(
        minute in prop::sample::select(vec!["*", "0", "*/7", "5-10", "59"]),
        hour in prop::sample::select(vec!["*", "0", "9-17", "*/5", "23"]),
        dom in prop::sample::select(vec!["*", "1", "15-20", "31"]),
        dow in prop::sample::select(vec!["*", "0", "MON-FRI", "6"]),
        back_minutes in 0i64..6_000,
        offset in 0i64..200_000,
    ) {
        use chrono::Timelike;
        let pattern = CronPattern::parse(&format!("{minute} {hour} {dom} * {dow}")).unwrap();
        let at = naive("2026-01-01 00:00") + chrono::Duration::minutes(offset);
        let since = at - chrono::Duration::minutes(back_minutes);
        let scan = (0..=back_minutes).map(|i| at - chrono::Duration::minutes(i)).find(|t| {
            use chrono::Datelike;
            pattern.matches(t.minute() as u8, t.hour() as u8, t.day() as u8, t.month() as u8, t.weekday().num_days_from_sunday() as u8)
        });
        prop_assert_eq!(pattern.latest_at_or_before(at, since), scan);
    }
}
