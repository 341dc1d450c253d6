//! The operation's rules: which command may happen in which status, and what it records.

use super::command::{CreateOperation, OperationCommand as C, StepReport};
use super::event::OperationEvent as E;
use super::event::*;
use super::hitl::{CardAnswer, OnTimeout};
use super::lease;
use super::model::{CompletionReason, OperationError, OperationStatus as S, cap_child_result};
use super::state::Operation;
use crate::context::Context;
use crate::deadline::{after, millis_between};
use crate::error::DomainError;

const AGGREGATE: &str = "operation";

pub(super) fn decide(op: &Operation, cmd: &C, ctx: &Context) -> Result<Vec<E>, DomainError> {
    let Some(spec) = &op.spec else {
        return match cmd {
            C::Create(create) => create_events(create, ctx),
            _ => Err(DomainError::not_found(AGGREGATE, "")),
        };
    };
    let id = spec.operation_id.as_str();
    match cmd {
        C::Create(_) => {
            Err(DomainError::AlreadyExists { aggregate: AGGREGATE, id: id.to_string() })
        }
        C::Resume => resume(op, ctx),
        // Already ended (by its worker, or by this same check on another instance).
        C::StopAtBudget { .. } if op.status.is_finished() => Ok(Vec::new()),
        // Reviews usually happen after the run; they do not change its status.
        C::RecordScore(score) => {
            lease::check_token(op, id, ctx)?;
            check_score(score.score)?;
            Ok(vec![E::ScoreRecorded(ScoreRecorded { score: score.clone() })])
        }
        live => {
            if op.status.is_finished() {
                return Err(DomainError::AlreadyFinished {
                    aggregate: AGGREGATE,
                    id: id.to_string(),
                    status: op.status.to_string(),
                });
            }
            decide_unfinished(op, id, live, ctx)
        }
    }
}

fn decide_unfinished(
    op: &Operation,
    id: &str,
    cmd: &C,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    match cmd {
        C::Claim { worker_id, lease_secs } => lease::claim(op, id, worker_id, *lease_secs, ctx),
        C::RenewLease { worker_id, lease_secs } => {
            lease::renew(op, id, worker_id, *lease_secs, ctx)
        }
        C::ExpireLease => lease::expire(op, id, ctx),
        C::Interrupt { reason, can_resume } => Ok(vec![E::Interrupted(OperationInterrupted {
            reason: reason.clone(),
            can_resume: *can_resume,
            at: ctx.now,
        })]),
        C::Cancel { reason } => Ok(vec![E::Cancelled(OperationCancelled {
            reason: reason.clone(),
            cascade_from: None,
            at: ctx.now,
        })]),
        C::StopAtBudget { budgets } => {
            if op.status != S::Running
                || crate::budgets::interrupting(budgets, Default::default()).is_none()
            {
                return Ok(Vec::new());
            }
            Ok(vec![E::Completed(OperationCompleted {
                reason: CompletionReason::CostLimit,
                result: None,
                handoff: None,
                brief_judgement: None,
                at: ctx.now,
            })])
        }
        C::AnswerCard { card_id, answer } => answer_card(op, card_id, answer, ctx),
        C::TimeoutCard { card_id } => timeout_card(op, card_id, ctx),
        C::ReceiveAsyncResult { key, success, result } => {
            receive(op, key, *success, result.as_deref())
        }
        C::RegisterChild { child_operation_id, background } => {
            if op.status == S::Idle {
                return Err(DomainError::transition(AGGREGATE, op.status, "spawn a child from"));
            }
            lease::check_token(op, id, ctx)?;
            if op.children.contains_key(child_operation_id) {
                return Err(DomainError::AlreadyExists {
                    aggregate: "child operation",
                    id: child_operation_id.clone(),
                });
            }
            Ok(vec![E::ChildSpawned(ChildSpawned {
                child_operation_id: child_operation_id.clone(),
                background: *background,
            })])
        }
        C::RecordArtifact(artifact) => {
            if op.status == S::Idle {
                return Err(DomainError::transition(AGGREGATE, op.status, "record an artifact on"));
            }
            lease::check_token(op, id, ctx)?;
            if artifact.artifact_id.trim().is_empty() {
                return Err(DomainError::validation("artifactId", "must not be empty"));
            }
            if op.artifacts.iter().any(|a| a.artifact_id == artifact.artifact_id) {
                return Err(DomainError::AlreadyExists {
                    aggregate: "artifact",
                    id: artifact.artifact_id.clone(),
                });
            }
            Ok(vec![E::ArtifactRecorded(ArtifactRecorded { artifact: artifact.clone() })])
        }
        running_only => {
            if op.status != S::Running {
                return Err(DomainError::transition(
                    AGGREGATE,
                    op.status,
                    running_verb(running_only),
                ));
            }
            lease::check_holder(op, id, ctx)?;
            decide_running(op, running_only, ctx)
        }
    }
}

