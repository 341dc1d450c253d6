//! Folding `task.*` events into `tasks`, `task_dependencies`, `task_documents`, `task_topics`
//! and `task_comments`. Mirrors the domain's `Task::evolve`, one row per entity; then each
//! touched task's due instants (`due`) from its new state.

use std::collections::{BTreeSet, HashSet};

use agentlog_domain::{
    envelope::RecordedEvent,
    tasks::{CommentAuthor, RunTrigger, TaskEvent as E, TaskStatus, TopicStatus},
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{
    due,
    rows::{CommentRow, DependencyRow, DocumentRow, TaskRow, TopicRow},
};
use crate::{
    db::{ReadTx, SqlValue},
    decoding::{DecodedEvent, decode_owned_batch},
    error::ProjectionError,
    projection::Projection,
    staging::{Staged, TableRow},
};

/// Projects tasks with their dependencies, documents, topics and comments.
#[derive(Debug, Default, Clone, Copy)]
pub struct TasksProjection;

/// The rows one batch touches.
#[derive(Default)]
struct Batch {
    tasks: Staged<TaskRow>,
    dependencies: Staged<DependencyRow>,
    documents: Staged<DocumentRow>,
    topics: Staged<TopicRow>,
    comments: Staged<CommentRow>,
}

#[async_trait]
impl Projection for TasksProjection {
    fn name(&self) -> &'static str {
        "tasks"
    }
    fn version(&self) -> i32 {
        // 3: the scheduler's due instants, and what they derive from.
        3
    }
    fn tables(&self) -> &'static [&'static str] {
        &[TaskRow::TABLE, DependencyRow::TABLE, DocumentRow::TABLE, TopicRow::TABLE, CommentRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("task.")
    }
    fn bulk_kept_indexes(&self) -> &'static [&'static str] {
        // A batch loads the topic links of the topics it names (the key leads with the task).
        &["task_topics_by_topic"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let decoded = decode_owned_batch::<E>(events)?;
        let mut batch = Batch::default();
        batch.tasks.load_keys(tx, decoded.iter().map(|(_, key, _)| key.clone())).await?;
        batch.topics.load(tx, "topic_id", decoded.iter().flat_map(|(_, _, e)| topic_ids(e))).await?;
        // A continued topic's new start replaces its old one: the task's latest schedule run is
        // found again among all its topics (the server never continues one; the domain may).
        let continuing: BTreeSet<&(String, String)> = decoded
            .iter()
            .filter(|(_, _, e)| matches!(e, E::TopicStarted(t) if t.continued))
            .map(|(_, key, _)| key)
            .collect();
        let parents: Vec<Vec<SqlValue>> = continuing.iter().map(|(owner, id)| vec![owner.into(), id.into()]).collect();
        batch.topics.load_matching(tx, &["user_id", "task_id"], &parents).await?;
        for (recorded, key, event) in &decoded {
            fold(&mut batch, recorded, key, event);
        }
        // Once per task and batch: a rebuild folds many events of a task in one batch.
        let touched: HashSet<&(String, String)> = decoded.iter().map(|(_, key, _)| key).collect();
        for key in touched {
            if let Some(task) = batch.tasks.get_mut(key) {
                due::refresh(task);
            }
        }
        batch.tasks.flush(tx).await?;
        batch.dependencies.flush(tx).await?;
        batch.documents.flush(tx).await?;
        batch.topics.flush(tx).await?;
        batch.comments.flush(tx).await
    }
}

/// The topics an event changes.
fn topic_ids(event: &E) -> Vec<String> {
    match event {
        E::TopicStarted(e) => vec![e.topic_id.clone()],
        E::TopicsTimedOut(e) => e.topic_ids.clone(),
        E::TopicCompleted(e) => vec![e.topic_id.clone()],
        E::TopicFailed(e) => vec![e.topic_id.clone()],
        E::TopicCanceled(e) => vec![e.topic_id.clone()],
        E::TopicReviewed(e) => vec![e.topic_id.clone()],
        _ => Vec::new(),
    }
}

