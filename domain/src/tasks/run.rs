//! Starting a run of a task (upstream `TaskRunnerService.runTask`), a failed start, cancelling a
//! topic, and the lazy heartbeat timeout.
//!
//! Order of checks in [`run`]: the task exists and is not canceled; the run's agent is the
//! assignee (or the inbox agent when there is none); **stale topics are timed out first** (a
//! deliberate difference from upstream, which checks the conflict first and so lets a dead run
//! block the task until someone reads its detail); then a still-running topic is a conflict;
//! the topic quota; then the events: inbox fallback, status → running (remembered on the topic
//! as `setRunning`), model snapshot, topic started (which is also the heartbeat).

use super::command::RunTask;
use super::event::TaskEvent as E;
use super::event::*;
use super::model::{AutomationMode, TaskStatus as S, TopicStatus};
use super::state::Task;
use crate::agents::INBOX_AGENT_ID;
use crate::context::Context;
use crate::deadline::after;
use crate::error::DomainError;

const AGGREGATE: &str = "task";

pub(super) fn run(task: &Task, cmd: &RunTask, ctx: &Context) -> Result<Vec<E>, DomainError> {
    if task.status == S::Canceled {
        return Err(DomainError::transition(AGGREGATE, task.status, "run"));
    }
    if cmd.topic_id.trim().is_empty() || cmd.operation_id.trim().is_empty() {
        return Err(DomainError::validation(
            "topicId",
            "a run needs a topic id and an operation id",
        ));
    }
    let expected_agent = task.assignee_agent_id.as_deref().unwrap_or(INBOX_AGENT_ID);
    if cmd.agent.agent_id != expected_agent {
        return Err(DomainError::validation(
            "agent",
            format!(
                "the run must use the task's agent {expected_agent}, not {}",
                cmd.agent.agent_id
            ),
        ));
    }
    let mut events = Vec::new();

    let stale = task.status == S::Running && task.heartbeat_stale(ctx.now);
    let timed_out: Vec<String> = if stale {
        task.running_topics().map(|t| t.topic_id.clone()).collect()
    } else {
        Vec::new()
    };
    if !timed_out.is_empty() {
        events
            .push(E::TopicsTimedOut(TopicsTimedOut { topic_ids: timed_out.clone(), at: ctx.now }));
    }
    let still_running = |topic_id: &str| !timed_out.iter().any(|t| t == topic_id);

    let (seq, continued) = if cmd.continue_topic {
        let topic = task
            .topics
            .get(&cmd.topic_id)
            .ok_or_else(|| DomainError::not_found("topic", cmd.topic_id.clone()))?;
        if topic.status == TopicStatus::Running && still_running(&topic.topic_id) {
            return Err(DomainError::TopicRunning {
                task_id: task.id().to_string(),
                topic_id: topic.topic_id.clone(),
            });
        }
        (topic.seq, true)
    } else {
        if task.topics.contains_key(&cmd.topic_id) {
            return Err(DomainError::AlreadyExists {
                aggregate: "topic",
                id: cmd.topic_id.clone(),
            });
        }
        (task.total_topics + 1, false)
    };
    if let Some(running) = task.running_topics().find(|t| still_running(&t.topic_id)) {
        return Err(DomainError::TopicRunning {
            task_id: task.id().to_string(),
            topic_id: running.topic_id.clone(),
        });
    }
    if !continued
        && let Some(max) = task.max_topics
        && task.total_topics >= max
    {
        return Err(DomainError::LimitExceeded {
            limit: "topics (runs) of this task",
            max: u64::from(max),
        });
    }

    if task.assignee_agent_id.is_none() {
        events.push(E::AssigneeChanged(AssigneeChanged {
            agent_id: Some(INBOX_AGENT_ID.to_string()),
            reason: Some("inbox_fallback".into()),
        }));
    }
    let set_running = task.status != S::Running;
    if set_running {
        events.push(E::StatusChanged(StatusChanged {
            from: task.status,
            to: S::Running,
            error: None,
            reason: Some("run_started".into()),
            schedule_started_at: None,
            at: ctx.now,
        }));
    }
    if task.config.model.is_none()
        && let Some(model) = &cmd.agent.model
    {
        events.push(E::ModelSnapshotted(ModelSnapshotted {
            model: model.clone(),
            provider: cmd.agent.provider.clone(),
        }));
    }
    events.push(E::TopicStarted(TopicStarted {
        topic_id: cmd.topic_id.clone(),
        seq,
        operation_id: cmd.operation_id.clone(),
        trigger: cmd.trigger,
        agent_id: cmd.agent.agent_id.clone(),
        continued,
        set_running,
        previous_status: set_running.then_some(task.status),
        previous_handoff_topic_id: task.last_completed_topic_id.clone(),
        extra_prompt: cmd.extra_prompt.clone(),
        at: ctx.now,
    }));
    Ok(events)
}

