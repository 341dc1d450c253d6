//! The tasks read model on both backends: tasks, dependencies, documents, comments, topics with
//! hand-offs and reviews, subtask layers, owner scoping, paging, and a rebuild that changes
//! nothing.

use crate::support;

use agentlog_domain::{
    tasks::graph::BlocksGraph,
    tasks::{
        AutomationMode, CommentAuthor, CreateTask, DependencyKind, HeartbeatConfig, PinnedBy, RunTask, RunTrigger,
        ScheduleConfig, Task, TaskCommand as C, TaskPatch, TaskStatus, TopicEnd, TopicOutcome, TopicStatus,
    },
    values::{AgentRef, Handoff},
};
use agentlog_eventlog::testing::TestLog;
use agentlog_projections::{page::PageRequest, tasks};
use support::Harness;

const U: &str = "user-1";

fn create(id: &str, parent: Option<&str>) -> C {
    let mut t = CreateTask::new(id, format!("T-{id}"), format!("do {id}"));
    t.parent_task_id = parent.map(str::to_string);
    t.assignee_agent_id = Some("agent-a".into());
    C::Create(t)
}

fn run(topic: &str) -> C {
    C::Run(RunTask {
        topic_id: topic.into(),
        operation_id: format!("op-{topic}"),
        trigger: RunTrigger::Manual,
        continue_topic: false,
        agent: AgentRef { agent_id: "agent-a".into(), config_version: 1, model: Some("m".into()), provider: None },
        extra_prompt: None,
    })
}

fn blocks(on: &str) -> C {
    C::AddDependency { depends_on_id: on.into(), kind: DependencyKind::Blocks, graph: BlocksGraph::new() }
}

