//! The scheduler reads only what is due: each cron job's and scheduled task's next due instant,
//! a heartbeat task's tick and a running task's heartbeat deadline are kept by the read models
//! (pure functions of the log, behind indexes), and a pass takes its candidates from them. With
//! the clock driven by the test on the in-process server: many jobs and tasks whose time has not
//! come are not candidates; the one whose slot passed is, alone; the due instant moves on after a
//! fire, an edit of the pattern or time zone, a disable and enable, across a daylight-saving gap,
//! and past what a job's conditions allow; a task with a run in flight or paused is not read.

use agentlog_api::{reactors::scheduler, state::AppState};
use agentlog_domain::{
    context::Context,
    cron_jobs::{ActiveHours, CronCommand, CronJob, CronJobPatch, ExecutionConditions},
    envelope::Actor,
    tasks::{
        AutomationMode, CreateTask, HeartbeatConfig, RunTrigger, ScheduleConfig, Task, TaskCommand, TaskStatus,
        TopicEnd, TopicOutcome,
    },
};
use agentlog_projections::{cron_jobs, tasks};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    scheduling::{app, at, caught_up, create_job},
    support::Db,
};

const OWNER: &str = "alice";

fn ctx(now: DateTime<Utc>) -> Context {
    Context::new(now, Uuid::now_v7(), Actor::user(OWNER), OWNER)
}

/// The ids of the cron jobs due at `now`.
async fn jobs_due(s: &AppState, now: &str) -> Vec<String> {
    let due = cron_jobs::jobs_due(&s.db, None, at(now)).await.expect("jobs due");
    due.into_iter().map(|j| j.job_id).collect()
}

/// Job `id`'s due instant.
async fn next_due(s: &AppState, id: &str) -> Option<DateTime<Utc>> {
    cron_jobs::cron_job(&s.db, OWNER, id).await.expect("read").expect("the job").next_due_at
}

async fn change_job(s: &AppState, id: &str, command: CronCommand, now: &str) {
    let stream = format!("cron-{id}");
    s.handler.execute_stream::<CronJob>(&stream, &command, &ctx(at(now))).await.expect("change the job");
    caught_up(&[s]).await;
}

async fn pass(s: &AppState, now: &str) -> scheduler::PassReport {
    let report = scheduler::pass(s, at(now)).await.expect("pass");
    caught_up(&[s]).await;
    report
}

async fn a_pass_reads_only_the_cron_jobs_due(db: Db) {
    let s = app(&db).await;
    let t0 = at("2026-11-30T08:00:30Z");
    for i in 0..40 {
        create_job(&s, &format!("daily{i}"), "0 9 * * *", "UTC", None, t0).await;
    }
    create_job(&s, "five", "*/5 * * * *", "UTC", None, t0).await;
    caught_up(&[&s]).await;
    assert_eq!(next_due(&s, "daily0").await, Some(at("2026-11-30T09:00:00Z")));
    assert_eq!(next_due(&s, "five").await, Some(at("2026-11-30T08:05:00Z")));

    // Forty-one jobs, none due: none is read, nothing happens.
    assert!(jobs_due(&s, "2026-11-30T08:04:59Z").await.is_empty());
    assert_eq!(pass(&s, "2026-11-30T08:04:59Z").await, scheduler::PassReport::default());
    // One slot passed: that job alone is due, and fires; then it is not due until its next.
    assert_eq!(jobs_due(&s, "2026-11-30T08:05:10Z").await, ["five"]);
    assert_eq!(pass(&s, "2026-11-30T08:05:10Z").await.cron_fired, ["five@2026-11-30T08:05"]);
    assert_eq!(next_due(&s, "five").await, Some(at("2026-11-30T08:10:00Z")));
    assert!(jobs_due(&s, "2026-11-30T08:09:59Z").await.is_empty());

    // Two days down: every job is due, each fires its latest slot once, then none is due.
    assert_eq!(jobs_due(&s, "2026-12-02T10:00:30Z").await.len(), 41);
    let r = pass(&s, "2026-12-02T10:00:30Z").await;
    assert_eq!(r.cron_fired.len(), 41, "{r:?}");
    assert!(r.cron_fired.contains(&"daily7@2026-12-02T09:00".to_string()), "{r:?}");
    assert!(r.cron_fired.contains(&"five@2026-12-02T10:00".to_string()), "{r:?}");
    assert!(jobs_due(&s, "2026-12-02T10:04:59Z").await.is_empty());
    assert_eq!(next_due(&s, "daily7").await, Some(at("2026-12-03T09:00:00Z")));
    assert_eq!(pass(&s, "2026-12-02T10:04:59Z").await, scheduler::PassReport::default());
}