fn running_verb(cmd: &C) -> &'static str {
    match cmd {
        C::ChangePhase(_) => "change the phase of",
        C::RecordStep(_) => "record a step on",
        C::UpdatePlan(_) => "update the plan of",
        C::UpdateTodos(_) => "update the todos of",
        C::AskHuman(_) => "ask a human from",
        C::AwaitAsync { .. } => "await async work in",
        C::Complete { .. } => "complete",
        C::Fail(_) => "fail",
        _ => "change",
    }
}

fn create_events(create: &CreateOperation, ctx: &Context) -> Result<Vec<E>, DomainError> {
    if create.operation_id.trim().is_empty() {
        return Err(DomainError::validation("operationId", "must not be empty"));
    }
    if create.agent.agent_id.trim().is_empty() {
        return Err(DomainError::validation("agent.agentId", "must not be empty"));
    }
    if create.max_steps == Some(0) {
        return Err(DomainError::validation("maxSteps", "must be at least 1"));
    }
    if create.cost_limit_micros == Some(0) {
        return Err(DomainError::validation("costLimitMicros", "must be more than 0"));
    }
    if create.parent_operation_id.as_deref() == Some(create.operation_id.as_str()) {
        return Err(DomainError::validation(
            "parentOperationId",
            "an operation cannot be its own parent",
        ));
    }
    if create.background && create.parent_operation_id.is_none() {
        return Err(DomainError::validation(
            "background",
            "only a sub-agent (with a parent) runs in the background",
        ));
    }
    Ok(vec![E::Created(OperationCreated {
        spec: create.clone(),
        user_id: ctx.user_id.clone(),
        at: ctx.now,
    })])
}

fn resume(op: &Operation, ctx: &Context) -> Result<Vec<E>, DomainError> {
    match (&op.status, &op.interruption) {
        (S::Interrupted, Some(i)) if i.can_resume => Ok(vec![E::Resumed(OperationResumed {
            interrupted_reason: i.reason.clone(),
            at: ctx.now,
        })]),
        (S::Interrupted, _) => {
            Err(DomainError::transition(AGGREGATE, "interrupted without canResume", "resume"))
        }
        (status, _) => Err(DomainError::transition(AGGREGATE, status, "resume")),
    }
}

fn check_score(score: u8) -> Result<(), DomainError> {
    if score > 100 {
        return Err(DomainError::validation("score", "must be between 0 and 100"));
    }
    Ok(())
}

fn decide_running(op: &Operation, cmd: &C, ctx: &Context) -> Result<Vec<E>, DomainError> {
    match cmd {
        C::ChangePhase(phase) => {
            if op.phase == Some(*phase) {
                return Ok(Vec::new());
            }
            Ok(vec![E::PhaseChanged(PhaseChanged { phase: *phase })])
        }
        C::RecordStep(step) => record_step(op, step, ctx),
        C::UpdatePlan(plan) => Ok(vec![E::PlanUpdated(PlanUpdated { plan: plan.clone() })]),
        C::UpdateTodos(todos) => {
            let mut ids = std::collections::BTreeSet::new();
            if let Some(dup) = todos.iter().find(|t| !ids.insert(t.id.as_str())) {
                return Err(DomainError::validation(
                    "todos",
                    format!("todo id '{}' appears twice", dup.id),
                ));
            }
            Ok(vec![E::TodosUpdated(TodosUpdated { todos: todos.clone() })])
        }
        C::AskHuman(card) => {
            card.check()?;
            let deadline = card.timeout.as_ref().map(|t| after(ctx.now, t.after_secs));
            Ok(vec![E::HumanAsked(HumanAsked { card: card.clone(), deadline, at: ctx.now })])
        }
        C::AwaitAsync { keys } => {
            let pending: Vec<String> = keys
                .iter()
                .filter(|k| !op.received.contains(*k))
                .cloned()
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if keys.is_empty() || keys.iter().any(|k| k.trim().is_empty()) {
                return Err(DomainError::validation("keys", "await at least one non-empty key"));
            }
            if pending.is_empty() {
                // Everything already reported: nothing to wait for.
                return Ok(Vec::new());
            }
            Ok(vec![E::AsyncWaitStarted(AsyncWaitStarted { keys: pending, at: ctx.now })])
        }
        C::Complete { result, handoff, brief_judgement } => {
            Ok(vec![E::Completed(OperationCompleted {
                reason: CompletionReason::Done,
                result: result.clone(),
                handoff: handoff.clone(),
                brief_judgement: *brief_judgement,
                at: ctx.now,
            })])
        }
        C::Fail(error) => {
            if error.message.trim().is_empty() {
                return Err(DomainError::validation("error.message", "must not be empty"));
            }
            Ok(vec![E::Failed(OperationFailed { error: error.clone(), at: ctx.now })])
        }
        _ => Err(DomainError::transition(AGGREGATE, op.status, "change")),
    }
}

