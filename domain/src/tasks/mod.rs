//! Task: a long-lived ticket (stream `task-<id>`), its dependencies, pinned documents,
//! comments and topics (runs).
//!
//! - [`decide`](Aggregate::decide) covers creation, edits, status changes, dependencies
//!   (self edges refused; a `blocks` edge closing a cycle refused with
//!   [`DomainError::DependencyCycle`], checked against the [`BlocksGraph`] the command carries),
//!   documents and comments;
//! - `run` covers starting a run (inbox fallback, conflict on a running topic, stale topics
//!   timed out first, model/provider snapshot, a failed start rolls back only what it set),
//!   cancelling a topic and the lazy heartbeat timeout;
//! - `lifecycle` is upstream's `onTopicComplete`: heartbeat, topic status, hand-off, brief
//!   decision, next status, heartbeat re-arm;
//! - [`tick`] holds the scheduler's pure skip rules for heartbeat and schedule ticks.

pub mod command;
mod decide;
pub mod event;
mod evolve;
mod lifecycle;
pub mod model;
mod run;
pub mod tick;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::values::Handoff;
pub use command::{CreateTask, RunTask, TaskCommand, TaskPatch, TopicEnd, TopicOutcome};
pub use event::TaskEvent;
pub use lifecycle::{BriefVerdict, should_emit_topic_brief};
pub use model::{
    AutomationMode, CommentAuthor, DependencyKind, FAILURE_FUSE, HeartbeatConfig, PinnedBy,
    RunTrigger, ScheduleConfig, TaskConfig, TaskStatus, Topic, TopicReview, TopicStatus,
};

use crate::aggregate::{Aggregate, StreamKind};
use crate::context::Context;
use crate::error::DomainError;
use crate::scope::Scope;
pub use crate::task_graph::BlocksGraph;

/// The state of one task, folded from `task-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// What it was created with; `None` while it does not exist.
    pub spec: Option<CreateTask>,
    /// Owner.
    pub user_id: String,
    /// Name.
    pub name: Option<String>,
    /// Instruction.
    pub instruction: String,
    /// Description.
    pub description: Option<String>,
    /// Priority (0 none … 4 low).
    pub priority: u8,
    /// Status.
    pub status: TaskStatus,
    /// The last error.
    pub error: Option<String>,
    /// Assignee agent.
    pub assignee_agent_id: Option<String>,
    /// Automation mode.
    pub automation_mode: Option<AutomationMode>,
    /// Heartbeat settings.
    pub heartbeat: HeartbeatConfig,
    /// Schedule settings.
    pub schedule: ScheduleConfig,
    /// Most topics.
    pub max_topics: Option<u32>,
    /// Topics opened.
    pub total_topics: u32,
    /// The latest topic.
    pub current_topic_id: Option<String>,
    /// The latest completed topic (the next run's prompt starts from its hand-off).
    pub last_completed_topic_id: Option<String>,
    /// Run settings.
    pub config: TaskConfig,
    /// Upstream task → kind.
    pub dependencies: BTreeMap<String, DependencyKind>,
    /// Pinned document → who pinned it.
    pub documents: BTreeMap<String, PinnedBy>,
    /// Live comment ids.
    pub comment_ids: BTreeSet<String>,
    /// Topic id → topic.
    pub topics: BTreeMap<String, Topic>,
    /// Last heartbeat.
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// Last set running.
    pub started_at: Option<DateTime<Utc>>,
    /// Last reached a terminal status.
    pub completed_at: Option<DateTime<Utc>>,
    /// Consecutive failed automated runs.
    pub consecutive_failures: u32,
    /// The current heartbeat tick's token.
    pub tick_token: Option<String>,
    /// When the current heartbeat tick falls due.
    pub next_tick_at: Option<DateTime<Utc>>,
    /// Start of the current schedule max-executions window.
    pub schedule_started_at: Option<DateTime<Utc>>,
    /// The hand-off of the last completed topic: the next run starts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handoff: Option<Handoff>,
}

impl Task {
    /// Does it exist?
    pub fn exists(&self) -> bool {
        self.spec.is_some()
    }