async fn a_jobs_due_instant_follows_its_fires_edits_and_toggles(db: Db) {
    let s = app(&db).await;
    create_job(&s, "j", "0 9 * * *", "UTC", None, at("2026-11-30T08:00:30Z")).await;
    caught_up(&[&s]).await;
    assert_eq!(next_due(&s, "j").await, Some(at("2026-11-30T09:00:00Z")));
    assert_eq!(pass(&s, "2026-11-30T09:00:10Z").await.cron_fired, ["j@2026-11-30T09:00"]);
    assert_eq!(next_due(&s, "j").await, Some(at("2026-12-01T09:00:00Z")));

    // A new pattern resets the last fire: due from the job's creation on, so the new pattern's
    // latest slot fires at once (as before), then its next.
    let pattern = CronJobPatch { pattern: Some("30 8 * * *".into()), ..CronJobPatch::default() };
    change_job(&s, "j", CronCommand::Update(pattern), "2026-11-30T09:05:00Z").await;
    assert_eq!(next_due(&s, "j").await, Some(at("2026-11-30T08:30:00Z")));
    assert_eq!(pass(&s, "2026-11-30T09:05:10Z").await.cron_fired, ["j@2026-11-30T08:30"]);
    assert_eq!(next_due(&s, "j").await, Some(at("2026-12-01T08:30:00Z")));

    // A new zone: 08:30 in Tokyo, the first after the job's creation (17:00 there).
    let zone = CronJobPatch { timezone: Some("Asia/Tokyo".into()), ..CronJobPatch::default() };
    change_job(&s, "j", CronCommand::Update(zone), "2026-11-30T09:10:00Z").await;
    assert_eq!(next_due(&s, "j").await, Some(at("2026-11-30T23:30:00Z")));
    assert!(pass(&s, "2026-11-30T09:10:10Z").await.cron_fired.is_empty());

    // Disabled: never due; enabled again: the same instant.
    change_job(&s, "j", CronCommand::Disable, "2026-11-30T09:15:00Z").await;
    assert_eq!(next_due(&s, "j").await, None);
    assert!(jobs_due(&s, "2030-01-01T00:00:00Z").await.is_empty());
    change_job(&s, "j", CronCommand::Enable, "2026-11-30T09:20:00Z").await;
    assert_eq!(next_due(&s, "j").await, Some(at("2026-11-30T23:30:00Z")));
    assert_eq!(pass(&s, "2026-11-30T23:30:10Z").await.cron_fired, ["j@2026-12-01T08:30"]);
}

/// A job its conditions keep from firing is not due (not read and skipped on every pass): the
/// daily maximum reached, it is due at the first allowed slot of the next day.
async fn a_jobs_due_instant_respects_its_conditions(db: Db) {
    let s = app(&db).await;
    create_job(&s, "k", "*/5 * * * *", "UTC", None, at("2026-11-30T08:00:30Z")).await;
    let conditions = ExecutionConditions {
        active_hours: Some(ActiveHours { start: 8, end: 18 }),
        max_executions_per_day: Some(1),
        ..ExecutionConditions::default()
    };
    let patch = CronJobPatch { conditions: Some(conditions), ..CronJobPatch::default() };
    change_job(&s, "k", CronCommand::Update(patch), "2026-11-30T08:00:40Z").await;
    assert_eq!(next_due(&s, "k").await, Some(at("2026-11-30T08:05:00Z")));
    assert_eq!(pass(&s, "2026-11-30T08:05:10Z").await.cron_fired, ["k@2026-11-30T08:05"]);
    assert_eq!(next_due(&s, "k").await, Some(at("2026-12-01T08:00:00Z")));
    assert!(jobs_due(&s, "2026-11-30T23:59:59Z").await.is_empty());
    assert_eq!(pass(&s, "2026-11-30T08:10:10Z").await, scheduler::PassReport::default());
    assert_eq!(pass(&s, "2026-12-01T08:00:10Z").await.cron_fired, ["k@2026-12-01T08:00"]);
}

