//! Task: the status table, the command table, dependencies, documents, comments, properties.

mod run;

use proptest::prelude::*;

use super::decide::status_change_allowed;
use super::*;
use crate::envelope::Actor;
use crate::testing::*;
use crate::values::AgentRef;

pub(super) fn create_with(f: impl FnOnce(&mut CreateTask)) -> TaskCommand {
    let mut c = CreateTask::new("t1", "T-1", "Write the weekly report");
    c.name = Some("Weekly report".into());
    f(&mut c);
    TaskCommand::Create(c)
}

pub(super) fn inbox() -> AgentRef {
    AgentRef {
        agent_id: "inbox".into(),
        config_version: 1,
        model: Some("m1".into()),
        provider: Some("p1".into()),
    }
}

pub(super) fn run(topic: &str, op: &str, trigger: RunTrigger) -> TaskCommand {
    TaskCommand::Run(RunTask {
        topic_id: topic.into(),
        operation_id: op.into(),
        trigger,
        continue_topic: false,
        agent: inbox(),
        extra_prompt: None,
    })
}

pub(super) fn end(topic: &str, op: &str, how: TopicEnd, trigger: RunTrigger) -> TaskCommand {
    TaskCommand::CompleteTopic(TopicOutcome {
        topic_id: topic.into(),
        operation_id: op.into(),
        end: how,
        run_trigger: trigger,
        handoff: None,
        last_assistant_content: Some("A substantive summary of what was done.".into()),
        human_waiting: false,
        brief_judgement: None,
    })
}

fn to(status: TaskStatus) -> TaskCommand {
    TaskCommand::ChangeStatus { to: status, error: None }
}

fn scheduled_task() -> TaskCommand {
    create_with(|c| {
        c.automation_mode = Some(AutomationMode::Schedule);
        c.schedule.pattern = Some("0 9 * * *".into());
    })
}

/// A schedule-mode task brought to `status`.
fn task_in(status: TaskStatus) -> Task {
    let mut commands = vec![scheduled_task()];
    match status {
        TaskStatus::Backlog => {}
        TaskStatus::Running => commands.push(run("tp1", "op1", RunTrigger::Manual)),
        other => commands.push(to(other)),
    }
    run_all::<Task>(&commands)
}

