//! Task runs: the run rules, the four next-status cases, brief decisions, heartbeat re-arm,
//! heartbeat timeout and the scheduler's tick rules.

use super::super::tick::{TickSkip, heartbeat_tick, schedule_tick};
use super::super::*;
use super::{create_with, end, inbox, run};
use crate::testing::*;
use crate::values::AgentRef;
use crate::values::{BriefDecisionSource, Handoff};

fn manual() -> Task {
    run_all::<Task>(&[create_with(|_| {})])
}

fn automated(mode: AutomationMode, f: impl FnOnce(&mut CreateTask)) -> Task {
    run_all::<Task>(&[create_with(|c| {
        c.automation_mode = Some(mode);
        c.heartbeat = HeartbeatConfig {
            interval_secs: Some(600),
            timeout_secs: Some(60),
            ..HeartbeatConfig::default()
        };
        c.schedule.pattern = Some("0 9 * * *".into());
        f(c);
    })])
}

fn next_status(events: &[TaskEvent]) -> Option<TaskStatus> {
    events.iter().rev().find_map(|e| match e {
        TaskEvent::StatusChanged(s) => Some(s.to),
        _ => None,
    })
}

#[test]
fn a_task_without_assignee_runs_on_the_inbox_agent() {
    let (t, events) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let TaskEvent::AssigneeChanged(a) = &events[0] else { panic!("{events:?}") };
    assert_eq!(
        (a.agent_id.as_deref(), a.reason.as_deref()),
        (Some("inbox"), Some("inbox_fallback"))
    );
    assert_eq!(t.assignee_agent_id.as_deref(), Some("inbox"));
    let assigned = run_all::<Task>(&[create_with(|c| c.assignee_agent_id = Some("writer".into()))]);
    let e = refused(&assigned, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    assert!(matches!(e, DomainError::Validation { .. }), "the run must use the assignee: {e}");
    let writer = AgentRef { agent_id: "writer".into(), ..inbox() };
    let cmd = TaskCommand::Run(RunTask {
        topic_id: "tp1".into(),
        operation_id: "op1".into(),
        trigger: RunTrigger::Manual,
        continue_topic: false,
        agent: writer,
        extra_prompt: None,
    });
    let (_, events) = apply(assigned, &cmd, &system_ctx(1));
    assert!(!types(&events).contains(&"task.assignee_changed"));
}

#[test]
fn a_running_topic_is_a_conflict() {
    let (t, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let e = refused(&t, &run("tp2", "op2", RunTrigger::Manual), &system_ctx(2));
    assert_eq!(e, DomainError::TopicRunning { task_id: "t1".into(), topic_id: "tp1".into() });
    let mut cont = run("tp1", "op2", RunTrigger::Manual);
    if let TaskCommand::Run(r) = &mut cont {
        r.continue_topic = true;
    }
    assert!(matches!(refused(&t, &cont, &system_ctx(2)), DomainError::TopicRunning { .. }));
}

#[test]
fn stale_topics_are_timed_out_before_the_conflict_check() {
    let t = automated(AutomationMode::Heartbeat, |_| {}); // timeout 60 s
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Heartbeat), &system_ctx(1));
    assert!(matches!(
        refused(&t, &run("tp2", "op2", RunTrigger::Heartbeat), &system_ctx(61)),
        DomainError::TopicRunning { .. }
    ));
    let (t, events) = apply(t, &run("tp2", "op2", RunTrigger::Heartbeat), &system_ctx(62));
    assert_eq!(types(&events), ["task.topics_timed_out", "task.topic_started"]);
    assert_eq!(t.topics["tp1"].status, TopicStatus::Timeout);
    assert_eq!(t.topics["tp2"].seq, 2);
}

