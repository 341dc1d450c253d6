//! The tasks read model writes its rows with its own fold of the task events; this test holds it
//! to the domain's `Task::evolve` over a realistic workload, field by field, so the two cannot
//! drift apart unnoticed (a rule changed in the domain and not in the projection fails here).

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    cron_jobs::{ExecutionConditions, pattern::CronPattern, slots},
    tasks::{AutomationMode, RunTrigger, Task, TaskEvent, TaskStatus},
};
use agentlog_eventlog::{StoreOptions, testing::sqlite_log};
use agentlog_projections::{ProjectionRunner, ReadDb, RunnerOptions, all_projections, page::PageRequest, tasks};
use agentlog_workload::{Workload, WorkloadConfig};
use chrono::{DateTime, Utc};

#[tokio::test]
async fn tasks_read_model_agrees_with_domain_evolve() {
    let log = sqlite_log(StoreOptions::default()).await;
    let workload = Workload::generate(&WorkloadConfig { min_events: 5_000, ..WorkloadConfig::default() }).unwrap();
    workload.append_to(log.store.as_ref()).await.unwrap();
    let db = ReadDb::from(log.store.database());
    let only_tasks = all_projections().into_iter().filter(|p| p.name() == "tasks").collect();
    let runner = ProjectionRunner::new(
        Arc::clone(&log.store),
        db.clone(),
        only_tasks,
        RunnerOptions { batch_size: 500, retry_delay: Duration::from_millis(20), ..RunnerOptions::default() },
    );
    runner.catch_up().await.unwrap();

    // Every task stream, folded by the domain.
    let mut folded: BTreeMap<String, Task> = BTreeMap::new();
    for event in log.store.read_all(0, &Default::default(), usize::MAX).await.unwrap() {
        let Some(task_id) = event.stream_id.strip_prefix("task-") else { continue };
        let decoded = TaskEvent::decode(&event.event_type, event.schema_version, &event.payload).unwrap();
        let state = folded.remove(task_id).unwrap_or_default();
        folded.insert(task_id.to_string(), state.evolve(&decoded));
    }
    assert!(folded.len() >= 10, "the workload has tasks: {}", folded.len());

    let mut compared_topics = 0;
    let mut schedule_runs = 0;
    for (id, task) in &folded {
        let row = tasks::task(&db, &task.user_id, id).await.unwrap().unwrap_or_else(|| panic!("task {id} has no row"));
        let at = |field: &str| format!("task {id}: {field}");
        assert_eq!(row.status, task.status, "{}", at("status"));
        assert_eq!(row.user_id, task.user_id, "{}", at("user_id"));
        assert_eq!(row.name, task.name, "{}", at("name"));
        assert_eq!(row.instruction, task.instruction, "{}", at("instruction"));
        assert_eq!(row.description, task.description, "{}", at("description"));
        assert_eq!(row.priority, i64::from(task.priority), "{}", at("priority"));
        assert_eq!(row.assignee_agent_id, task.assignee_agent_id, "{}", at("assignee_agent_id"));
        assert_eq!(row.automation_mode, task.automation_mode, "{}", at("automation_mode"));
        assert_eq!(row.error, task.error, "{}", at("error"));
        assert_eq!(row.total_topics, i64::from(task.total_topics), "{}", at("total_topics"));
        assert_eq!(row.max_topics, task.max_topics.map(i64::from), "{}", at("max_topics"));
        assert_eq!(row.current_topic_id, task.current_topic_id, "{}", at("current_topic_id"));
        assert_eq!(row.last_completed_topic_id, task.last_completed_topic_id, "{}", at("last_completed_topic_id"));
        assert_eq!(row.consecutive_failures, i64::from(task.consecutive_failures), "{}", at("consecutive_failures"));
        assert_eq!(row.config, task.config, "{}", at("config"));
        assert_eq!(row.last_heartbeat_at, task.last_heartbeat_at, "{}", at("last_heartbeat_at"));
        assert_eq!(row.next_heartbeat_at, task.next_tick_at, "{}", at("next_heartbeat_at"));
        assert_eq!(row.heartbeat_tick_token, task.tick_token, "{}", at("heartbeat_tick_token"));
        assert_eq!(row.schedule_started_at, task.schedule_started_at, "{}", at("schedule_started_at"));
        assert_eq!(row.started_at, task.started_at, "{}", at("started_at"));
        assert_eq!(row.completed_at, task.completed_at, "{}", at("completed_at"));
        let running = i64::try_from(task.running_topics().count()).unwrap();
        assert_eq!(row.running_topics, running, "{}", at("running_topics"));
        let last_schedule_run =
            task.topics.values().filter(|t| t.trigger == RunTrigger::Schedule).map(|t| t.started_at).max();
        assert_eq!(row.last_schedule_run_at, last_schedule_run, "{}", at("last_schedule_run_at"));
        schedule_runs += usize::from(last_schedule_run.is_some());
        assert_eq!(row.next_schedule_at, schedule_due(task), "{}", at("next_schedule_at"));
        assert_eq!(row.heartbeat_tick_due_at, tick_due(task), "{}", at("heartbeat_tick_due_at"));
        let deadline = (task.status == TaskStatus::Running).then(|| task.heartbeat_deadline()).flatten();
        assert_eq!(row.heartbeat_deadline_at, deadline, "{}", at("heartbeat_deadline_at"));

        let deps: BTreeMap<String, _> = tasks::task_dependencies(&db, &task.user_id, id)
            .await
            .unwrap()
            .into_iter()
            .map(|d| (d.depends_on_id, d.kind))
            .collect();
        assert_eq!(deps, task.dependencies, "{}", at("dependencies"));
        let docs: BTreeMap<String, _> = tasks::task_documents(&db, &task.user_id, id)
            .await
            .unwrap()
            .into_iter()
            .map(|d| (d.document_id, d.pinned_by))
            .collect();
        assert_eq!(docs, task.documents, "{}", at("documents"));
        let comments = tasks::task_comments(&db, &task.user_id, id, &PageRequest::first(1_000)).await.unwrap().items;
        let comment_ids: std::collections::BTreeSet<String> = comments.into_iter().map(|c| c.comment_id).collect();
        assert_eq!(comment_ids, task.comment_ids, "{}", at("comments"));

        let topics = tasks::task_topics(&db, &task.user_id, id, &PageRequest::first(1_000)).await.unwrap().items;
        assert_eq!(topics.len(), task.topics.len(), "{}", at("topic count"));
        for t in topics {
            let expected = &task.topics[&t.topic_id];
            let at = |field: &str| format!("task {id} topic {}: {field}", t.topic_id);
            assert_eq!(t.status, expected.status, "{}", at("status"));
            assert_eq!(t.seq, i64::from(expected.seq), "{}", at("seq"));
            assert_eq!(t.operation_id, expected.operation_id, "{}", at("operation_id"));
            assert_eq!(t.trigger, expected.trigger, "{}", at("trigger"));
            assert_eq!(t.started_at, expected.started_at, "{}", at("started_at"));
            assert_eq!(t.ended_at, expected.ended_at, "{}", at("ended_at"));
            assert_eq!(t.review_score, expected.review.as_ref().map(|r| i64::from(r.score)), "{}", at("review"));
            compared_topics += 1;
        }
    }
    assert!(compared_topics > 0, "the workload ran tasks");
    assert!(schedule_runs > 0, "the workload ran scheduled tasks");
}