#[test]
fn status_table_every_change_from_every_status() {
    let mut failures = Vec::new();
    for from in TaskStatus::ALL {
        for target in TaskStatus::ALL {
            let state = task_in(from);
            let expect = if status_change_allowed(from, target) {
                if from == TaskStatus::Running {
                    ok(&["task.topic_canceled", "task.status_changed"])
                } else {
                    ok(&["task.status_changed"])
                }
            } else {
                no("InvalidTransition")
            };
            if let Some(m) = check(&state, &to(target), &system_ctx(100), &expect) {
                failures.push(format!("{from} → {target}: {m}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // the rules themselves
    assert!(
        !status_change_allowed(TaskStatus::Backlog, TaskStatus::Running),
        "running only through a run"
    );
    assert!(status_change_allowed(TaskStatus::Canceled, TaskStatus::Backlog));
    assert!(!status_change_allowed(TaskStatus::Canceled, TaskStatus::Paused));
    assert!(!status_change_allowed(TaskStatus::Completed, TaskStatus::Paused));
}

#[test]
fn only_automated_tasks_are_scheduled_and_errors_only_come_with_failed() {
    let manual = run_all::<Task>(&[create_with(|_| {})]);
    assert!(matches!(
        refused(&manual, &to(TaskStatus::Scheduled), &system_ctx(5)),
        DomainError::Validation { .. }
    ));
    let with_error = TaskCommand::ChangeStatus { to: TaskStatus::Paused, error: Some("x".into()) };
    assert!(matches!(
        refused(&manual, &with_error, &system_ctx(5)),
        DomainError::Validation { .. }
    ));
    let (t, _) = apply(
        manual,
        &TaskCommand::ChangeStatus { to: TaskStatus::Failed, error: Some("gave up".into()) },
        &system_ctx(5),
    );
    assert_eq!(t.error.as_deref(), Some("gave up"));
}

#[test]
fn entering_scheduled_opens_a_schedule_window_or_seeds_the_first_heartbeat() {
    let (t, events) =
        apply(task_in(TaskStatus::Backlog), &to(TaskStatus::Scheduled), &system_ctx(5));
    assert_eq!(types(&events), ["task.status_changed"]);
    assert_eq!(t.schedule_started_at, Some(at(5)));
    let hb = run_all::<Task>(&[create_with(|c| {
        c.automation_mode = Some(AutomationMode::Heartbeat);
        c.heartbeat.interval_secs = Some(600);
    })]);
    let (hb, events) = apply(hb, &to(TaskStatus::Scheduled), &system_ctx(5));
    assert_eq!(types(&events), ["task.status_changed", "task.heartbeat_scheduled"]);
    assert!(hb.tick_token.is_some());
    assert_eq!(hb.next_tick_at, Some(at(5)));
}

#[test]
fn command_table() {
    use TaskCommand as C;
    let none = Task::default();
    let backlog = task_in(TaskStatus::Backlog);
    let running = task_in(TaskStatus::Running);
    let canceled = task_in(TaskStatus::Canceled);
    let states =
        [("none", &none), ("backlog", &backlog), ("running", &running), ("canceled", &canceled)];
    let dep = C::AddDependency {
        depends_on_id: "t2".into(),
        kind: DependencyKind::Blocks,
        graph: BlocksGraph::new(),
    };
    let comment = C::AddComment {
        comment_id: "c1".into(),
        author: CommentAuthor::Agent("a1".into()),
        content: "looks good".into(),
        brief_id: None,
        topic_id: None,
    };
    let review = C::ReviewTopic { topic_id: "tp1".into(), score: 70, passed: true, scores: vec![] };
    let cancel_topic = C::CancelTopic { topic_id: "tp1".into() };
    let failed_start = C::RunFailed { topic_id: "tp1".into(), error: "no worker".into() };
    let table: Vec<(&str, C, [Expect; 4])> = vec![
        (
            "create",
            scheduled_task(),
            [ok(&["task.created"]), no("AlreadyExists"), no("AlreadyExists"), no("AlreadyExists")],
        ),
        (
            "update",
            C::Update(TaskPatch { priority: Some(1), ..TaskPatch::default() }),
            [no("NotFound"), ok(&["task.updated"]), ok(&["task.updated"]), ok(&["task.updated"])],
        ),
        (
            "bad priority",
            C::Update(TaskPatch { priority: Some(9), ..TaskPatch::default() }),
            [no("NotFound"), no("Validation"), no("Validation"), no("Validation")],
        ),
        (
            "assign",
            C::Assign { agent_id: Some("a7".into()) },
            [
                no("NotFound"),
                ok(&["task.assignee_changed"]),
                ok(&["task.assignee_changed"]),
                ok(&["task.assignee_changed"]),
            ],
        ),
        (
            "quota",
            C::SetTopicQuota { max_topics: Some(3) },
            [
                no("NotFound"),
                ok(&["task.topic_quota_changed"]),
                ok(&["task.topic_quota_changed"]),
                ok(&["task.topic_quota_changed"]),
            ],
        ),
        (
            "configure",
            C::Configure(TaskConfig::default()),
            [
                no("NotFound"),
                ok(&["task.configured"]),
                ok(&["task.configured"]),
                ok(&["task.configured"]),
            ],
        ),
        (
            "depend",
            dep,
            [
                no("NotFound"),
                ok(&["task.dependency_added"]),
                ok(&["task.dependency_added"]),
                ok(&["task.dependency_added"]),
            ],
        ),
        (
            "undepend",
            C::RemoveDependency { depends_on_id: "t2".into() },
            [no("NotFound"), no("NotFound"), no("NotFound"), no("NotFound")],
        ),
        (
            "pin",
            C::PinDocument { document_id: "d1".into(), pinned_by: PinnedBy::User },
            [
                no("NotFound"),
                ok(&["task.document_pinned"]),
                ok(&["task.document_pinned"]),
                ok(&["task.document_pinned"]),
            ],
        ),
        (
            "unpin",
            C::UnpinDocument { document_id: "d1".into() },
            [no("NotFound"), no("NotFound"), no("NotFound"), no("NotFound")],
        ),
        (
            "comment",
            comment,
            [
                no("NotFound"),
                ok(&["task.comment_added"]),
                ok(&["task.comment_added"]),
                ok(&["task.comment_added"]),
            ],
        ),
        (
            "uncomment",
            C::DeleteComment { comment_id: "c1".into() },
            [no("NotFound"), no("NotFound"), no("NotFound"), no("NotFound")],
        ),
        (
            "run",
            run("tp9", "op9", RunTrigger::Manual),
            [
                no("NotFound"),
                ok(&[
                    "task.assignee_changed",
                    "task.status_changed",
                    "task.model_snapshotted",
                    "task.topic_started",
                ]),
                no("TopicRunning"),
                no("InvalidTransition"),
            ],
        ),
        (
            "failed start",
            failed_start,
            [
                no("NotFound"),
                no("NotFound"),
                ok(&["task.topic_failed", "task.status_changed"]),
                no("NotFound"),
            ],
        ),
        (
            "complete topic",
            end("tp1", "op1", TopicEnd::Done, RunTrigger::Manual),
            [
                no("NotFound"),
                no("NotFound"),
                ok(&["task.heartbeat_recorded", "task.topic_completed", "task.status_changed"]),
                no("NotFound"),
            ],
        ),
        (
            "cancel topic",
            cancel_topic,
            [
                no("NotFound"),
                no("NotFound"),
                ok(&["task.topic_canceled", "task.status_changed"]),
                no("NotFound"),
            ],
        ),
        (
            "review topic",
            review,
            [no("NotFound"), no("NotFound"), ok(&["task.topic_reviewed"]), no("NotFound")],
        ),
        (
            "heartbeat",
            C::RecordHeartbeat,
            [
                no("NotFound"),
                ok(&["task.heartbeat_recorded"]),
                ok(&["task.heartbeat_recorded"]),
                ok(&["task.heartbeat_recorded"]),
            ],
        ),
        (
            "heartbeat timeout",
            C::CheckHeartbeatTimeout,
            [
                no("NotFound"),
                no("InvalidTransition"),
                no("InvalidTransition"),
                no("InvalidTransition"),
            ],
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

#[test]
fn dependencies_refuse_self_edges_duplicates_and_blocks_cycles() {
    let t = task_in(TaskStatus::Backlog);
    let add = |to: &str, kind, graph| TaskCommand::AddDependency {
        depends_on_id: to.into(),
        kind,
        graph,
    };
    assert!(matches!(
        refused(&t, &add("t1", DependencyKind::Blocks, BlocksGraph::new()), &system_ctx(5)),
        DomainError::Validation { .. }
    ));
    // t3 depends on t2, t2 depends on t1: t1 depending on t3 closes t3 → t2 → t1
    let graph = BlocksGraph::new().with_edge("t3", "t2").with_edge("t2", "t1");
    let e = refused(&t, &add("t3", DependencyKind::Blocks, graph.clone()), &system_ctx(5));
    assert_eq!(
        e,
        DomainError::DependencyCycle {
            task_id: "t1".into(),
            depends_on_id: "t3".into(),
            path: vec!["t3".into(), "t2".into(), "t1".into()]
        }
    );
    let (t, _) = apply(t, &add("t3", DependencyKind::Relates, graph), &system_ctx(6));
    assert!(
        t.blocked_by().next().is_none(),
        "relates edges are informational and never cycle-checked"
    );
    assert!(matches!(
        refused(&t, &add("t3", DependencyKind::Blocks, BlocksGraph::new()), &system_ctx(7)),
        DomainError::AlreadyExists { .. }
    ));
}

#[test]
fn documents_and_comments() {
    let t = task_in(TaskStatus::Backlog);
    let pin = TaskCommand::PinDocument { document_id: "d1".into(), pinned_by: PinnedBy::Agent };
    let (t, _) = apply(t, &pin, &system_ctx(5));
    assert!(matches!(refused(&t, &pin, &system_ctx(6)), DomainError::AlreadyExists { .. }));
    assert_eq!(t.documents.get("d1"), Some(&PinnedBy::Agent));
    let comment = |author| TaskCommand::AddComment {
        comment_id: "c1".into(),
        author,
        content: "hi".into(),
        brief_id: None,
        topic_id: Some("nope".into()),
    };
    assert!(matches!(
        refused(&t, &comment(CommentAuthor::User("u1".into())), &system_ctx(7)),
        DomainError::NotFound { .. }
    ));
    let json = serde_json::to_value(CommentAuthor::User("u1".into())).unwrap();
    assert_eq!(json, serde_json::json!({"kind": "user", "id": "u1"}));
}

#[test]
fn creation_is_validated() {
    let bad = |f: fn(&mut CreateTask)| refused(&Task::default(), &create_with(f), &system_ctx(1));
    assert!(matches!(bad(|c| c.instruction = " ".into()), DomainError::Validation { .. }));
    assert!(matches!(
        bad(|c| c.parent_task_id = Some("t1".into())),
        DomainError::Validation { .. }
    ));
    assert!(matches!(
        bad(|c| c.automation_mode = Some(AutomationMode::Heartbeat)),
        DomainError::Validation { .. }
    ));
    assert!(matches!(
        bad(|c| c.automation_mode = Some(AutomationMode::Schedule)),
        DomainError::Validation { .. }
    ));
    assert!(matches!(
        bad(|c| c.schedule.pattern = Some("bad".into())),
        DomainError::Validation { .. }
    ));
    assert!(matches!(bad(|c| c.max_topics = Some(0)), DomainError::Validation { .. }));
}

fn command() -> impl Strategy<Value = TaskCommand> {
    use TaskCommand as C;
    let topic = prop::sample::select(vec!["tp1", "tp2", "tp3"]).prop_map(str::to_string);
    let trigger =
        prop::sample::select(vec![RunTrigger::Manual, RunTrigger::Schedule, RunTrigger::Heartbeat]);
    let status = prop::sample::select(TaskStatus::ALL.to_vec());
    let how = prop_oneof![
        Just(TopicEnd::Done),
        Just(TopicEnd::Error { message: "boom".into(), code: None }),
        Just(TopicEnd::Other { detail: "interrupted".into() }),
    ];
    let mode = prop::option::of(prop::sample::select(vec![
        AutomationMode::Heartbeat,
        AutomationMode::Schedule,
    ]));
    prop_oneof![
        Just(scheduled_task()),
        (topic.clone(), trigger.clone(), any::<bool>()).prop_map(|(t, tr, cont)| {
            let mut cmd = run(&t, &format!("op-{t}"), tr);
            if let C::Run(r) = &mut cmd {
                r.continue_topic = cont;
            }
            cmd
        }),
        (topic.clone(), how, trigger, any::<bool>()).prop_map(|(t, h, tr, waiting)| {
            let mut cmd = end(&t, &format!("op-{t}"), h, tr);
            if let C::CompleteTopic(o) = &mut cmd {
                o.human_waiting = waiting;
            }
            cmd
        }),
        topic.clone().prop_map(|topic_id| C::RunFailed { topic_id, error: "x".into() }),
        topic.clone().prop_map(|topic_id| C::CancelTopic { topic_id }),
        status.prop_map(to),
        mode.prop_map(|mode| C::ConfigureAutomation {
            mode,
            heartbeat: HeartbeatConfig {
                interval_secs: Some(60),
                timeout_secs: Some(120),
                ..HeartbeatConfig::default()
            },
            schedule: ScheduleConfig {
                pattern: Some("* * * * *".into()),
                max_executions: Some(2),
                ..ScheduleConfig::default()
            },
        }),
        prop::option::of(1u32..4).prop_map(|max_topics| C::SetTopicQuota { max_topics }),
        Just(C::RecordHeartbeat),
        Just(C::CheckHeartbeatTimeout),
        prop::sample::select(vec!["t1", "t2"]).prop_map(|d| C::AddDependency {
            depends_on_id: d.into(),
            kind: DependencyKind::Blocks,
            graph: BlocksGraph::new().with_edge("t2", "t1")
        }),
        (topic, 0u8..=101).prop_map(|(topic_id, score)| C::ReviewTopic {
            topic_id,
            score,
            passed: true,
            scores: vec![]
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_command_sequences_keep_the_task_consistent(
        steps in prop::collection::vec((command(), 0i64..200), 1..40)
    ) {
        let times: Vec<(i64, Actor)> = steps.iter().map(|(_, dt)| (*dt, Actor::system("lifecycle"))).collect();
        let mut sequence = vec![(scheduled_task(), system_ctx(0))];
        sequence.extend(steps.into_iter().map(|(c, _)| c).zip(timeline(&times)));
        exercise::<Task>(&sequence);
    }
}