#[test]
fn a_failed_start_rolls_back_only_what_this_run_set() {
    // this run set running: manual → paused, automated → scheduled, with the error
    let (t, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let failed =
        |topic: &str| TaskCommand::RunFailed { topic_id: topic.into(), error: "no worker".into() };
    let (t, events) = apply(t, &failed("tp1"), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Paused));
    assert_eq!(t.error.as_deref(), Some("no worker"));
    let auto = automated(AutomationMode::Schedule, |_| {});
    let (auto, _) = apply(auto, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let (_, events) = apply(auto, &failed("tp1"), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Scheduled));

    // this run found the task already running (a stale run was timed out): no rollback
    let t = automated(AutomationMode::Heartbeat, |_| {});
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Heartbeat), &system_ctx(1));
    let (t, started) = apply(t, &run("tp2", "op2", RunTrigger::Heartbeat), &system_ctx(100));
    assert!(!types(&started).contains(&"task.status_changed"));
    let (t, events) = apply(t, &failed("tp2"), &system_ctx(101));
    assert_eq!(types(&events), ["task.topic_failed"]);
    assert_eq!(t.status, TaskStatus::Running);
}

#[test]
fn model_and_provider_are_snapshotted_once() {
    let (t, first) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    assert!(types(&first).contains(&"task.model_snapshotted"));
    assert_eq!((t.config.model.as_deref(), t.config.provider.as_deref()), (Some("m1"), Some("p1")));
    let (t, _) = apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
    let (_, second) = apply(t, &run("tp2", "op2", RunTrigger::Manual), &system_ctx(3));
    assert!(!types(&second).contains(&"task.model_snapshotted"));
}

#[test]
fn the_next_run_starts_from_the_last_hand_off_and_respects_the_topic_quota() {
    let t = run_all::<Task>(&[create_with(|c| c.max_topics = Some(2))]);
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let (t, _) = apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
    let (t, events) = apply(t, &run("tp2", "op2", RunTrigger::Manual), &system_ctx(3));
    let Some(TaskEvent::TopicStarted(s)) = events.last() else { panic!() };
    assert_eq!(s.previous_handoff_topic_id.as_deref(), Some("tp1"));
    let (t, _) = apply(t, &end("tp2", "op2", TopicEnd::Done, RunTrigger::Manual), &system_ctx(4));
    let e = refused(&t, &run("tp3", "op3", RunTrigger::Manual), &system_ctx(5));
    assert!(matches!(e, DomainError::LimitExceeded { max: 2, .. }));
}

// ---- onTopicComplete: the four next-status cases -------------------------------------

#[test]
fn case_1_automated_and_quota_reached_completes() {
    let t = automated(AutomationMode::Schedule, |c| c.max_topics = Some(1));
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Schedule), &system_ctx(1));
    let (t, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Schedule), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Completed));
    assert_eq!(t.status, TaskStatus::Completed);

    // the schedule's max executions, counted in the window the user opened
    let t = automated(AutomationMode::Schedule, |c| c.schedule.max_executions = Some(1));
    let (t, _) = apply(
        t,
        &TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None },
        &system_ctx(1),
    );
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Schedule), &system_ctx(2));
    let (_, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Schedule), &system_ctx(3));
    assert_eq!(next_status(&events), Some(TaskStatus::Completed));
}

#[test]
fn case_2_automated_with_quota_left_is_scheduled_never_paused() {
    for mode in [AutomationMode::Schedule, AutomationMode::Heartbeat] {
        let t = automated(mode, |c| c.max_topics = Some(5));
        let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
        let (t, events) =
            apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
        assert_eq!(next_status(&events), Some(TaskStatus::Scheduled), "{mode:?}");
        assert_eq!(t.error, None);
    }
    // a schedule window without a start (pre-window tasks) still parks at scheduled
    let t = automated(AutomationMode::Schedule, |c| c.schedule.max_executions = Some(1));
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Schedule), &system_ctx(1));
    let (_, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Schedule), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Scheduled));
}