fn new_task(key: &(String, String), e: &agentlog_domain::tasks::event::TaskCreated, at: DateTime<Utc>) -> TaskRow {
    let s = &e.spec;
    TaskRow {
        task_id: key.1.clone(),
        user_id: key.0.clone(),
        identifier: s.identifier.clone(),
        name: s.name.clone(),
        instruction: s.instruction.clone(),
        description: s.description.clone(),
        status: TaskStatus::Backlog,
        priority: s.priority.into(),
        parent_task_id: s.parent_task_id.clone(),
        assignee_agent_id: s.assignee_agent_id.clone(),
        created_by_agent_id: s.created_by_agent_id.clone(),
        automation_mode: s.automation_mode,
        heartbeat_interval_secs: s.heartbeat.interval_secs.map(saturating_i64),
        heartbeat_timeout_secs: s.heartbeat.timeout_secs.map(saturating_i64),
        last_heartbeat_at: None,
        next_heartbeat_at: None,
        heartbeat_tick_token: None,
        schedule_pattern: s.schedule.pattern.clone(),
        schedule_timezone: s.schedule.timezone.clone(),
        schedule_max_executions: s.schedule.max_executions.map(i64::from),
        schedule_started_at: None,
        total_topics: 0,
        max_topics: s.max_topics.map(i64::from),
        current_topic_id: None,
        last_completed_topic_id: None,
        consecutive_failures: 0,
        config: s.config.clone(),
        error: None,
        started_at: None,
        completed_at: None,
        created_at: e.at,
        updated_at: at,
        heartbeat_require_input: s.heartbeat.require_input,
        skipped_ticks: 0,
        last_skipped_tick_at: None,
        last_schedule_run_at: None,
        running_topics: 0,
        next_schedule_at: None,
        heartbeat_tick_due_at: None,
        heartbeat_deadline_at: None,
    }
}

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Apply one event to the staged rows of task `task` (`(owner, task_id)`).
fn fold(b: &mut Batch, recorded: &RecordedEvent, task: &(String, String), event: &E) {
    let at = recorded.recorded_at;
    if let E::Created(e) = event {
        b.tasks.put(new_task(task, e, at));
        return;
    }
    // Child rows carry the task's owner (the stream's: task ids are per owner).
    let (owner, key) = (task.0.clone(), task.1.clone());
    // The task counts its running topics (`Task::running_topics`): the change in how many of
    // the topics this event touches run.
    let touched_topics: BTreeSet<String> = topic_ids(event).into_iter().collect();
    let running_before = running_among(b, task, &touched_topics);
    match event {
        E::DependencyAdded(e) => {
            b.dependencies.put(DependencyRow {
                task_id: key.clone(),
                depends_on_id: e.depends_on_id.clone(),
                kind: e.kind,
                user_id: owner,
                created_at: at,
            });
        }
        E::DependencyRemoved(e) => b.dependencies.remove(&(owner.clone(), key.clone(), e.depends_on_id.clone())),
        E::DocumentPinned(e) => b.documents.put(DocumentRow {
            task_id: key.clone(),
            document_id: e.document_id.clone(),
            pinned_by: e.pinned_by,
            user_id: owner,
            pinned_at: e.at,
        }),
        E::DocumentUnpinned(e) => b.documents.remove(&(owner.clone(), key.clone(), e.document_id.clone())),
        E::CommentAdded(e) => {
            let (author_kind, author_id) = match &e.author {
                CommentAuthor::User(id) => ("user", id.clone()),
                CommentAuthor::Agent(id) => ("agent", id.clone()),
            };
            b.comments.put(CommentRow {
                task_id: key.clone(),
                comment_id: e.comment_id.clone(),
                user_id: owner,
                author_kind: author_kind.to_string(),
                author_id,
                content: e.content.clone(),
                brief_id: e.brief_id.clone(),
                topic_id: e.topic_id.clone(),
                created_at: e.at,
            });
        }
        E::CommentDeleted(e) => b.comments.remove(&(owner.clone(), key.clone(), e.comment_id.clone())),
        E::TopicStarted(e) => {
            let topic_key = (owner.clone(), key.clone(), e.topic_id.clone());
            // A continued topic keeps its review and last hand-off; the run's fields are new.
            let (handoff, review) = b.topics.get(&topic_key).map_or((None, None), |t| {
                (t.handoff.clone(), Some((t.review_score, t.review_passed, t.review_scores.clone(), t.reviewed_at)))
            });
            let (review_score, review_passed, review_scores, reviewed_at) = review.unwrap_or((None, None, None, None));
            b.topics.put(TopicRow {
                task_id: key.clone(),
                topic_id: e.topic_id.clone(),
                user_id: owner,
                seq: e.seq.into(),
                operation_id: e.operation_id.clone(),
                agent_id: e.agent_id.clone(),
                status: TopicStatus::Running,
                trigger: e.trigger,
                handoff,
                error: None,
                error_code: None,
                review_score,
                review_passed,
                review_scores,
                reviewed_at,
                started_at: e.at,
                ended_at: None,
                updated_at: at,
            });
        }
        E::TopicsTimedOut(e) => {
            for id in &e.topic_ids {
                end_topic(b, task, id, TopicStatus::Timeout, e.at, at);
            }
        }
        E::TopicCompleted(e) => {
            if let Some(t) = end_topic(b, task, &e.topic_id, TopicStatus::Completed, e.at, at) {
                t.handoff = Some(e.handoff.clone());
            }
        }
        E::TopicFailed(e) => {
            if let Some(t) = end_topic(b, task, &e.topic_id, TopicStatus::Failed, e.at, at) {
                t.error = Some(e.error.clone());
                t.error_code = e.error_code.clone();
            }
        }
        E::TopicCanceled(e) => {
            end_topic(b, task, &e.topic_id, TopicStatus::Canceled, e.at, at);
        }
        E::TopicReviewed(e) => {
            if let Some(t) = b.topics.get_mut(&(owner.clone(), key.clone(), e.topic_id.clone())) {
                t.review_score = Some(e.score.into());
                t.review_passed = Some(e.passed);
                t.review_scores = Some(e.scores.clone());
                t.reviewed_at = Some(e.at);
                t.updated_at = at;
            }
        }
        _ => {}
    }
    let running_change = running_among(b, task, &touched_topics) - running_before;
    let schedule_run_again = match event {
        E::TopicStarted(e) if e.continued => Some(latest_schedule_run(b, task)),
        _ => None,
    };
    if let Some(row) = b.tasks.get_mut(task) {
        fold_task(row, event);
        row.running_topics += running_change;
        if let Some(latest) = schedule_run_again {
            row.last_schedule_run_at = latest;
        }
        row.updated_at = at;
    }
}