/// When the scheduler has a slot of `task`'s schedule to run, from the domain's state: its
/// first slot after its last schedule run or the start of its schedule, while it may run (the
/// scheduler's `schedule_tick`: scheduled or running, nothing in flight).
fn schedule_due(task: &Task) -> Option<DateTime<Utc>> {
    let may_run = task.automation_mode == Some(AutomationMode::Schedule)
        && matches!(task.status, TaskStatus::Scheduled | TaskStatus::Running)
        && task.running_topics().next().is_none();
    let started = task.schedule_started_at.filter(|_| may_run)?;
    let pattern = task.schedule.pattern.as_deref()?;
    let runs = task.topics.values().filter(|t| t.trigger == RunTrigger::Schedule).map(|t| t.started_at);
    let last = runs.max().map_or(started, |run| run.max(started));
    let zone: chrono_tz::Tz = task.schedule.timezone.parse().ok()?;
    slots::next_due(&CronPattern::parse(pattern).ok()?, &ExecutionConditions::default(), |_| 0, &zone, last)
}

/// The heartbeat tick's due instant while `task` may tick (`tick::heartbeat_tick`'s rules that
/// need no other aggregate).
fn tick_due(task: &Task) -> Option<DateTime<Utc>> {
    let may_tick = task.automation_mode == Some(AutomationMode::Heartbeat)
        && !task.status.is_terminal()
        && task.status != TaskStatus::Paused
        && task.heartbeat.interval_secs.is_some_and(|i| i > 0)
        && task.running_topics().next().is_none()
        && task.tick_token.is_some();
    task.next_tick_at.filter(|_| may_tick)
}