#[test]
fn case_3_error_pauses_with_an_urgent_error_brief() {
    use crate::briefs::{BriefPriority, BriefType};
    use crate::signal::policy::{Reaction, on_topic_failed};
    let (t, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let err =
        TopicEnd::Error { message: "provider down".into(), code: Some("provider_error".into()) };
    let (t, events) = apply(t, &end("tp1", "op1", err, RunTrigger::Manual), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Paused));
    assert_eq!(t.error.as_deref(), Some("provider down"));
    assert_eq!(t.topics["tp1"].status, TopicStatus::Failed);
    let failed = events
        .iter()
        .find_map(|e| if let TaskEvent::TopicFailed(f) = e { Some(f) } else { None })
        .unwrap();
    let reactions = on_topic_failed(&t, failed);
    let [Reaction::CreateBrief(brief)] = reactions.as_slice() else { panic!("{reactions:?}") };
    assert_eq!((brief.brief_type, brief.priority), (BriefType::Error, BriefPriority::Urgent));
    assert!(
        !brief.title.contains("t1") && brief.title.contains("Weekly report"),
        "user-facing copy: {}",
        brief.title
    );
}

#[test]
fn case_3_variants_automated_errors_follow_the_trigger_and_the_fuse() {
    let err = || TopicEnd::Error { message: "boom".into(), code: None };
    // a manual run of an automated task goes back to scheduled
    let t = automated(AutomationMode::Schedule, |_| {});
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let (t, events) = apply(t, &end("tp1", "op1", err(), RunTrigger::Manual), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Scheduled));
    assert_eq!(t.consecutive_failures, 0, "manual runs do not touch the fuse");
    // schedule ticks: scheduled below the fuse, paused at the third failure in a row
    let mut t = t;
    for (i, expected) in
        [TaskStatus::Scheduled, TaskStatus::Scheduled, TaskStatus::Paused].into_iter().enumerate()
    {
        let (topic, op) = (format!("s{i}"), format!("os{i}"));
        t = apply(t, &run(&topic, &op, RunTrigger::Schedule), &system_ctx(10 + i as i64 * 10)).0;
        let (next, events) = apply(
            t,
            &end(&topic, &op, err(), RunTrigger::Schedule),
            &system_ctx(11 + i as i64 * 10),
        );
        assert_eq!(next_status(&events), Some(expected), "failure {}", i + 1);
        t = next;
    }
    assert_eq!(t.consecutive_failures, 3);
}