/// 2026-03-29 02:30 does not exist in Berlin: a daily 02:30 job is due on the 30th, and a pass
/// in the gap's night reads nothing.
async fn a_jobs_due_instant_skips_a_daylight_saving_gap(db: Db) {
    let s = app(&db).await;
    create_job(&s, "g", "30 2 * * *", "Europe/Berlin", None, at("2026-03-28T12:00:00Z")).await;
    caught_up(&[&s]).await;
    assert_eq!(next_due(&s, "g").await, Some(at("2026-03-30T00:30:00Z")));
    assert!(jobs_due(&s, "2026-03-29T01:31:00Z").await.is_empty());
    assert_eq!(pass(&s, "2026-03-29T01:31:00Z").await, scheduler::PassReport::default());
    assert_eq!(pass(&s, "2026-03-30T00:30:10Z").await.cron_fired, ["g@2026-03-30T02:30"]);
    assert_eq!(next_due(&s, "g").await, Some(at("2026-03-31T00:30:00Z")));
}

async fn change_task(s: &AppState, id: &str, command: TaskCommand, now: &str) {
    s.handler.execute_of::<Task>(OWNER, id, &command, &ctx(at(now))).await.expect("change the task");
    caught_up(&[s]).await;
}

async fn scheduled_task(s: &AppState, id: &str, pattern: &str, timeout_secs: Option<u64>, now: &str) {
    let mut create = CreateTask::new(id, id.to_uppercase(), format!("do {id}"));
    create.automation_mode = Some(AutomationMode::Schedule);
    create.schedule = ScheduleConfig { pattern: Some(pattern.into()), timezone: "UTC".into(), max_executions: None };
    create.heartbeat = HeartbeatConfig { timeout_secs, ..HeartbeatConfig::default() };
    change_task(s, id, TaskCommand::Create(create), now).await;
    change_task(s, id, TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None }, now).await;
}

async fn task_row(s: &AppState, id: &str) -> tasks::TaskRow {
    tasks::task(&s.db, OWNER, id).await.expect("read").expect("the task")
}

fn owned(id: &str) -> Vec<(String, String)> {
    vec![(OWNER.to_string(), id.to_string())]
}

/// Complete the running topic of a task's run (as the run's end would), from the pass that
/// started it (`task:topic`).
async fn complete_run(s: &AppState, started: &str, trigger: RunTrigger, now: &str) {
    let (task_id, topic_id) = started.split_once(':').expect("task:topic");
    let topic = tasks::task_topic(&s.db, OWNER, topic_id).await.expect("read").expect("the topic");
    let outcome = TopicOutcome {
        topic_id: topic_id.into(),
        operation_id: topic.operation_id,
        end: TopicEnd::Done,
        run_trigger: trigger,
        handoff: None,
        last_assistant_content: Some("A substantive summary of the work.".into()),
        human_waiting: false,
        brief_judgement: None,
    };
    change_task(s, task_id, TaskCommand::CompleteTopic(outcome), now).await;
}

async fn a_pass_reads_only_the_scheduled_tasks_due(db: Db) {
    let s = app(&db).await;
    for i in 0..20 {
        scheduled_task(&s, &format!("daily{i}"), "0 9 * * *", None, "2026-11-30T08:00:30Z").await;
    }
    scheduled_task(&s, "s1", "*/10 * * * *", Some(600), "2026-11-30T08:00:30Z").await;
    assert_eq!(task_row(&s, "daily0").await.next_schedule_at, Some(at("2026-11-30T09:00:00Z")));
    assert_eq!(task_row(&s, "s1").await.next_schedule_at, Some(at("2026-11-30T08:10:00Z")));
    assert!(tasks::schedules_due(&s.db, at("2026-11-30T08:09:59Z")).await.expect("due").is_empty());
    assert_eq!(pass(&s, "2026-11-30T08:09:59Z").await, scheduler::PassReport::default());

    assert_eq!(tasks::schedules_due(&s.db, at("2026-11-30T08:10:05Z")).await.expect("due"), owned("s1"));
    let r = pass(&s, "2026-11-30T08:10:05Z").await;
    assert_eq!(r.tasks_run.len(), 1, "{r:?}");
    // A run in flight: not read at its next slot (it would be skipped); its heartbeat deadline
    // is the first second past the timeout.
    let row = task_row(&s, "s1").await;
    assert_eq!((row.running_topics, row.next_schedule_at), (1, None));
    assert_eq!(row.heartbeat_deadline_at, Some(at("2026-11-30T08:20:06Z")));
    assert_eq!(pass(&s, "2026-11-30T08:20:05Z").await, scheduler::PassReport::default());
    assert!(tasks::heartbeat_timeouts_due(&s.db, at("2026-11-30T08:20:05Z")).await.expect("due").is_empty());

    // The run ends: the slot that passed meanwhile is due, and runs.
    complete_run(&s, &r.tasks_run[0], RunTrigger::Schedule, "2026-11-30T08:20:05Z").await;
    let row = task_row(&s, "s1").await;
    assert_eq!(
        (row.status, row.next_schedule_at, row.heartbeat_deadline_at),
        (TaskStatus::Scheduled, Some(at("2026-11-30T08:20:00Z")), None)
    );
    let r = pass(&s, "2026-11-30T08:20:30Z").await;
    assert_eq!(r.tasks_run.len(), 1, "{r:?}");

    // No heartbeat for 600 s: due for its timeout then, and timed out once; paused, never due.
    assert_eq!(tasks::heartbeat_timeouts_due(&s.db, at("2026-11-30T08:30:31Z")).await.expect("due"), owned("s1"));
    assert_eq!(pass(&s, "2026-11-30T08:30:31Z").await.tasks_timed_out, ["s1"]);
    let row = task_row(&s, "s1").await;
    assert_eq!((row.status, row.next_schedule_at, row.heartbeat_deadline_at), (TaskStatus::Paused, None, None));
    assert!(tasks::schedules_due(&s.db, at("2026-11-30T08:59:59Z")).await.expect("due").is_empty());
}

