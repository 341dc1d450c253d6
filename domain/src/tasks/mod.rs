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
pub mod graph;
mod lifecycle;
pub mod model;
mod run;
mod state;
pub mod tick;

#[cfg(test)]
mod tests;

pub use command::{CreateTask, RunTask, TaskCommand, TaskPatch, TopicEnd, TopicOutcome};
pub use event::TaskEvent;
pub use lifecycle::{BriefVerdict, should_emit_topic_brief};
pub use model::{
    AutomationMode, CommentAuthor, DependencyKind, FAILURE_FUSE, HeartbeatConfig, PinnedBy,
    RunTrigger, ScheduleConfig, TaskConfig, TaskStatus, Topic, TopicReview, TopicStatus,
};
pub use state::{Task, heartbeat_deadline};

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::scope::Scope;
use crate::streams::StreamKind;
pub use graph::BlocksGraph;

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
            C::SkipIdleTick { tick_token, dependency_finished_at } => {
                tick::skip_idle(self, tick_token, *dependency_finished_at, ctx)
            }
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