#[test]
fn case_4_not_automated_pauses_for_a_human_unless_told_not_to() {
    let (t, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let (t, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
    assert_eq!(next_status(&events), Some(TaskStatus::Paused));
    assert_eq!(t.topics["tp1"].status, TopicStatus::Completed);
    let no_pause = run_all::<Task>(&[create_with(|c| c.config.pause_after_topic = Some(false))]);
    let (t, _) = apply(no_pause, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let (_, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
    assert_eq!(next_status(&events), None, "no status update");
}

#[test]
fn any_other_end_cancels_the_topic_and_pauses() {
    let (t, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let (t, events) = apply(
        t,
        &end("tp1", "op1", TopicEnd::Other { detail: "interrupted".into() }, RunTrigger::Manual),
        &system_ctx(2),
    );
    assert_eq!(
        types(&events),
        ["task.heartbeat_recorded", "task.topic_canceled", "task.status_changed"]
    );
    assert_eq!((t.status, t.topics["tp1"].status), (TaskStatus::Paused, TopicStatus::Canceled));
}

#[test]
fn completing_needs_the_running_topic_and_its_operation() {
    let (t, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    assert!(matches!(
        refused(&t, &end("tp1", "other-op", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2)),
        DomainError::Validation { .. }
    ));
    assert!(matches!(
        refused(&t, &end("zz", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2)),
        DomainError::NotFound { .. }
    ));
    let (t, _) = apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
    assert!(matches!(
        refused(&t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(3)),
        DomainError::InvalidTransition { .. }
    ));
}

#[test]
fn brief_decision_rules_follow_upstream_synthesize() {
    let content = Some("A substantive summary of what was done.");
    let err = TopicEnd::Error { message: "x".into(), code: None };
    assert!(matches!(
        should_emit_topic_brief(&err, RunTrigger::Heartbeat, true, None),
        BriefVerdict::Yes(_)
    ));
    assert!(matches!(
        should_emit_topic_brief(&TopicEnd::Done, RunTrigger::Manual, true, content),
        BriefVerdict::No(_)
    ));
    assert!(matches!(
        should_emit_topic_brief(&TopicEnd::Done, RunTrigger::Heartbeat, false, content),
        BriefVerdict::Unknown(_)
    ));
    assert!(matches!(
        should_emit_topic_brief(&TopicEnd::Done, RunTrigger::Schedule, false, Some("ok")),
        BriefVerdict::Yes(_)
    ));
    assert!(matches!(
        should_emit_topic_brief(&TopicEnd::Done, RunTrigger::Manual, false, Some("   ok  ")),
        BriefVerdict::No(_)
    ));
    assert!(matches!(
        should_emit_topic_brief(&TopicEnd::Done, RunTrigger::Manual, false, None),
        BriefVerdict::No(_)
    ));
    assert!(matches!(
        should_emit_topic_brief(&TopicEnd::Done, RunTrigger::Manual, false, content),
        BriefVerdict::Unknown(_)
    ));
}

#[test]
fn the_brief_decision_is_recorded_in_the_hand_off_and_drives_the_result_brief() {
    use crate::signal::policy::{Reaction, on_topic_completed};
    let t = automated(AutomationMode::Schedule, |_| {});
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Schedule), &system_ctx(1));
    let (t, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Schedule), &system_ctx(2));
    let completed = events
        .iter()
        .find_map(|e| if let TaskEvent::TopicCompleted(c) = e { Some(c) } else { None })
        .unwrap();
    let decision = completed.handoff.brief_decision.as_ref().unwrap();
    assert!(decision.emit && decision.source == BriefDecisionSource::Rule);
    assert_eq!(
        completed.handoff.content.as_deref(),
        Some("A substantive summary of what was done.")
    );
    assert!(
        matches!(on_topic_completed(&t, completed).as_slice(), [Reaction::CreateBrief(b)] if b.brief_type == crate::briefs::BriefType::Result)
    );

    // a manual run defers to the judge the worker passed in; none given → the default rule:
    // substantive content gets its brief; the judge saying no → none
    let (m, _) = apply(manual(), &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let mut judged = end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual);
    if let TaskCommand::CompleteTopic(o) = &mut judged {
        o.brief_judgement = Some(true);
    }
    let (_, events) = apply(m.clone(), &judged, &system_ctx(2));
    let c = events
        .iter()
        .find_map(|e| if let TaskEvent::TopicCompleted(c) = e { Some(c) } else { None })
        .unwrap();
    assert_eq!(
        c.handoff.brief_decision.as_ref().map(|d| (d.emit, d.source)),
        Some((true, BriefDecisionSource::LlmJudge))
    );
    let (m2, events) =
        apply(m.clone(), &end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual), &system_ctx(2));
    let c = events
        .iter()
        .find_map(|e| if let TaskEvent::TopicCompleted(c) = e { Some(c) } else { None })
        .unwrap();
    assert_eq!(
        c.handoff.brief_decision.as_ref().map(|d| (d.emit, d.source)),
        Some((true, BriefDecisionSource::Rule))
    );
    assert_eq!(on_topic_completed(&m2, c).len(), 1);
    let mut refused = end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual);
    if let TaskCommand::CompleteTopic(o) = &mut refused {
        o.brief_judgement = Some(false);
    }
    let (m3, events) = apply(m, &refused, &system_ctx(2));
    let c = events
        .iter()
        .find_map(|e| if let TaskEvent::TopicCompleted(c) = e { Some(c) } else { None })
        .unwrap();
    assert!(on_topic_completed(&m3, c).is_empty());
}

#[test]
fn heartbeat_rearm_skips_fuse_and_human_waiting() {
    let hb = || automated(AutomationMode::Heartbeat, |c| c.heartbeat.timeout_secs = None);
    let (t, _) = apply(hb(), &run("tp1", "op1", RunTrigger::Heartbeat), &system_ctx(1));
    let (t, events) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Heartbeat), &system_ctx(2));
    assert_eq!(types(&events).last(), Some(&"task.heartbeat_scheduled"));
    assert_eq!(t.next_tick_at, Some(at(602)));
    assert_eq!(t.consecutive_failures, 0);

    let (t, _) = apply(hb(), &run("tp1", "op1", RunTrigger::Heartbeat), &system_ctx(1));
    let mut waiting = end("tp1", "op1", TopicEnd::Done, RunTrigger::Heartbeat);
    if let TaskCommand::CompleteTopic(o) = &mut waiting {
        o.human_waiting = true;
    }
    let (_, events) = apply(t, &waiting, &system_ctx(2));
    assert!(
        !types(&events).contains(&"task.heartbeat_scheduled"),
        "a human is waiting on an urgent brief"
    );

    let mut t = hb();
    for i in 0..3 {
        let (topic, op) = (format!("h{i}"), format!("oh{i}"));
        t = apply(t, &run(&topic, &op, RunTrigger::Heartbeat), &system_ctx(10 * i + 1)).0;
        let err = TopicEnd::Error { message: "boom".into(), code: None };
        let (next, events) =
            apply(t, &end(&topic, &op, err, RunTrigger::Heartbeat), &system_ctx(10 * i + 2));
        assert_eq!(types(&events).contains(&"task.heartbeat_scheduled"), i < 2, "error {}", i + 1);
        t = next;
    }
    assert_eq!(t.status, TaskStatus::Paused, "the blown fuse pauses for a human");
    let (t, _) = apply(t, &run("h9", "oh9", RunTrigger::Manual), &system_ctx(100));
    let (t, _) = apply(t, &end("h9", "oh9", TopicEnd::Done, RunTrigger::Manual), &system_ctx(101));
    assert_eq!(t.consecutive_failures, 0, "success resets the fuse");
}