/// How many of `task`'s topics `ids` are staged as running.
fn running_among(b: &Batch, task: &(String, String), ids: &BTreeSet<String>) -> i64 {
    let running = ids
        .iter()
        .filter_map(|id| b.topics.get(&(task.0.clone(), task.1.clone(), id.clone())))
        .filter(|t| t.status == TopicStatus::Running)
        .count();
    i64::try_from(running).unwrap_or(i64::MAX)
}

/// The latest start of `task`'s runs triggered by the schedule, among its staged topics (all of
/// them, loaded for a continued topic).
fn latest_schedule_run(b: &Batch, task: &(String, String)) -> Option<DateTime<Utc>> {
    b.topics
        .rows()
        .filter(|t| t.user_id == task.0 && t.task_id == task.1 && t.trigger == RunTrigger::Schedule)
        .map(|t| t.started_at)
        .max()
}

/// Mark a topic ended; returns it for further changes (none when the topic is unknown).
fn end_topic<'a>(
    b: &'a mut Batch,
    task: &(String, String),
    topic_id: &str,
    status: TopicStatus,
    ended: DateTime<Utc>,
    at: DateTime<Utc>,
) -> Option<&'a mut TopicRow> {
    let t = b.topics.get_mut(&(task.0.clone(), task.1.clone(), topic_id.to_string()))?;
    t.status = status;
    t.ended_at = Some(ended);
    t.updated_at = at;
    Some(t)
}