fn record_step(op: &Operation, step: &StepReport, ctx: &Context) -> Result<Vec<E>, DomainError> {
    if op.spec.as_ref().is_some_and(|s| s.disable_tools) && !step.tool_calls.is_empty() {
        return Err(DomainError::validation(
            "toolCalls",
            "this run has its tools disabled (a group broadcast): report the step without tool calls",
        ));
    }
    let index = op.step_count + 1;
    let mut events = vec![E::StepRecorded(StepRecorded {
        step_index: index,
        phase: step.phase,
        tool_calls: step.tool_calls.clone(),
        usage: step.usage,
        at: ctx.now,
    })];
    let spec = op.spec.as_ref();
    let cost = op.usage.plus(step.usage).cost_micros;
    let cost_limit = spec.and_then(|s| s.cost_limit_micros);
    let stop = if let (Some(cost), Some(limit)) = (cost, cost_limit)
        && cost >= limit
    {
        Some(CompletionReason::CostLimit)
    } else if spec.and_then(|s| s.max_steps).is_some_and(|max| index >= max) {
        Some(CompletionReason::MaxSteps)
    } else if crate::budgets::interrupting(&step.budgets, step.usage).is_some() {
        Some(CompletionReason::CostLimit)
    } else {
        None
    };
    if let Some(reason) = stop {
        events.push(E::Completed(OperationCompleted {
            reason,
            result: None,
            handoff: None,
            brief_judgement: None,
            at: ctx.now,
        }));
    }
    Ok(events)
}

fn answer_card(
    op: &Operation,
    card_id: &str,
    answer: &CardAnswer,
    ctx: &Context,
) -> Result<Vec<E>, DomainError> {
    let pending = op
        .pending_card
        .as_ref()
        .filter(|p| p.card.card_id == card_id)
        .ok_or_else(|| DomainError::not_found("pending card", card_id))?;
    pending.card.check_answer(answer)?;
    Ok(vec![E::HumanAnswered(HumanAnswered {
        card_id: card_id.to_string(),
        answer: answer.clone(),
        waited_ms: millis_between(pending.asked_at, ctx.now),
        at: ctx.now,
    })])
}

fn timeout_card(op: &Operation, card_id: &str, ctx: &Context) -> Result<Vec<E>, DomainError> {
    let pending = op
        .pending_card
        .as_ref()
        .filter(|p| p.card.card_id == card_id)
        .ok_or_else(|| DomainError::not_found("pending card", card_id))?;
    let (Some(timeout), Some(deadline)) = (&pending.card.timeout, pending.deadline) else {
        return Err(DomainError::transition("card", "without a timeout", "time out"));
    };
    if ctx.now < deadline {
        return Err(DomainError::NotDue {
            what: format!("timeout of card {card_id}"),
            due_at: deadline,
        });
    }
    let mut events = vec![E::HumanWaitTimedOut(HumanWaitTimedOut {
        card_id: card_id.to_string(),
        on_timeout: timeout.on_timeout.clone(),
        waited_ms: millis_between(pending.asked_at, ctx.now),
        at: ctx.now,
    })];
    match &timeout.on_timeout {
        OnTimeout::UseDefault { .. } | OnTimeout::Continue => {}
        OnTimeout::Fail => events.push(E::Failed(OperationFailed {
            error: OperationError {
                message: format!("nobody answered card {card_id} in time"),
                error_type: Some("hitl_timeout".into()),
                code: None,
            },
            at: ctx.now,
        })),
        OnTimeout::Cancel => events.push(E::Cancelled(OperationCancelled {
            reason: Some(format!("card {card_id} timed out")),
            cascade_from: None,
            at: ctx.now,
        })),
    }
    Ok(events)
}

fn receive(
    op: &Operation,
    key: &str,
    success: bool,
    result: Option<&str>,
) -> Result<Vec<E>, DomainError> {
    if op.status == S::Idle {
        return Err(DomainError::transition(AGGREGATE, op.status, "deliver a result to"));
    }
    if key.trim().is_empty() {
        return Err(DomainError::validation("key", "must not be empty"));
    }
    if op.received.contains(key) {
        // The same result delivered twice (a reactor re-run) changes nothing.
        return Ok(Vec::new());
    }
    let (result, truncated, original_chars) = match result {
        Some(text) => {
            let (kept, cut) = cap_child_result(text);
            let original = cut.then(|| text.chars().count() as u64);
            (Some(kept), cut, original)
        }
        None => (None, false, None),
    };
    let resumes =
        op.status == S::WaitingForAsyncTool && op.awaiting.len() == 1 && op.awaiting.contains(key);
    Ok(vec![E::AsyncResultReceived(AsyncResultReceived {
        key: key.to_string(),
        success,
        result,
        truncated,
        original_chars,
        resumes,
    })])
}
