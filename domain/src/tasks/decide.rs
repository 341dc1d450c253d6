//! A task's rules for creation, edits, automation, status changes, dependencies, documents and
//! comments. Runs and their ends are in `run` and `lifecycle`.

use super::command::{CreateTask, TaskCommand as C};
use super::event::TaskEvent as E;
use super::event::*;
use super::model::{
    AutomationMode, DependencyKind, HeartbeatConfig, ScheduleConfig, TaskStatus as S,
};
use super::state::Task;
use crate::context::Context;
use crate::cron_jobs::pattern::check_pattern;
use crate::error::DomainError;

const AGGREGATE: &str = "task";

fn non_empty(field: &str, value: &str) -> Result<(), DomainError> {
    if value.trim().is_empty() {
        return Err(DomainError::validation(field, "must not be empty"));
    }
    Ok(())
}

fn check_priority(priority: u8) -> Result<(), DomainError> {
    if priority > 4 {
        return Err(DomainError::validation("priority", "must be 0 (none) to 4 (low)"));
    }
    Ok(())
}

/// Automation settings must make sense for the chosen mode.
pub(super) fn check_automation(
    mode: Option<AutomationMode>,
    heartbeat: &HeartbeatConfig,
    schedule: &ScheduleConfig,
) -> Result<(), DomainError> {
    if heartbeat.interval_secs == Some(0) {
        return Err(DomainError::validation("heartbeat.intervalSecs", "must be more than 0"));
    }
    if heartbeat.timeout_secs == Some(0) {
        return Err(DomainError::validation(
            "heartbeat.timeoutSecs",
            "must be more than 0 (leave it out to turn it off)",
        ));
    }
    if schedule.timezone.trim().is_empty() {
        return Err(DomainError::validation("schedule.timezone", "must not be empty"));
    }
    if let Some(pattern) = &schedule.pattern {
        check_pattern(pattern)
            .map_err(|e| DomainError::validation("schedule.pattern", e.to_string()))?;
    }
    match mode {
        Some(AutomationMode::Heartbeat) if heartbeat.interval_secs.is_none() => Err(
            DomainError::validation("heartbeat.intervalSecs", "heartbeat mode needs an interval"),
        ),
        Some(AutomationMode::Schedule) if schedule.pattern.is_none() => {
            Err(DomainError::validation("schedule.pattern", "schedule mode needs a cron pattern"))
        }
        _ => Ok(()),
    }
}

pub(super) fn create(
    task: &Task,
    create: &CreateTask,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    if task.exists() {
        return Err(DomainError::AlreadyExists { aggregate: AGGREGATE, id: task.id().to_string() });
    }
    non_empty("taskId", &create.task_id)?;
    non_empty("identifier", &create.identifier)?;
    non_empty("instruction", &create.instruction)?;
    check_priority(create.priority)?;
    if create.parent_task_id.as_deref() == Some(create.task_id.as_str()) {
        return Err(DomainError::validation("parentTaskId", "a task cannot be its own parent"));
    }
    if create.max_topics == Some(0) {
        return Err(DomainError::validation(
            "maxTopics",
            "must be at least 1 (leave it out for unlimited)",
        ));
    }
    check_automation(create.automation_mode, &create.heartbeat, &create.schedule)?;
    Ok(vec![E::Created(TaskCreated {
        spec: create.clone(),
        user_id: ctx.user_id.clone(),
        at: ctx.now,
    })])
}