#[test]
fn lazy_heartbeat_timeout_pauses_a_stale_running_task() {
    let t = automated(AutomationMode::Heartbeat, |_| {}); // timeout 60 s
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    assert!(matches!(
        refused(&t, &TaskCommand::CheckHeartbeatTimeout, &system_ctx(61)),
        DomainError::NotDue { .. }
    ));
    let (t, events) = apply(t, &TaskCommand::CheckHeartbeatTimeout, &system_ctx(62));
    assert_eq!(types(&events), ["task.topics_timed_out", "task.status_changed"]);
    assert_eq!((t.status, t.error.as_deref()), (TaskStatus::Paused, Some("Heartbeat timeout")));
    assert_eq!(t.topics["tp1"].status, TopicStatus::Timeout);
}

#[test]
fn the_heartbeat_deadline_is_the_first_instant_the_heartbeat_is_stale() {
    let last = chrono::DateTime::parse_from_rfc3339("2026-11-30T10:00:00.250Z")
        .expect("a time")
        .with_timezone(&chrono::Utc);
    for timeout in [0u64, 1, 59, 3_600, 86_400 * 365] {
        let mut t = automated(AutomationMode::Heartbeat, |_| {});
        (t.heartbeat.timeout_secs, t.last_heartbeat_at) = (Some(timeout), Some(last));
        let deadline = t.heartbeat_deadline().expect("a deadline");
        assert_eq!(deadline, heartbeat_deadline(last, timeout).expect("a deadline"));
        let secs = i64::try_from(timeout).expect("small") + 1;
        assert_eq!(deadline, last + chrono::Duration::seconds(secs), "{timeout}");
        assert!(!t.heartbeat_stale(deadline - chrono::Duration::microseconds(1)), "{timeout}");
        assert!(t.heartbeat_stale(deadline), "{timeout}");
    }
    // A timeout past the end of time: never stale, no deadline.
    assert_eq!(heartbeat_deadline(last, u64::MAX), None);
    assert_eq!(heartbeat_deadline(last, i64::MAX as u64 / 1_000), None);
    let mut t = automated(AutomationMode::Heartbeat, |_| {});
    (t.heartbeat.timeout_secs, t.last_heartbeat_at) = (None, Some(last));
    assert_eq!(t.heartbeat_deadline(), None);
}