/// The run could not start: the topic fails; the status rolls back only if this run set it
/// and it is still running (automated → scheduled, else paused, with the error).
pub(super) fn run_failed(
    task: &Task,
    topic_id: &str,
    error: &str,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    let topic =
        task.topics.get(topic_id).ok_or_else(|| DomainError::not_found("topic", topic_id))?;
    if topic.status != TopicStatus::Running {
        return Err(DomainError::transition("topic", topic.status, "fail the start of"));
    }
    let mut events = vec![E::TopicFailed(TopicFailed {
        topic_id: topic_id.to_string(),
        operation_id: topic.operation_id.clone(),
        trigger: topic.trigger,
        error: error.to_string(),
        error_code: Some("run_start_failed".into()),
        consecutive_failures: task.consecutive_failures,
        at: ctx.now,
    })];
    if topic.set_running && task.status == S::Running {
        let to = if task.automation_mode.is_some() { S::Scheduled } else { S::Paused };
        events.push(E::StatusChanged(StatusChanged {
            from: S::Running,
            to,
            error: Some(error.to_string()),
            reason: Some("run_start_failed".into()),
            schedule_started_at: None,
            at: ctx.now,
        }));
    }
    Ok(events)
}

/// Cancel a running topic; the task pauses (the topic's operation is not stopped by this).
pub(super) fn cancel_topic(
    task: &Task,
    topic_id: &str,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    let topic =
        task.topics.get(topic_id).ok_or_else(|| DomainError::not_found("topic", topic_id))?;
    if topic.status != TopicStatus::Running {
        return Err(DomainError::transition("topic", topic.status, "cancel"));
    }
    let mut events = vec![E::TopicCanceled(TopicCanceled {
        topic_id: topic_id.to_string(),
        operation_id: topic.operation_id.clone(),
        reason: "canceled by user".into(),
        at: ctx.now,
    })];
    if task.status == S::Running {
        events.push(E::StatusChanged(StatusChanged {
            from: S::Running,
            to: S::Paused,
            error: None,
            reason: Some("topic_canceled".into()),
            schedule_started_at: None,
            at: ctx.now,
        }));
    }
    Ok(events)
}

/// A running task whose heartbeat is older than its timeout pauses with `Heartbeat timeout`
/// and its running topics time out.
pub(super) fn check_heartbeat_timeout(task: &Task, ctx: &Context) -> Result<Vec<E>, DomainError> {
    if task.status != S::Running {
        return Err(DomainError::transition(AGGREGATE, task.status, "time out the heartbeat of"));
    }
    if !task.heartbeat_stale(ctx.now) {
        let due = match (task.last_heartbeat_at, task.heartbeat.timeout_secs) {
            (Some(last), Some(secs)) => after(last, secs),
            _ => {
                return Err(DomainError::transition(
                    AGGREGATE,
                    "running without a heartbeat timeout",
                    "time out",
                ));
            }
        };
        return Err(DomainError::NotDue {
            what: format!("heartbeat timeout of task {}", task.id()),
            due_at: due,
        });
    }
    let topic_ids: Vec<String> = task.running_topics().map(|t| t.topic_id.clone()).collect();
    let mut events = Vec::new();
    if !topic_ids.is_empty() {
        events.push(E::TopicsTimedOut(TopicsTimedOut { topic_ids, at: ctx.now }));
    }
    events.push(E::StatusChanged(StatusChanged {
        from: S::Running,
        to: S::Paused,
        error: Some("Heartbeat timeout".into()),
        reason: Some("heartbeat_timeout".into()),
        schedule_started_at: None,
        at: ctx.now,
    }));
    Ok(events)
}

/// Is the task automated (heartbeat or schedule)?
pub(super) fn automated(task: &Task) -> bool {
    matches!(task.automation_mode, Some(AutomationMode::Heartbeat | AutomationMode::Schedule))
}
