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
mod state;

#[cfg(test)]
mod tests;

pub use command::{CreateOperation, OperationCommand, StepReport};
pub use event::OperationEvent;
pub use hitl::{CardAnswer, CardKind, HitlCard, OnTimeout};
pub use lease::{MAX_LEASE_SECS, lease_token, lease_token_hash};
pub use model::{
    Artifact, CHILD_RESULT_MAX_CHARS, CompletionReason, Interruption, ItemStatus, Lease,
    OperationError, OperationKind, OperationStatus, Phase, Plan, PlanStep, Todo, ToolCall,
    cap_child_result,
};
pub use state::{Operation, PendingCard};

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::scope::Scope;
use crate::streams::StreamKind;

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