#[test]
fn heartbeat_tick_rules() {
    let t = automated(AutomationMode::Heartbeat, |_| {});
    let (t, _) = apply(
        t,
        &TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None },
        &system_ctx(1),
    );
    let token = t.tick_token.clone().unwrap();
    assert_eq!(heartbeat_tick(&Task::default(), Some(&token), false), Err(TickSkip::NotFound));
    assert_eq!(heartbeat_tick(&t, Some("old"), false), Err(TickSkip::StaleTick));
    assert_eq!(
        heartbeat_tick(&t, None, false),
        Err(TickSkip::StaleTick),
        "a tokenless tick while a generation is active"
    );
    assert_eq!(heartbeat_tick(&t, Some(&token), true), Err(TickSkip::HumanWaiting));
    assert_eq!(heartbeat_tick(&t, Some(&token), false), Ok(()));
    let legacy = automated(AutomationMode::Heartbeat, |_| {});
    assert_eq!(
        heartbeat_tick(&legacy, None, false),
        Ok(()),
        "legacy tokenless tick, no active generation"
    );
    let (running, _) = apply(t.clone(), &run("tp1", "op1", RunTrigger::Heartbeat), &system_ctx(2));
    assert_eq!(heartbeat_tick(&running, Some(&token), false), Err(TickSkip::InFlight));
    let (paused, _) = apply(
        t.clone(),
        &TaskCommand::ChangeStatus { to: TaskStatus::Paused, error: None },
        &system_ctx(2),
    );
    assert_eq!(heartbeat_tick(&paused, Some(&token), false), Err(TickSkip::Paused));
    let (done, _) = apply(
        t.clone(),
        &TaskCommand::ChangeStatus { to: TaskStatus::Completed, error: None },
        &system_ctx(2),
    );
    assert_eq!(heartbeat_tick(&done, Some(&token), false), Err(TickSkip::Terminal));
    let mode = TaskCommand::ConfigureAutomation {
        mode: Some(AutomationMode::Schedule),
        heartbeat: t.heartbeat,
        schedule: t.schedule.clone(),
    };
    let (changed, _) = apply(t, &mode, &system_ctx(2));
    assert_eq!(heartbeat_tick(&changed, Some(&token), false), Err(TickSkip::ModeChanged));
}

#[test]
fn schedule_tick_rules() {
    let t = automated(AutomationMode::Schedule, |c| c.schedule.max_executions = Some(1));
    assert_eq!(schedule_tick(&Task::default(), false), Err(TickSkip::NotFound));
    assert_eq!(schedule_tick(&t, false), Ok(()), "no window opened yet: runs");
    let (t, _) = apply(
        t,
        &TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None },
        &system_ctx(1),
    );
    assert_eq!(schedule_tick(&t, true), Err(TickSkip::HumanWaiting));
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Schedule), &system_ctx(2));
    assert_eq!(schedule_tick(&t, false), Err(TickSkip::InFlight));
    let (t, _) = apply(t, &TaskCommand::CancelTopic { topic_id: "tp1".into() }, &system_ctx(3));
    assert_eq!(schedule_tick(&t, false), Err(TickSkip::Paused), "paused is checked before the cap");
    let (t, _) = apply(
        t,
        &TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None },
        &system_ctx(4),
    );
    assert_eq!(schedule_tick(&t, false), Ok(()), "a new window after a restart");
    let (t, _) = apply(t, &run("tp2", "op2", RunTrigger::Schedule), &system_ctx(5));
    let (t, _) = apply(t, &TaskCommand::CancelTopic { topic_id: "tp2".into() }, &system_ctx(6));
    let (t, _) = apply(
        t,
        &TaskCommand::ChangeStatus { to: TaskStatus::Backlog, error: None },
        &system_ctx(7),
    );
    assert_eq!(schedule_tick(&t, false), Err(TickSkip::MaxExecutionsReached));
    let manual = run_all::<Task>(&[create_with(|_| {})]);
    assert_eq!(schedule_tick(&manual, false), Err(TickSkip::ModeChanged));
}