async fn a_pass_reads_only_the_heartbeat_ticks_due(db: Db) {
    let s = app(&db).await;
    let heartbeat = |id: &str, interval: u64| {
        let mut create = CreateTask::new(id, id.to_uppercase(), format!("do {id}"));
        create.automation_mode = Some(AutomationMode::Heartbeat);
        create.heartbeat =
            HeartbeatConfig { interval_secs: Some(interval), timeout_secs: Some(30), require_input: false };
        TaskCommand::Create(create)
    };
    // Twenty heartbeat tasks never started: no tick, never due.
    for i in 0..20 {
        change_task(&s, &format!("idle{i}"), heartbeat(&format!("idle{i}"), 60), "2026-11-30T08:00:00Z").await;
    }
    change_task(&s, "h1", heartbeat("h1", 60), "2026-11-30T08:00:00Z").await;
    // Scheduling it publishes its first tick, due at once.
    let schedule = TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None };
    change_task(&s, "h1", schedule, "2026-11-30T08:00:30Z").await;
    assert_eq!(task_row(&s, "h1").await.heartbeat_tick_due_at, Some(at("2026-11-30T08:00:30Z")));
    assert!(tasks::heartbeat_ticks_due(&s.db, at("2026-11-30T08:00:29Z")).await.expect("due").is_empty());
    assert_eq!(tasks::heartbeat_ticks_due(&s.db, at("2026-11-30T08:00:30Z")).await.expect("due"), owned("h1"));

    let r = pass(&s, "2026-11-30T08:00:31Z").await;
    assert_eq!(r.tasks_run.len(), 1, "{r:?}");
    let row = task_row(&s, "h1").await;
    assert_eq!((row.heartbeat_tick_due_at, row.heartbeat_deadline_at), (None, Some(at("2026-11-30T08:01:02Z"))));
    assert!(tasks::heartbeat_ticks_due(&s.db, at("2026-11-30T09:00:00Z")).await.expect("due").is_empty());
    assert_eq!(pass(&s, "2026-11-30T08:01:01Z").await, scheduler::PassReport::default());

    // The run ends: its next tick is an interval on.
    complete_run(&s, &r.tasks_run[0], RunTrigger::Heartbeat, "2026-11-30T08:00:50Z").await;
    let row = task_row(&s, "h1").await;
    assert_eq!((row.heartbeat_tick_due_at, row.heartbeat_deadline_at), (Some(at("2026-11-30T08:01:50Z")), None));
    assert!(tasks::heartbeat_ticks_due(&s.db, at("2026-11-30T08:01:49Z")).await.expect("due").is_empty());
    assert_eq!(pass(&s, "2026-11-30T08:01:50Z").await.tasks_run.len(), 1);
}

both!(
    a_pass_reads_only_the_cron_jobs_due as scheduler_reads_only_cron_jobs_due,
    a_jobs_due_instant_follows_its_fires_edits_and_toggles as scheduler_cron_due_follows_fires_edits_and_toggles,
    a_jobs_due_instant_respects_its_conditions as scheduler_cron_due_respects_conditions,
    a_jobs_due_instant_skips_a_daylight_saving_gap as scheduler_cron_due_skips_a_dst_gap,
    a_pass_reads_only_the_scheduled_tasks_due as scheduler_reads_only_schedules_due,
    a_pass_reads_only_the_heartbeat_ticks_due as scheduler_reads_only_heartbeat_ticks_due
);
