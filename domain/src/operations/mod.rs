//! Operation: one agent run (LobeHub `agent_operations`, the Go system's Run).
//!
//! ```text
//! idle ──claim──▶ running ⇄ waiting_for_human        (ask / answer, timeout)
//!                    ⇅      waiting_for_async_tool   (await / every key reported)
//!                    └──▶ done | error | interrupted | cancelled   (exactly once)
//!                                     │ resume (canResume) ──▶ running, no lease
//! ```
//!
//! - A worker claims an operation with a lease and renews it; a running operation whose lease
//!   expired is interrupted ([`OperationCommand::ExpireLease`], issued by the reaper, also at
//!   server start); `Resume` puts an interrupted run whose interruption allows it back into
//!   the queue (see [`crate::rules::operation_resume`]). A pause releases the lease: the wait is durable in the log and needs no
//!   worker; after resuming, a worker claims it again.
//! - Only the lease holder reports: a claim answers a lease token, and every report on a run
//!   that holds a lease (steps, phases, plans, todos, artifacts, scores, cards, awaits,
//!   sub-agents, completion, renewals) must present it; steps, phases, plans, todos, cards,
//!   awaits and completion need a claimed run. See `lease`.
//! - Usage fields are `None` until measured; max_steps and cost_limit stop the run after the
//!   step that reaches them.
//! - Conversation busy, the background sub-agent limit, child registration and cancel cascades
//!   span several streams: see [`crate::rules`].

pub mod command;
mod decide;
pub mod event;
mod evolve;
pub mod hitl;
mod lease;
pub mod model;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::values::ReviewScore;
pub use command::{CreateOperation, OperationCommand, StepReport};
pub use event::OperationEvent;
pub use hitl::{CardAnswer, CardKind, HitlCard, OnTimeout};
pub use lease::{MAX_LEASE_SECS, lease_token, lease_token_hash};
pub use model::{
    Artifact, CHILD_RESULT_MAX_CHARS, CompletionReason, Interruption, ItemStatus, Lease,
    OperationError, OperationKind, OperationStatus, Phase, Plan, PlanStep, Todo, ToolCall, Usage,
    cap_child_result,
};

use crate::aggregate::{Aggregate, StreamKind};
use crate::context::Context;
use crate::error::DomainError;
use crate::scope::Scope;

/// A card waiting for its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCard {
    /// The card.
    pub card: HitlCard,
    /// When it was asked.
    pub asked_at: DateTime<Utc>,
    /// When its timeout fires.
    pub deadline: Option<DateTime<Utc>>,
}

/// The state of one operation, folded from `operation-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// What it was created with; `None` while it does not exist.
    pub spec: Option<CreateOperation>,
    /// The owner.
    pub user_id: String,
    /// Status.
    pub status: OperationStatus,
    /// Phase while running.
    pub phase: Option<Phase>,
    /// Why it stopped.
    pub completion_reason: Option<CompletionReason>,
    /// Created.
    pub created_at: Option<DateTime<Utc>>,
    /// First claimed.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub completed_at: Option<DateTime<Utc>>,
    /// Steps recorded.
    pub step_count: u32,
    /// Summed usage (fields absent until measured).
    pub usage: Usage,
    /// Tool calls made (absent until a step was reported).
    pub tool_calls: Option<u64>,
    /// The current lease.
    pub lease: Option<Lease>,
    /// The card being waited on.
    pub pending_card: Option<PendingCard>,
    /// Keys still awaited while waiting_for_async_tool.
    pub awaiting: BTreeSet<String>,
    /// Keys whose result arrived.
    pub received: BTreeSet<String>,
    /// Child operations → background flag.
    pub children: BTreeMap<String, bool>,
    /// The current plan.
    pub plan: Option<Plan>,
    /// The current todo list.
    pub todos: Option<Vec<Todo>>,
    /// Artifacts produced.
    pub artifacts: Vec<Artifact>,
    /// Review scores.
    pub scores: Vec<ReviewScore>,
    /// Total time humans took to answer, in ms (absent until a card was answered).
    pub human_waiting_ms: Option<u64>,
    /// The error of a failed run.
    pub error: Option<OperationError>,
    /// The interruption of an interrupted run.
    pub interruption: Option<Interruption>,
}

impl Operation {
    /// Does it exist?
    pub fn exists(&self) -> bool {
        self.spec.is_some()
    }

    /// Its id (empty while it does not exist).
    pub fn id(&self) -> &str {
        self.spec.as_ref().map_or("", |s| s.operation_id.as_str())
    }

    /// Its kind.
    pub fn kind(&self) -> Option<OperationKind> {
        self.spec.as_ref().map(|s| s.kind)
    }

    /// The parent of a sub-agent.
    pub fn parent_operation_id(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.parent_operation_id.as_deref())
    }

    /// The conversation it belongs to.
    pub fn topic_id(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.topic_id.as_deref())
    }

    /// Child operation ids.
    pub fn child_ids(&self) -> impl Iterator<Item = &str> {
        self.children.keys().map(String::as_str)
    }

    /// Has it ended?
    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }
}

impl Aggregate for Operation {
    type Command = OperationCommand;
    type Event = OperationEvent;
    const KIND: StreamKind = StreamKind::Operation;

    fn decide(
        &self,
        command: &OperationCommand,
        ctx: &Context,
    ) -> Result<Vec<OperationEvent>, DomainError> {
        decide::decide(self, command, ctx)
    }

    fn evolve(self, event: &OperationEvent) -> Self {
        evolve::evolve(self, event)
    }

    fn scope(&self) -> Scope {
        let spec = self.spec.as_ref();
        Scope {
            topic_id: spec.and_then(|s| s.topic_id.clone()),
            task_id: spec.and_then(|s| s.task_id.clone()),
            agent_id: spec.map(|s| s.agent.agent_id.clone()),
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.spec.is_none() {
            return if *self == Operation::default() {
                Ok(())
            } else {
                Err("state without creation".into())
            };
        }
        let status = self.status;
        if status.is_finished() != self.completed_at.is_some() {
            return Err(format!("{status} but completed_at is {:?}", self.completed_at));
        }
        if status.is_finished() && (self.lease.is_some() || self.pending_card.is_some()) {
            return Err("a finished operation holds a lease or a card".into());
        }
        if (status == OperationStatus::WaitingForHuman) != self.pending_card.is_some() {
            return Err("waiting_for_human exactly when a card is pending".into());
        }
        if (status == OperationStatus::WaitingForAsyncTool) == self.awaiting.is_empty() {
            return Err("waiting_for_async_tool exactly when keys are awaited".into());
        }
        if status.is_waiting() && self.lease.is_some() {
            return Err("a paused operation holds a lease".into());
        }
        if status != OperationStatus::Idle && self.started_at.is_none() && !status.is_finished() {
            return Err("running without a start time".into());
        }
        if let Some(max) = self.spec.as_ref().and_then(|s| s.max_steps)
            && self.step_count > max
        {
            return Err(format!("{} steps recorded, max {max}", self.step_count));
        }
        if self.awaiting.iter().any(|k| self.received.contains(k)) {
            return Err("a received key is still awaited".into());
        }
        Ok(())
    }
}