#[test]
fn the_next_runs_prompt_carries_the_last_hand_off() {
    let t = manual();
    assert_eq!(
        crate::rules::task_run::run_prompt(&t),
        t.instruction,
        "no run yet: the instruction alone"
    );
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Manual), &system_ctx(1));
    let TaskCommand::CompleteTopic(mut outcome) =
        end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual)
    else {
        panic!()
    };
    outcome.handoff = Some(Handoff {
        title: Some("Drafted the release notes".into()),
        summary: Some("Sections 1-3 done".into()),
        key_findings: vec!["the changelog misses 2 PRs".into()],
        next_action: Some("write section 4".into()),
        ..Handoff::default()
    });
    let (t, _) = apply(t, &TaskCommand::CompleteTopic(outcome), &system_ctx(2));
    let prompt = crate::rules::task_run::run_prompt(&t);
    assert!(prompt.starts_with(&t.instruction), "{prompt}");
    for part in [
        "Last run: Drafted the release notes",
        "Summary: Sections 1-3 done",
        "- the changelog misses 2 PRs",
        "Next action: write section 4",
    ] {
        assert!(prompt.contains(part), "{part} missing from {prompt}");
    }
    // A failed run does not replace the hand-off the next run starts from.
    let (t, _) = apply(t, &run("tp2", "op2", RunTrigger::Manual), &system_ctx(3));
    let failed = end(
        "tp2",
        "op2",
        TopicEnd::Error { message: "boom".into(), code: None },
        RunTrigger::Manual,
    );
    let (t, _) = apply(t, &failed, &system_ctx(4));
    assert_eq!(crate::rules::task_run::run_prompt(&t), prompt);
}

#[test]
fn an_idle_tick_is_skipped_until_new_input() {
    use super::super::tick::new_input;
    let t = automated(AutomationMode::Heartbeat, |c| c.heartbeat.require_input = true);
    let (t, _) = apply(
        t,
        &TaskCommand::ChangeStatus { to: TaskStatus::Scheduled, error: None },
        &system_ctx(1),
    );
    assert!(new_input(&t, None), "no run yet");
    let skip = |t: &Task, deps| TaskCommand::SkipIdleTick {
        tick_token: t.tick_token.clone().unwrap(),
        dependency_finished_at: deps,
    };
    assert_eq!(variant(&refused(&t, &skip(&t, None), &system_ctx(2))), "Validation");
    let (t, _) = apply(t, &run("tp1", "op1", RunTrigger::Heartbeat), &system_ctx(2));
    let (t, _) =
        apply(t, &end("tp1", "op1", TopicEnd::Done, RunTrigger::Heartbeat), &system_ctx(3));
    assert!(!new_input(&t, None), "nothing since the run started");
    assert!(new_input(&t, Some(at(2))), "a dependency finished since");
    let (t, events) = apply(t.clone(), &skip(&t, None), &system_ctx(10));
    assert_eq!(types(&events), ["task.tick_skipped", "task.heartbeat_scheduled"]);
    assert_eq!((t.skipped_ticks, t.last_skipped_tick_at), (1, Some(at(10))));
    // An agent's comment is the run's own; a user's is new input.
    let comment = |id: &str, author| TaskCommand::AddComment {
        comment_id: id.into(),
        author,
        content: "x".into(),
        brief_id: None,
        topic_id: None,
    };
    let (t, _) = apply(t, &comment("c1", CommentAuthor::Agent("a1".into())), &system_ctx(11));
    assert!(!new_input(&t, None));
    let (t, _) = apply(t, &comment("c2", CommentAuthor::User("u1".into())), &system_ctx(12));
    assert!(new_input(&t, None));
    assert_eq!(variant(&refused(&t, &skip(&t, None), &system_ctx(13))), "Validation");
}