pub(super) fn decide(task: &Task, cmd: &C, ctx: &Context) -> Result<Vec<E>, DomainError> {
    match cmd {
        C::Update(patch) => {
            if let Some(instruction) = &patch.instruction {
                non_empty("instruction", instruction)?;
            }
            if let Some(priority) = patch.priority {
                check_priority(priority)?;
            }
            let mut changes = patch.clone();
            if changes.name == task.name {
                changes.name = None;
            }
            if changes.instruction.as_ref() == Some(&task.instruction) {
                changes.instruction = None;
            }
            if changes.description == task.description {
                changes.description = None;
            }
            if changes.priority == Some(task.priority) {
                changes.priority = None;
            }
            if changes == Default::default() {
                return Ok(Vec::new());
            }
            Ok(vec![E::Updated(TaskUpdated { changes })])
        }
        C::Assign { agent_id } => {
            if agent_id.as_deref().is_some_and(|a| a.trim().is_empty()) {
                return Err(DomainError::validation("agentId", "must not be empty"));
            }
            if *agent_id == task.assignee_agent_id {
                return Ok(Vec::new());
            }
            Ok(vec![E::AssigneeChanged(AssigneeChanged {
                agent_id: agent_id.clone(),
                reason: None,
            })])
        }
        C::ConfigureAutomation { mode, heartbeat, schedule } => {
            check_automation(*mode, heartbeat, schedule)?;
            Ok(vec![E::AutomationConfigured(AutomationConfigured {
                mode: *mode,
                heartbeat: *heartbeat,
                schedule: schedule.clone(),
            })])
        }
        C::SetTopicQuota { max_topics } => {
            if *max_topics == Some(0) {
                return Err(DomainError::validation(
                    "maxTopics",
                    "must be at least 1 (leave it out for unlimited)",
                ));
            }
            Ok(vec![E::TopicQuotaChanged(TopicQuotaChanged { max_topics: *max_topics })])
        }
        C::Configure(config) => Ok(vec![E::Configured(TaskConfigured { config: config.clone() })]),
        C::ChangeStatus { to, error } => change_status(task, *to, error.as_deref(), ctx),
        C::AddDependency { depends_on_id, kind, graph } => {
            non_empty("dependsOnId", depends_on_id)?;
            if depends_on_id == task.id() {
                return Err(DomainError::validation(
                    "dependsOnId",
                    "a task cannot depend on itself",
                ));
            }
            if task.dependencies.contains_key(depends_on_id) {
                return Err(DomainError::AlreadyExists {
                    aggregate: "dependency",
                    id: depends_on_id.clone(),
                });
            }
            if *kind == DependencyKind::Blocks
                && let Some(path) = graph.cycle_if_added(task.id(), depends_on_id)
            {
                return Err(DomainError::DependencyCycle {
                    task_id: task.id().to_string(),
                    depends_on_id: depends_on_id.clone(),
                    path,
                });
            }
            Ok(vec![E::DependencyAdded(DependencyAdded {
                depends_on_id: depends_on_id.clone(),
                kind: *kind,
            })])
        }
        C::RemoveDependency { depends_on_id } => {
            if !task.dependencies.contains_key(depends_on_id) {
                return Err(DomainError::not_found("dependency", depends_on_id.clone()));
            }
            Ok(vec![E::DependencyRemoved(DependencyRemoved {
                depends_on_id: depends_on_id.clone(),
            })])
        }
        C::PinDocument { document_id, pinned_by } => {
            non_empty("documentId", document_id)?;
            if task.documents.contains_key(document_id) {
                return Err(DomainError::AlreadyExists {
                    aggregate: "pinned document",
                    id: document_id.clone(),
                });
            }
            Ok(vec![E::DocumentPinned(DocumentPinned {
                document_id: document_id.clone(),
                pinned_by: *pinned_by,
                at: ctx.now,
            })])
        }
        C::UnpinDocument { document_id } => {
            if !task.documents.contains_key(document_id) {
                return Err(DomainError::not_found("pinned document", document_id.clone()));
            }
            Ok(vec![E::DocumentUnpinned(DocumentUnpinned { document_id: document_id.clone() })])
        }
        C::AddComment { comment_id, author, content, brief_id, topic_id } => {
            non_empty("commentId", comment_id)?;
            non_empty("content", content)?;
            if task.comment_ids.contains(comment_id) {
                return Err(DomainError::AlreadyExists {
                    aggregate: "comment",
                    id: comment_id.clone(),
                });
            }
            if let Some(topic) = topic_id
                && !task.topics.contains_key(topic)
            {
                return Err(DomainError::not_found("topic", topic.clone()));
            }
            Ok(vec![E::CommentAdded(CommentAdded {
                comment_id: comment_id.clone(),
                author: author.clone(),
                content: content.clone(),
                brief_id: brief_id.clone(),
                topic_id: topic_id.clone(),
                at: ctx.now,
            })])
        }
        C::DeleteComment { comment_id } => {
            if !task.comment_ids.contains(comment_id) {
                return Err(DomainError::not_found("comment", comment_id.clone()));
            }
            Ok(vec![E::CommentDeleted(CommentDeleted { comment_id: comment_id.clone() })])
        }
        C::ReviewTopic { topic_id, score, passed, scores } => {
            if !task.topics.contains_key(topic_id) {
                return Err(DomainError::not_found("topic", topic_id.clone()));
            }
            if *score > 100 || scores.iter().any(|s| s.score > 100) {
                return Err(DomainError::validation("score", "must be between 0 and 100"));
            }
            Ok(vec![E::TopicReviewed(TopicReviewed {
                topic_id: topic_id.clone(),
                score: *score,
                passed: *passed,
                scores: scores.clone(),
                at: ctx.now,
            })])
        }
        C::RecordHeartbeat => Ok(vec![E::HeartbeatRecorded(HeartbeatRecorded { at: ctx.now })]),
        C::Create(_)
        | C::Run(_)
        | C::RunFailed { .. }
        | C::CompleteTopic(_)
        | C::CancelTopic { .. }
        | C::CheckHeartbeatTimeout
        | C::SkipIdleTick { .. } => {
            Err(DomainError::transition(AGGREGATE, task.status, "route this command through"))
        }
    }
}