    /// Its id (empty while it does not exist).
    pub fn id(&self) -> &str {
        self.spec.as_ref().map_or("", |s| s.task_id.as_str())
    }

    /// Its parent task.
    pub fn parent_task_id(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.parent_task_id.as_deref())
    }

    /// Running topics, by id.
    pub fn running_topics(&self) -> impl Iterator<Item = &Topic> {
        self.topics.values().filter(|t| t.status == TopicStatus::Running)
    }

    /// The `blocks` upstreams of this task.
    pub fn blocked_by(&self) -> impl Iterator<Item = &str> {
        self.dependencies
            .iter()
            .filter(|(_, k)| **k == DependencyKind::Blocks)
            .map(|(id, _)| id.as_str())
    }

    /// Is its last heartbeat older than its heartbeat timeout at `now`?
    pub fn heartbeat_stale(&self, now: DateTime<Utc>) -> bool {
        match (self.last_heartbeat_at, self.heartbeat.timeout_secs) {
            (Some(last), Some(timeout)) => {
                let timeout = i64::try_from(timeout).unwrap_or(i64::MAX);
                (now - last).num_seconds() > timeout
            }
            _ => false,
        }
    }

    /// Runs triggered by the schedule since the current schedule window opened.
    pub fn schedule_runs_in_window(&self) -> u32 {
        let since = self.schedule_started_at;
        let count = self
            .topics
            .values()
            .filter(|t| {
                t.trigger == RunTrigger::Schedule && since.is_none_or(|s| t.started_at >= s)
            })
            .count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// Has the topic quota (max topics, or the schedule's max executions in its window) been
    /// reached? The schedule cap only counts once a window was opened, as upstream.
    pub fn quota_reached(&self) -> bool {
        let topics_full = self.max_topics.is_some_and(|max| self.total_topics >= max);
        let schedule_full = self.automation_mode == Some(AutomationMode::Schedule)
            && self.schedule_started_at.is_some()
            && self
                .schedule
                .max_executions
                .is_some_and(|max| max > 0 && self.schedule_runs_in_window() >= max);
        topics_full || schedule_full
    }
}

impl Aggregate for Task {
    type Command = TaskCommand;
    type Event = TaskEvent;
    const KIND: StreamKind = StreamKind::Task;

    fn decide(&self, command: &TaskCommand, ctx: &Context) -> Result<Vec<TaskEvent>, DomainError> {
        use TaskCommand as C;
        match command {
            C::Create(create) => decide::create(self, create, ctx),
            _ if !self.exists() => Err(DomainError::not_found("task", "")),
            C::Run(run) => run::run(self, run, ctx),
            C::RunFailed { topic_id, error } => run::run_failed(self, topic_id, error, ctx),
            C::CancelTopic { topic_id } => run::cancel_topic(self, topic_id, ctx),
            C::CheckHeartbeatTimeout => run::check_heartbeat_timeout(self, ctx),
            C::CompleteTopic(outcome) => lifecycle::complete_topic(self, outcome, ctx),
            other => decide::decide(self, other, ctx),
        }
    }

    fn evolve(self, event: &TaskEvent) -> Self {
        evolve::evolve(self, event)
    }

    fn scope(&self) -> Scope {
        Scope {
            task_id: self.exists().then(|| self.id().to_string()),
            agent_id: self.assignee_agent_id.clone(),
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if !self.exists() {
            return if *self == Task::default() {
                Ok(())
            } else {
                Err("state without creation".into())
            };
        }
        if self.dependencies.contains_key(self.id()) {
            return Err("a task depends on itself".into());
        }
        let running = self.running_topics().count();
        if running > 1 {
            return Err(format!("{running} topics running at once"));
        }
        if running == 1 && self.status != TaskStatus::Running {
            return Err(format!("a topic runs while the task is {}", self.status));
        }
        if self.topics.len() as u64 > u64::from(self.total_topics) {
            return Err("more topics than counted".into());
        }
        if self.error.is_some()
            && !matches!(
                self.status,
                TaskStatus::Failed | TaskStatus::Paused | TaskStatus::Scheduled
            )
        {
            return Err(format!("an error on a {} task", self.status));
        }
        Ok(())
    }
}