async fn tasks_fold_and_query(log: TestLog) {
    let mut h = Harness::new(log);
    for (id, parent) in [("p", None), ("a", Some("p")), ("b", Some("p")), ("c", Some("p"))] {
        h.exec::<Task>(U, id, create(id, parent)).await;
    }
    h.exec::<Task>("user-2", "other", create("other", None)).await;
    h.exec::<Task>(U, "b", blocks("a")).await;
    h.exec::<Task>(U, "c", blocks("b")).await;
    h.exec::<Task>(
        U,
        "c",
        C::AddDependency { depends_on_id: "a".into(), kind: DependencyKind::Relates, graph: BlocksGraph::new() },
    )
    .await;
    h.exec::<Task>(U, "c", C::RemoveDependency { depends_on_id: "a".into() }).await;
    h.exec::<Task>(U, "a", C::PinDocument { document_id: "doc-1".into(), pinned_by: PinnedBy::User }).await;
    h.exec::<Task>(U, "a", C::PinDocument { document_id: "doc-2".into(), pinned_by: PinnedBy::Agent }).await;
    h.exec::<Task>(U, "a", C::UnpinDocument { document_id: "doc-1".into() }).await;
    h.exec::<Task>(
        U,
        "a",
        C::Update(TaskPatch { name: Some("Alpha".into()), priority: Some(2), ..Default::default() }),
    )
    .await;
    h.exec::<Task>(U, "a", run("topic-1")).await;
    h.exec::<Task>(
        U,
        "a",
        C::AddComment {
            comment_id: "cm-1".into(),
            author: CommentAuthor::Agent("agent-a".into()),
            content: "working on it".into(),
            brief_id: None,
            topic_id: Some("topic-1".into()),
        },
    )
    .await;
    h.exec::<Task>(
        U,
        "a",
        C::AddComment {
            comment_id: "cm-2".into(),
            author: CommentAuthor::User(U.into()),
            content: "oops".into(),
            brief_id: None,
            topic_id: None,
        },
    )
    .await;
    h.exec::<Task>(U, "a", C::DeleteComment { comment_id: "cm-2".into() }).await;
    let handoff = Handoff {
        title: Some("done".into()),
        summary: Some("all good".into()),
        key_findings: vec!["x".into()],
        next_action: None,
        ..Default::default()
    };
    h.exec::<Task>(
        U,
        "a",
        C::CompleteTopic(TopicOutcome {
            topic_id: "topic-1".into(),
            operation_id: "op-topic-1".into(),
            end: TopicEnd::Done,
            run_trigger: RunTrigger::Manual,
            handoff: Some(handoff.clone()),
            last_assistant_content: Some("finished".into()),
            human_waiting: false,
            brief_judgement: None,
        }),
    )
    .await;
    h.exec::<Task>(U, "a", C::ReviewTopic { topic_id: "topic-1".into(), score: 80, passed: true, scores: vec![] })
        .await;
    h.exec::<Task>(U, "a", C::ChangeStatus { to: TaskStatus::Completed, error: None }).await;
    h.sync().await;

    let db = &h.db;
    let a = tasks::task(db, U, "a").await.unwrap().expect("task a");
    assert_eq!(a.name.as_deref(), Some("Alpha"));
    assert_eq!(a.priority, 2);
    assert_eq!(a.status, TaskStatus::Completed);
    assert_eq!(a.total_topics, 1);
    assert_eq!(a.last_completed_topic_id.as_deref(), Some("topic-1"));
    assert!(a.completed_at.is_some());
    assert_eq!(tasks::task_by_identifier(db, Some(U), "T-a").await.unwrap().map(|t| t.task_id), Some("a".into()));
    // task ids are per owner: a task is named with its owner
    assert!(tasks::task(db, "user-2", "a").await.unwrap().is_none());
    assert!(tasks::task(db, "user-2", "other").await.unwrap().is_some());

    let children = tasks::TaskFilter { parent_task_id: Some("p".into()), ..Default::default() };
    let first = tasks::tasks(db, Some(U), &children, &PageRequest::first(2)).await.unwrap();
    assert_eq!(first.items.iter().map(|t| t.task_id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(first.has_next_page);
    let rest = tasks::tasks(db, Some(U), &children, &PageRequest::first(2).after(first.end_cursor)).await.unwrap();
    assert_eq!(rest.items.iter().map(|t| t.task_id.as_str()).collect::<Vec<_>>(), ["c"]);
    assert!(!rest.has_next_page);
    assert!(rest.has_previous_page, "a and b come before");
    // Backward: the last two, in list order; then the one before them.
    let last = tasks::tasks(db, Some(U), &children, &PageRequest::last(2)).await.unwrap();
    assert_eq!(last.items.iter().map(|t| t.task_id.as_str()).collect::<Vec<_>>(), ["b", "c"]);
    assert!(last.has_previous_page && !last.has_next_page);
    let start = last.start_cursor().map(str::to_string);
    let before = tasks::tasks(db, Some(U), &children, &PageRequest::last(2).before(start)).await.unwrap();
    assert_eq!(before.items.iter().map(|t| t.task_id.as_str()).collect::<Vec<_>>(), ["a"]);
    assert!(!before.has_previous_page && before.has_next_page);
    let done = tasks::TaskFilter { status: Some(TaskStatus::Completed), ..Default::default() };
    assert_eq!(tasks::tasks(db, None, &done, &PageRequest::default()).await.unwrap().items.len(), 1);

    let deps = tasks::task_dependencies(db, U, "c").await.unwrap();
    assert_eq!(
        deps.iter().map(|d| (d.depends_on_id.as_str(), d.kind)).collect::<Vec<_>>(),
        [("b", DependencyKind::Blocks)]
    );
    let dependants = tasks::task_dependants(db, U, "a").await.unwrap();
    assert_eq!(dependants.iter().map(|d| d.task_id.as_str()).collect::<Vec<_>>(), ["b"]);
    let docs = tasks::task_documents(db, U, "a").await.unwrap();
    assert_eq!(
        docs.iter().map(|d| (d.document_id.as_str(), d.pinned_by)).collect::<Vec<_>>(),
        [("doc-2", PinnedBy::Agent)]
    );
    let comments = tasks::task_comments(db, U, "a", &PageRequest::default()).await.unwrap();
    assert_eq!(comments.items.iter().map(|c| c.comment_id.as_str()).collect::<Vec<_>>(), ["cm-1"]);
    assert_eq!(comments.items[0].author_kind, "agent");

    let topics = tasks::task_topics(db, U, "a", &PageRequest::default()).await.unwrap();
    assert_eq!(topics.items.len(), 1);
    let topic = &topics.items[0];
    assert_eq!(topic.status, TopicStatus::Completed);
    let stored = topic.handoff.as_ref().expect("hand-off");
    assert_eq!(
        (&stored.title, &stored.summary, &stored.key_findings),
        (&handoff.title, &handoff.summary, &handoff.key_findings)
    );
    assert_eq!(stored.content.as_deref(), Some("finished"));
    assert_eq!(topic.review_score, Some(80));
    assert_eq!(topic.operation_id, "op-topic-1");
    assert_eq!(tasks::task_topic(db, U, "topic-1").await.unwrap().as_ref(), Some(topic));

    // a is completed: b is runnable, then c (blocked by b); the plan names tasks by identifier
    let plan = tasks::subtask_layers(db, U, "p").await.unwrap().expect("plan");
    assert_eq!(plan.already_done, ["T-a"]);
    assert_eq!(plan.layers, vec![vec!["T-b".to_string()], vec!["T-c".to_string()]]);
    assert!(tasks::subtask_layers(db, "user-2", "p").await.unwrap().is_none());

    // a rebuild from position 0 gives the same rows
    let before = (
        tasks::task(db, U, "a").await.unwrap(),
        tasks::task_topics(db, U, "a", &PageRequest::default()).await.unwrap(),
    );
    h.rebuild().await;
    let after = (
        tasks::task(db, U, "a").await.unwrap(),
        tasks::task_topics(db, U, "a", &PageRequest::default()).await.unwrap(),
    );
    assert_eq!(before, after);
}

both!(tasks_fold_and_query as tasks_read_model);

fn start(topic: &str, trigger: RunTrigger, continue_topic: bool) -> C {
    let C::Run(mut r) = run(topic) else { unreachable!("run() is a run") };
    (r.trigger, r.continue_topic) = (trigger, continue_topic);
    C::Run(r)
}

fn done(topic: &str, trigger: RunTrigger) -> C {
    C::CompleteTopic(TopicOutcome {
        topic_id: topic.into(),
        operation_id: format!("op-{topic}"),
        end: TopicEnd::Done,
        run_trigger: trigger,
        handoff: None,
        last_assistant_content: Some("A substantive summary.".into()),
        human_waiting: false,
        brief_judgement: None,
    })
}

/// An instant of the harness's day.
fn at(hh: u32, mm: u32, ss: u32) -> chrono::DateTime<chrono::Utc> {
    use chrono::TimeZone;
    chrono::Utc.with_ymd_and_hms(2026, 11, 29, hh, mm, ss).single().unwrap()
}

fn with_timeout() -> HeartbeatConfig {
    HeartbeatConfig { interval_secs: None, timeout_secs: Some(600), require_input: false }
}

/// The scheduler's due instants of a task follow its runs and status: the next slot after the
/// later of its last schedule run and the start of its schedule, none while a run is in flight
/// or it is paused; the heartbeat deadline while it runs. A continued topic's new start replaces
/// its old one (found again among all the task's topics, in a later batch).
async fn due_instants_follow_runs_and_status(log: TestLog) {
    let mut h = Harness::new(log);
    let C::Create(mut spec) = create("s", None) else { unreachable!("create() creates") };
    spec.automation_mode = Some(AutomationMode::Schedule);
    spec.schedule.pattern = Some("0 * * * *".into());
    spec.heartbeat = with_timeout();
    h.exec::<Task>(U, "s", C::Create(spec)).await; // 09:00:00
    h.exec::<Task>(U, "s", C::ChangeStatus { to: TaskStatus::Scheduled, error: None }).await; // 09:00:01
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!(row.schedule_started_at, Some(at(9, 0, 1)));
    assert_eq!((row.next_schedule_at, row.heartbeat_deadline_at), (Some(at(10, 0, 0)), None));
    assert!(tasks::schedules_due(&h.db, at(9, 59, 59)).await.unwrap().is_empty());
    assert_eq!(tasks::schedules_due(&h.db, at(10, 0, 0)).await.unwrap(), [(U.to_string(), "s".to_string())]);

    h.exec::<Task>(U, "s", start("r1", RunTrigger::Schedule, false)).await; // 09:00:02
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!((row.running_topics, row.next_schedule_at), (1, None), "a run in flight: not due");
    assert_eq!(row.heartbeat_deadline_at, Some(at(9, 10, 3)), "the first second past 600 s");
    assert!(tasks::heartbeat_timeouts_due(&h.db, at(9, 10, 2)).await.unwrap().is_empty());
    assert_eq!(tasks::heartbeat_timeouts_due(&h.db, at(9, 10, 3)).await.unwrap().len(), 1);
    h.exec::<Task>(U, "s", done("r1", RunTrigger::Schedule)).await; // 09:00:03
    h.exec::<Task>(U, "s", start("r2", RunTrigger::Schedule, false)).await; // 09:00:04
    h.exec::<Task>(U, "s", done("r2", RunTrigger::Schedule)).await; // 09:00:05
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!((row.status, row.running_topics), (TaskStatus::Scheduled, 0));
    assert_eq!(row.last_schedule_run_at, Some(at(9, 0, 4)));
    assert_eq!((row.next_schedule_at, row.heartbeat_deadline_at), (Some(at(10, 0, 0)), None));

    // r2 continued by hand: its schedule start is gone, r1's is the latest.
    h.exec::<Task>(U, "s", start("r2", RunTrigger::Manual, true)).await; // 09:00:06
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!((row.last_schedule_run_at, row.running_topics), (Some(at(9, 0, 2)), 1));
    h.exec::<Task>(U, "s", done("r2", RunTrigger::Manual)).await; // 09:00:07
    h.exec::<Task>(U, "s", C::ChangeStatus { to: TaskStatus::Paused, error: None }).await;
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!((row.next_schedule_at, row.heartbeat_deadline_at, row.heartbeat_tick_due_at), (None, None, None));
    h.exec::<Task>(U, "s", C::ChangeStatus { to: TaskStatus::Scheduled, error: None }).await; // 09:00:09
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!(row.next_schedule_at, Some(at(10, 0, 0)));
    // A new pattern and zone: half past, in Kolkata (UTC+05:30), so on the hour in UTC.
    let schedule =
        ScheduleConfig { pattern: Some("30 * * * *".into()), timezone: "Asia/Kolkata".into(), max_executions: None };
    let configure =
        C::ConfigureAutomation { mode: Some(AutomationMode::Schedule), heartbeat: with_timeout(), schedule };
    h.exec::<Task>(U, "s", configure).await;
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!(row.next_schedule_at, Some(at(10, 0, 0)));
    let manual = C::ConfigureAutomation { mode: None, heartbeat: with_timeout(), schedule: ScheduleConfig::default() };
    h.exec::<Task>(U, "s", manual).await;
    h.sync().await;
    let row = tasks::task(&h.db, U, "s").await.unwrap().expect("s");
    assert_eq!(row.next_schedule_at, None, "manual: never due");

    h.rebuild().await;
    assert_eq!(tasks::task(&h.db, U, "s").await.unwrap(), Some(row), "a rebuild agrees");
}

both!(due_instants_follow_runs_and_status as task_due_instants);
