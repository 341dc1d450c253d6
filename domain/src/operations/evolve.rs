//! How each operation event changes the state. Never fails: events are facts.

use super::event::OperationEvent as E;
use super::hitl::OnTimeout;
use super::model::{CompletionReason, Interruption, Lease, OperationStatus as S, Phase};
use super::state::{Operation, PendingCard};

pub(super) fn evolve(mut op: Operation, event: &E) -> Operation {
    match event {
        E::Created(e) => {
            op.spec = Some(e.spec.clone());
            op.user_id = e.user_id.clone();
            op.status = S::Idle;
            op.created_at = Some(e.at);
        }
        E::Claimed(e) => {
            op.lease = Some(Lease {
                worker_id: e.worker_id.clone(),
                expires_at: e.lease_expires_at,
                token_hash: e.token_hash.clone(),
            });
        }
        E::Started(e) => {
            op.status = S::Running;
            op.phase = Some(Phase::Thinking);
            op.started_at = Some(e.at);
        }
        E::LeaseRenewed(e) => {
            let token_hash = op.lease.take().map(|l| l.token_hash).unwrap_or_default();
            op.lease = Some(Lease {
                worker_id: e.worker_id.clone(),
                expires_at: e.lease_expires_at,
                token_hash,
            });
        }
        E::LeaseExpired(_) => op.lease = None,
        E::PhaseChanged(e) => op.phase = Some(e.phase),
        E::StepRecorded(e) => {
            op.step_count = op.step_count.max(e.step_index);
            op.phase = Some(e.phase);
            op.usage = op.usage.plus(e.usage);
            op.tool_calls = Some(op.tool_calls.unwrap_or(0) + e.tool_calls.len() as u64);
        }
        E::PlanUpdated(e) => op.plan = Some(e.plan.clone()),
        E::TodosUpdated(e) => op.todos = Some(e.todos.clone()),
        E::ArtifactRecorded(e) => op.artifacts.push(e.artifact.clone()),
        E::ScoreRecorded(e) => op.scores.push(e.score.clone()),
        E::HumanAsked(e) => {
            op.status = S::WaitingForHuman;
            op.lease = None;
            op.pending_card =
                Some(PendingCard { card: e.card.clone(), asked_at: e.at, deadline: e.deadline });
        }
        E::HumanAnswered(e) => {
            op.status = S::Running;
            op.pending_card = None;
            op.human_waiting_ms = Some(op.human_waiting_ms.unwrap_or(0) + e.waited_ms);
        }
        E::HumanWaitTimedOut(e) => {
            op.human_waiting_ms = Some(op.human_waiting_ms.unwrap_or(0) + e.waited_ms);
            // Fail and cancel are followed by their terminal event, which ends the wait.
            if matches!(e.on_timeout, OnTimeout::UseDefault { .. } | OnTimeout::Continue) {
                op.status = S::Running;
                op.pending_card = None;
            }
        }
        E::AsyncWaitStarted(e) => {
            op.status = S::WaitingForAsyncTool;
            op.lease = None;
            op.awaiting = e.keys.iter().filter(|k| !op.received.contains(*k)).cloned().collect();
        }
        E::ChildSpawned(e) => {
            op.children.insert(e.child_operation_id.clone(), e.background);
        }
        E::AsyncResultReceived(e) => {
            op.received.insert(e.key.clone());
            op.awaiting.remove(&e.key);
            if e.resumes {
                op.status = S::Running;
                op.awaiting.clear();
            }
        }
        E::Completed(e) => finish(&mut op, S::Done, e.reason, e.at),
        E::Failed(e) => {
            op.error = Some(e.error.clone());
            finish(&mut op, S::Error, CompletionReason::Error, e.at);
        }
        E::Interrupted(e) => {
            op.interruption = Some(Interruption {
                reason: e.reason.clone(),
                can_resume: e.can_resume,
                interrupted_at: e.at,
            });
            finish(&mut op, S::Interrupted, CompletionReason::Interrupted, e.at);
        }
        E::Cancelled(e) => finish(&mut op, S::Cancelled, CompletionReason::Cancelled, e.at),
        E::Resumed(_) => {
            op.status = S::Running;
            op.completion_reason = None;
            op.completed_at = None;
            op.interruption = None;
        }
    }
    op
}

fn finish(
    op: &mut Operation,
    status: S,
    reason: CompletionReason,
    at: chrono::DateTime<chrono::Utc>,
) {
    op.status = status;
    op.completion_reason = Some(reason);
    op.completed_at = Some(at);
    op.phase = Some(Phase::Done);
    op.lease = None;
    op.pending_card = None;
    op.awaiting.clear();
}