/// Which manual status changes are allowed. `running` is only entered by a run; a canceled
/// task only reopens to backlog; a completed task reopens to backlog or is canceled.
pub fn status_change_allowed(from: S, to: S) -> bool {
    if from == to || to == S::Running {
        return false;
    }
    match from {
        S::Canceled => to == S::Backlog,
        S::Completed => matches!(to, S::Backlog | S::Canceled),
        _ => true,
    }
}

fn change_status(
    task: &Task,
    to: S,
    error: Option<&str>,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    if error.is_some() && to != S::Failed {
        return Err(DomainError::validation(
            "error",
            "an error text is only accepted with status failed",
        ));
    }
    if !status_change_allowed(task.status, to) {
        return Err(DomainError::transition(AGGREGATE, task.status, status_verb(to)));
    }
    if to == S::Scheduled && task.automation_mode.is_none() {
        return Err(DomainError::validation(
            "status",
            "only an automated task (heartbeat or schedule) can be scheduled",
        ));
    }
    let mut events = Vec::new();
    // Leaving running cancels the running topics; their operations are not touched here.
    if task.status == S::Running {
        for topic in task.running_topics() {
            events.push(E::TopicCanceled(TopicCanceled {
                topic_id: topic.topic_id.clone(),
                operation_id: topic.operation_id.clone(),
                reason: format!("task moved to {to}"),
                at: ctx.now,
            }));
        }
    }
    let schedule_started_at = (to == S::Scheduled
        && task.automation_mode == Some(AutomationMode::Schedule)
        && task.status != S::Running)
        .then_some(ctx.now);
    events.push(E::StatusChanged(StatusChanged {
        from: task.status,
        to,
        error: error.map(str::to_string),
        reason: Some("manual".into()),
        schedule_started_at,
        at: ctx.now,
    }));
    // A user starting a heartbeat schedule publishes the first tick right away.
    if to == S::Scheduled
        && task.automation_mode == Some(AutomationMode::Heartbeat)
        && !matches!(task.status, S::Running | S::Scheduled)
    {
        events.push(E::HeartbeatScheduled(HeartbeatScheduled {
            due_at: ctx.now,
            tick_token: ctx.derived_id("tick", 0),
        }));
    }
    Ok(events)
}

fn status_verb(to: S) -> &'static str {
    match to {
        S::Backlog => "move to backlog",
        S::Running => "set running by hand (start a run instead)",
        S::Paused => "pause",
        S::Scheduled => "schedule",
        S::Completed => "complete",
        S::Failed => "fail",
        S::Canceled => "cancel",
    }
}