/// The task row's part of an event (as `Task::evolve`).
fn fold_task(task: &mut TaskRow, event: &E) {
    match event {
        E::Created(_) => {}
        E::Updated(e) => {
            let c = &e.changes;
            if let Some(name) = &c.name {
                task.name = Some(name.clone());
            }
            if let Some(instruction) = &c.instruction {
                task.instruction = instruction.clone();
            }
            if let Some(description) = &c.description {
                task.description = Some(description.clone());
            }
            if let Some(priority) = c.priority {
                task.priority = priority.into();
            }
        }
        E::AssigneeChanged(e) => task.assignee_agent_id = e.agent_id.clone(),
        E::AutomationConfigured(e) => {
            task.automation_mode = e.mode;
            task.heartbeat_interval_secs = e.heartbeat.interval_secs.map(saturating_i64);
            task.heartbeat_timeout_secs = e.heartbeat.timeout_secs.map(saturating_i64);
            task.heartbeat_require_input = e.heartbeat.require_input;
            task.schedule_pattern = e.schedule.pattern.clone();
            task.schedule_timezone = e.schedule.timezone.clone();
            task.schedule_max_executions = e.schedule.max_executions.map(i64::from);
        }
        E::TopicQuotaChanged(e) => task.max_topics = e.max_topics.map(i64::from),
        E::Configured(e) => task.config = e.config.clone(),
        E::ModelSnapshotted(e) => {
            task.config.model = Some(e.model.clone());
            task.config.provider = e.provider.clone();
        }
        E::StatusChanged(e) => {
            task.status = e.to;
            task.error = e.error.clone();
            if e.to == TaskStatus::Running {
                task.started_at = Some(e.at);
            }
            if e.to.is_terminal() {
                task.completed_at = Some(e.at);
            }
            if let Some(started) = e.schedule_started_at {
                task.schedule_started_at = Some(started);
            }
        }
        E::TopicStarted(e) => {
            if !e.continued {
                task.total_topics += 1;
                // A new run: the latest schedule run is this one or the one before. (A
                // continued one is found again among all topics: `fold`.)
                if e.trigger == RunTrigger::Schedule {
                    task.last_schedule_run_at = task.last_schedule_run_at.max(Some(e.at));
                }
            }
            task.current_topic_id = Some(e.topic_id.clone());
            task.last_heartbeat_at = Some(e.at);
            task.error = None;
        }
        E::TopicCompleted(e) => {
            task.last_completed_topic_id = Some(e.topic_id.clone());
            task.consecutive_failures = 0;
        }
        E::TopicFailed(e) => task.consecutive_failures = e.consecutive_failures.into(),
        E::HeartbeatRecorded(e) => task.last_heartbeat_at = Some(e.at),
        E::HeartbeatScheduled(e) => {
            task.heartbeat_tick_token = Some(e.tick_token.clone());
            task.next_heartbeat_at = Some(e.due_at);
        }
        E::TickSkipped(e) => {
            task.skipped_ticks += 1;
            task.last_skipped_tick_at = Some(e.at);
        }
        E::DependencyAdded(_)
        | E::DependencyRemoved(_)
        | E::DocumentPinned(_)
        | E::DocumentUnpinned(_)
        | E::CommentAdded(_)
        | E::CommentDeleted(_)
        | E::TopicsTimedOut(_)
        | E::TopicCanceled(_)
        | E::TopicReviewed(_) => {}
    }
}
