//! How each task event changes the state. Never fails: events are facts.

use super::event::TaskEvent as E;
use super::model::{CommentAuthor, PinnedBy, TaskStatus as S, Topic, TopicReview, TopicStatus};
use super::state::Task;

pub(super) fn evolve(mut task: Task, event: &E) -> Task {
    match event {
        E::Created(e) => {
            let spec = &e.spec;
            task.user_id = e.user_id.clone();
            task.name = spec.name.clone();
            task.instruction = spec.instruction.clone();
            task.description = spec.description.clone();
            task.priority = spec.priority;
            task.status = S::Backlog;
            task.assignee_agent_id = spec.assignee_agent_id.clone();
            task.automation_mode = spec.automation_mode;
            task.heartbeat = spec.heartbeat;
            task.schedule = spec.schedule.clone();
            task.max_topics = spec.max_topics;
            task.config = spec.config.clone();
            task.spec = Some(spec.clone());
        }
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
                task.priority = priority;
            }
        }
        E::AssigneeChanged(e) => task.assignee_agent_id = e.agent_id.clone(),
        E::AutomationConfigured(e) => {
            task.automation_mode = e.mode;
            task.heartbeat = e.heartbeat;
            task.schedule = e.schedule.clone();
        }
        E::TopicQuotaChanged(e) => task.max_topics = e.max_topics,
        E::Configured(e) => task.config = e.config.clone(),
        E::ModelSnapshotted(e) => {
            task.config.model = Some(e.model.clone());
            task.config.provider = e.provider.clone();
        }
        E::StatusChanged(e) => {
            task.status = e.to;
            task.error = e.error.clone();
            if e.to == S::Running {
                task.started_at = Some(e.at);
            }
            if e.to.is_terminal() {
                task.completed_at = Some(e.at);
            }
            if let Some(started) = e.schedule_started_at {
                task.schedule_started_at = Some(started);
            }
        }
        E::DependencyAdded(e) => {
            task.dependencies.insert(e.depends_on_id.clone(), e.kind);
        }
        E::DependencyRemoved(e) => {
            task.dependencies.remove(&e.depends_on_id);
        }
        E::DocumentPinned(e) => {
            task.documents.insert(e.document_id.clone(), e.pinned_by);
            if e.pinned_by == PinnedBy::User {
                task.last_input_at = task.last_input_at.max(Some(e.at));
            }
        }
        E::DocumentUnpinned(e) => {
            task.documents.remove(&e.document_id);
        }
        E::CommentAdded(e) => {
            task.comment_ids.insert(e.comment_id.clone());
            if matches!(e.author, CommentAuthor::User(_)) {
                task.last_input_at = task.last_input_at.max(Some(e.at));
            }
        }
        E::CommentDeleted(e) => {
            task.comment_ids.remove(&e.comment_id);
        }
        E::TopicStarted(e) => {
            if !e.continued {
                task.total_topics += 1;
            }
            let review = task.topics.get(&e.topic_id).and_then(|t| t.review.clone());
            task.topics.insert(
                e.topic_id.clone(),
                Topic {
                    topic_id: e.topic_id.clone(),
                    seq: e.seq,
                    operation_id: e.operation_id.clone(),
                    status: TopicStatus::Running,
                    trigger: e.trigger,
                    set_running: e.set_running,
                    previous_status: e.previous_status,
                    started_at: e.at,
                    ended_at: None,
                    review,
                },
            );
            task.current_topic_id = Some(e.topic_id.clone());
            task.last_heartbeat_at = Some(e.at);
            task.error = None;
        }
        E::TopicsTimedOut(e) => {
            for id in &e.topic_ids {
                end_topic(&mut task, id, TopicStatus::Timeout, e.at);
            }
        }
        E::TopicCompleted(e) => {
            end_topic(&mut task, &e.topic_id, TopicStatus::Completed, e.at);
            task.last_completed_topic_id = Some(e.topic_id.clone());
            task.last_handoff = Some(e.handoff.clone());
            task.consecutive_failures = 0;
        }
        E::TopicFailed(e) => {
            end_topic(&mut task, &e.topic_id, TopicStatus::Failed, e.at);
            task.consecutive_failures = e.consecutive_failures;
        }
        E::TopicCanceled(e) => end_topic(&mut task, &e.topic_id, TopicStatus::Canceled, e.at),
        E::TopicReviewed(e) => {
            if let Some(topic) = task.topics.get_mut(&e.topic_id) {
                topic.review = Some(TopicReview {
                    score: e.score,
                    passed: e.passed,
                    scores: e.scores.clone(),
                });
            }
        }
        E::HeartbeatRecorded(e) => task.last_heartbeat_at = Some(e.at),
        E::HeartbeatScheduled(e) => {
            task.tick_token = Some(e.tick_token.clone());
            task.next_tick_at = Some(e.due_at);
        }
        E::TickSkipped(e) => {
            task.skipped_ticks = task.skipped_ticks.saturating_add(1);
            task.last_skipped_tick_at = Some(e.at);
        }
    }
    task
}

fn end_topic(
    task: &mut Task,
    topic_id: &str,
    status: TopicStatus,
    at: chrono::DateTime<chrono::Utc>,
) {
    if let Some(topic) = task.topics.get_mut(topic_id) {
        topic.status = status;
        topic.ended_at = Some(at);
    }
}
