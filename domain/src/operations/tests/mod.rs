//! Operation: the transition table (every command × every status) and one test per rule.

mod hitl;
mod props;

use super::*;
use crate::context::Context;
use crate::envelope::Actor;
use crate::operations::hitl::{CardKind, ChoiceOption};
use crate::testing::*;
use crate::values::Usage;
use crate::values::{AgentRef, ReviewScore};

pub(crate) fn agent() -> AgentRef {
    AgentRef {
        agent_id: "a1".into(),
        config_version: 3,
        model: Some("gpt-x".into()),
        provider: Some("openai".into()),
    }
}

pub(crate) fn create(id: &str) -> CreateOperation {
    CreateOperation::new(id, OperationKind::Conversation, agent())
}

pub(super) fn choice_card() -> HitlCard {
    HitlCard::new(
        "c1",
        "Deploy now?",
        CardKind::Choice {
            options: vec![ChoiceOption::new("yes", "Yes"), ChoiceOption::new("no", "No")],
            multiple: false,
        },
    )
    .with_timeout(60, OnTimeout::Continue)
}

/// An operation brought to `status` by real commands (created at 0, claimed by w1 at 1 with a
/// 300 s lease, paused or finished at 2–3).
pub(crate) fn op_in(status: OperationStatus) -> Operation {
    use OperationCommand as C;
    use OperationStatus as S;
    let mut op = apply(Operation::default(), &C::Create(create("op1")), &system_ctx(0)).0;
    if status == S::Idle {
        return op;
    }
    if status == S::Cancelled {
        return apply(op, &C::Cancel { reason: None }, &system_ctx(3)).0;
    }
    op = apply(op, &C::Claim { worker_id: "w1".into(), lease_secs: 300 }, &system_ctx(1)).0;
    let next = match status {
        S::Running => return op,
        S::WaitingForHuman => C::AskHuman(choice_card()),
        S::WaitingForAsyncTool => C::AwaitAsync { keys: vec!["k1".into(), "k2".into()] },
        S::Done => C::Complete { result: Some("ok".into()), handoff: None, brief_judgement: None },
        S::Error => {
            C::Fail(OperationError { message: "boom".into(), error_type: None, code: None })
        }
        S::Interrupted => C::Interrupt { reason: "shutdown".into(), can_resume: true },
        S::Idle | S::Cancelled => unreachable!("handled above"),
    };
    apply(op, &next, &system_ctx(2)).0
}

#[test]
fn transition_table_every_command_in_every_status() {
    use OperationCommand as C;
    use OperationStatus as S;
    let statuses = S::ALL;
    let done = || no("AlreadyFinished");
    let fin = [done(), done(), done(), done()];
    let step = C::RecordStep(StepReport {
        phase: Phase::Acting,
        tool_calls: vec![],
        usage: Usage::default(),
        budgets: Vec::new(),
    });
    let artifact = C::RecordArtifact(Artifact {
        artifact_id: "art1".into(),
        title: "Report".into(),
        kind: "document".into(),
        size_bytes: Some(10),
        content_ref: "doc:1".into(),
    });
    let score = C::RecordScore(ReviewScore {
        rubric_id: "r1".into(),
        score: 80,
        passed: true,
        reason: None,
    });
    let answer = C::AnswerCard {
        card_id: "c1".into(),
        answer: CardAnswer::Choice { values: vec!["yes".into()] },
    };
    let running_only = |event: &'static str| {
        let mut row = vec![
            no("InvalidTransition"),
            ok(&[event]),
            no("InvalidTransition"),
            no("InvalidTransition"),
        ];
        row.extend(fin.clone());
        row
    };
    let unfinished_ok = |events: &[&'static str]| {
        let mut row = vec![ok(events), ok(events), ok(events), ok(events)];
        row.extend(fin.clone());
        row
    };
    let table: Vec<(&str, C, Vec<Expect>)> = vec![
        ("create", C::Create(create("op1")), vec![no("AlreadyExists"); 8]),
        (
            "claim by the holder",
            C::Claim { worker_id: "w1".into(), lease_secs: 60 },
            [
                vec![ok(&["operation.claimed", "operation.started"]), ok(&["operation.claimed"])],
                vec![no("InvalidTransition"), no("InvalidTransition")],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "claim by another worker",
            C::Claim { worker_id: "w2".into(), lease_secs: 60 },
            [
                vec![ok(&["operation.claimed", "operation.started"]), no("LeaseHeld")],
                vec![no("InvalidTransition"), no("InvalidTransition")],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "renew",
            C::RenewLease { worker_id: "w1".into(), lease_secs: 60 },
            [
                vec![
                    no("NotLeaseHolder"),
                    ok(&["operation.lease_renewed"]),
                    no("NotLeaseHolder"),
                    no("NotLeaseHolder"),
                ],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "expire a valid lease",
            C::ExpireLease,
            [
                vec![
                    no("InvalidTransition"),
                    no("NotDue"),
                    no("InvalidTransition"),
                    no("InvalidTransition"),
                ],
                fin.to_vec(),
            ]
            .concat(),
        ),
        ("change phase", C::ChangePhase(Phase::Acting), running_only("operation.phase_changed")),
        ("record a step", step, running_only("operation.step_recorded")),
        ("update the plan", C::UpdatePlan(Plan::default()), running_only("operation.plan_updated")),
        ("update todos", C::UpdateTodos(vec![]), running_only("operation.todos_updated")),
        (
            "record an artifact",
            artifact,
            [
                vec![no("InvalidTransition")],
                vec![ok(&["operation.artifact_recorded"]); 3],
                fin.to_vec(),
            ]
            .concat(),
        ),
        ("record a score", score, vec![ok(&["operation.score_recorded"]); 8]),
        ("ask a human", C::AskHuman(choice_card()), running_only("operation.human_asked")),
        (
            "answer the card",
            answer,
            [
                vec![
                    no("NotFound"),
                    no("NotFound"),
                    ok(&["operation.human_answered"]),
                    no("NotFound"),
                ],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "time out the card",
            C::TimeoutCard { card_id: "c1".into() },
            [
                vec![
                    no("NotFound"),
                    no("NotFound"),
                    ok(&["operation.human_wait_timed_out"]),
                    no("NotFound"),
                ],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "await async work",
            C::AwaitAsync { keys: vec!["k9".into()] },
            running_only("operation.async_wait_started"),
        ),
        (
            "register a child",
            C::RegisterChild { child_operation_id: "child".into(), background: false },
            [
                vec![no("InvalidTransition")],
                vec![ok(&["operation.child_spawned"]); 3],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "receive an async result",
            C::ReceiveAsyncResult { key: "k1".into(), success: true, result: Some("r".into()) },
            [
                vec![no("InvalidTransition")],
                vec![ok(&["operation.async_result_received"]); 3],
                fin.to_vec(),
            ]
            .concat(),
        ),
        (
            "complete",
            C::Complete { result: None, handoff: None, brief_judgement: None },
            running_only("operation.completed"),
        ),
        (
            "fail",
            C::Fail(OperationError { message: "x".into(), error_type: None, code: None }),
            running_only("operation.failed"),
        ),
        (
            "interrupt",
            C::Interrupt { reason: "stop".into(), can_resume: false },
            unfinished_ok(&["operation.interrupted"]),
        ),
        ("cancel", C::Cancel { reason: None }, unfinished_ok(&["operation.cancelled"])),
    ];
    let mut failures = Vec::new();
    for (name, command, row) in &table {
        assert_eq!(row.len(), statuses.len(), "row {name}");
        for (status, expect) in statuses.iter().zip(row) {
            let state = op_in(*status);
            if let Some(mismatch) = check(&state, command, &system_ctx(100), expect) {
                failures.push(format!("{name} in {status}: {mismatch}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn ends_exactly_once() {
    use OperationCommand as C;
    let terminal = [
        C::Complete { result: None, handoff: None, brief_judgement: None },
        C::Fail(OperationError { message: "x".into(), error_type: None, code: None }),
        C::Interrupt { reason: "r".into(), can_resume: false },
        C::Cancel { reason: None },
    ];
    for first in &terminal {
        let op = apply(op_in(OperationStatus::Running), first, &system_ctx(5)).0;
        for second in &terminal {
            let e = refused(&op, second, &system_ctx(6));
            assert!(
                matches!(e, DomainError::AlreadyFinished { .. }),
                "{first:?} then {second:?}: {e}"
            );
        }
        assert!(matches!(
            refused(&op, &C::ExpireLease, &system_ctx(9999)),
            DomainError::AlreadyFinished { .. }
        ));
    }
}

#[test]
fn lease_expiry_interrupts_a_running_operation_and_only_after_the_deadline() {
    let op = op_in(OperationStatus::Running); // lease until t=301
    let early = refused(&op, &OperationCommand::ExpireLease, &system_ctx(300));
    assert!(matches!(early, DomainError::NotDue { .. }));
    let (op, events) = apply(op, &OperationCommand::ExpireLease, &system_ctx(301));
    assert_eq!(types(&events), ["operation.lease_expired", "operation.interrupted"]);
    assert_eq!(op.status, OperationStatus::Interrupted);
    assert_eq!(op.interruption.as_ref().map(|i| i.reason.as_str()), Some("lease_expired"));
    assert!(op.lease.is_none());
}

/// The token `op_in` claimed with (w1 at t=1).
fn w1_token() -> String {
    lease_token(&system_ctx(1))
}

#[test]
fn an_expired_lease_cannot_be_renewed_or_reclaimed() {
    let op = op_in(OperationStatus::Running);
    let renew = OperationCommand::RenewLease { worker_id: "w1".into(), lease_secs: 60 };
    let late = worker_ctx("w1", 400).with_lease_token(Some(w1_token()));
    assert!(matches!(refused(&op, &renew, &late), DomainError::LeaseExpired { .. }));
    let claim = OperationCommand::Claim { worker_id: "w2".into(), lease_secs: 60 };
    assert!(matches!(refused(&op, &claim, &system_ctx(400)), DomainError::LeaseExpired { .. }));
}

#[test]
fn only_the_lease_holder_reports_with_its_token() {
    use OperationCommand as C;
    let op = op_in(OperationStatus::Running);
    let token = w1_token();
    assert_eq!(op.lease.as_ref().map(|l| l.token_hash.clone()), Some(lease_token_hash(&token)));
    let reports = [
        C::ChangePhase(Phase::Acting),
        C::RecordStep(StepReport {
            phase: Phase::Acting,
            tool_calls: vec![],
            usage: Usage::default(),
            budgets: Vec::new(),
        }),
        C::UpdatePlan(Plan { explanation: None, steps: vec![] }),
        C::UpdateTodos(vec![]),
        C::RecordArtifact(Artifact {
            artifact_id: "a1".into(),
            title: "t".into(),
            kind: "file".into(),
            size_bytes: None,
            content_ref: "s3://x".into(),
        }),
        C::RecordScore(ReviewScore { rubric_id: "r".into(), score: 9, passed: true, reason: None }),
        C::AskHuman(choice_card()),
        C::AwaitAsync { keys: vec!["k".into()] },
        C::RegisterChild { child_operation_id: "c1".into(), background: false },
        C::Complete { result: None, handoff: None, brief_judgement: None },
        C::Fail(OperationError { message: "x".into(), error_type: None, code: None }),
        C::RenewLease { worker_id: "w1".into(), lease_secs: 60 },
    ];
    for cmd in &reports {
        for actor in [Actor::worker("w1"), Actor::user("u1")] {
            let ctx = |token: Option<&str>, secs| {
                Context::new(at(secs), command_id(secs), actor.clone(), "u1")
                    .with_lease_token(token.map(str::to_string))
            };
            let missing = refused(&op, cmd, &ctx(None, 10));
            assert!(
                matches!(missing, DomainError::LeaseToken { .. }),
                "{cmd:?} without a token: {missing:?}"
            );
            let wrong = refused(&op, cmd, &ctx(Some("lt_guess"), 10));
            assert!(
                matches!(wrong, DomainError::LeaseToken { .. }),
                "{cmd:?} with a wrong token: {wrong:?}"
            );
            let expired = refused(&op, cmd, &ctx(Some(&token), 400));
            assert!(
                matches!(expired, DomainError::LeaseExpired { .. }),
                "{cmd:?} expired: {expired:?}"
            );
            assert!(op.decide(cmd, &ctx(Some(&token), 10)).is_ok(), "{cmd:?} with the token");
        }
        assert!(
            op.decide(cmd, &system_ctx(10)).is_ok(),
            "the system acts without a token: {cmd:?}"
        );
    }
}

#[test]
fn a_new_claim_replaces_the_token() {
    let op = op_in(OperationStatus::Running);
    let old = w1_token();
    let reclaim = worker_ctx("w1", 20);
    let (op, _) =
        apply(op, &OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 60 }, &reclaim);
    let step = OperationCommand::ChangePhase(Phase::Acting);
    let with = |t: &str| worker_ctx("w1", 21).with_lease_token(Some(t.to_string()));
    assert!(matches!(refused(&op, &step, &with(&old)), DomainError::LeaseToken { .. }));
    assert!(op.decide(&step, &with(&lease_token(&reclaim))).is_ok());
}

#[test]
fn reviews_and_artifacts_need_no_token_once_the_lease_is_gone() {
    let done = op_in(OperationStatus::Done);
    let score = OperationCommand::RecordScore(ReviewScore {
        rubric_id: "r".into(),
        score: 80,
        passed: true,
        reason: None,
    });
    assert!(done.decide(&score, &worker_ctx("reviewer", 10)).is_ok());
    let waiting = op_in(OperationStatus::WaitingForHuman);
    let step = OperationCommand::ChangePhase(Phase::Acting);
    assert!(matches!(
        refused(&waiting, &step, &worker_ctx("w1", 10)),
        DomainError::InvalidTransition { .. }
    ));
}

#[test]
fn lease_length_is_bounded() {
    let claim = |secs| OperationCommand::Claim { worker_id: "w1".into(), lease_secs: secs };
    let op = op_in(OperationStatus::Idle);
    assert!(matches!(refused(&op, &claim(0), &system_ctx(5)), DomainError::Validation { .. }));
    assert!(matches!(refused(&op, &claim(3601), &system_ctx(5)), DomainError::Validation { .. }));
}

#[test]
fn async_barrier_resumes_after_the_last_awaited_key() {
    let op = op_in(OperationStatus::WaitingForAsyncTool);
    let recv = |k: &str| OperationCommand::ReceiveAsyncResult {
        key: k.into(),
        success: true,
        result: Some(format!("r-{k}")),
    };
    let (op, events) = apply(op, &recv("k1"), &system_ctx(10));
    assert_eq!(types(&events), ["operation.async_result_received"]);
    assert_eq!(op.status, OperationStatus::WaitingForAsyncTool);
    let (op, again) = apply(op, &recv("k1"), &system_ctx(11));
    assert!(again.is_empty(), "a repeated result changes nothing");
    let (op, events) = apply(op, &recv("k2"), &system_ctx(12));
    assert_eq!(types(&events), ["operation.async_result_received"]);
    let OperationEvent::AsyncResultReceived(e) = &events[0] else { panic!("{events:?}") };
    assert!(e.resumes, "the last awaited key completes the barrier");
    assert_eq!(op.status, OperationStatus::Running);
}

#[test]
fn child_result_is_capped_at_32000_characters() {
    let op = op_in(OperationStatus::Running);
    let long: String = "é".repeat(CHILD_RESULT_MAX_CHARS + 5);
    let (_, events) = apply(
        op,
        &OperationCommand::ReceiveAsyncResult {
            key: "child".into(),
            success: true,
            result: Some(long),
        },
        &system_ctx(10),
    );
    let OperationEvent::AsyncResultReceived(e) = &events[0] else { panic!("{events:?}") };
    assert_eq!(e.result.as_ref().map(|r| r.chars().count()), Some(CHILD_RESULT_MAX_CHARS));
    assert!(e.truncated);
    assert_eq!(e.original_chars, Some((CHILD_RESULT_MAX_CHARS + 5) as u64));
    let exact = "x".repeat(CHILD_RESULT_MAX_CHARS);
    assert_eq!(cap_child_result(&exact), (exact.clone(), false));
}

#[test]
fn cost_and_tokens_are_absent_until_measured() {
    let op = op_in(OperationStatus::Running);
    assert_eq!(op.usage, Usage::default());
    assert_eq!(op.tool_calls, None);
    let json = serde_json::to_value(op.usage).unwrap();
    assert_eq!(json, serde_json::json!({}), "unknown usage is absent, never 0");
    let step = |usage| {
        OperationCommand::RecordStep(StepReport {
            phase: Phase::Thinking,
            tool_calls: vec![],
            usage,
            budgets: Vec::new(),
        })
    };
    let (op, _) = apply(op, &step(Usage::default()), &system_ctx(5));
    assert_eq!(op.usage.cost_micros, None);
    assert_eq!(op.tool_calls, Some(0), "a reported step measures its tool calls");
    let (op, _) =
        apply(op, &step(Usage { input_tokens: Some(10), ..Usage::default() }), &system_ctx(6));
    let (op, _) = apply(
        op,
        &step(Usage { input_tokens: Some(5), cost_micros: Some(7), ..Usage::default() }),
        &system_ctx(7),
    );
    assert_eq!(op.usage.input_tokens, Some(15));
    assert_eq!(op.usage.cost_micros, Some(7));
    assert_eq!(op.usage.output_tokens, None);
}

#[test]
fn max_steps_and_cost_limit_stop_the_run() {
    let start = |max_steps, cost_limit| {
        let mut c = create("op1");
        c.max_steps = max_steps;
        c.cost_limit_micros = cost_limit;
        let op = apply(Operation::default(), &OperationCommand::Create(c), &system_ctx(0)).0;
        apply(
            op,
            &OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 300 },
            &system_ctx(1),
        )
        .0
    };
    let step = |cost| {
        OperationCommand::RecordStep(StepReport {
            phase: Phase::Acting,
            tool_calls: vec![ToolCall {
                id: "t".into(),
                name: "search".into(),
                status: None,
                arguments: None,
            }],
            usage: Usage { cost_micros: cost, ..Usage::default() },
            budgets: Vec::new(),
        })
    };
    let (op, _) = apply(start(Some(2), None), &step(None), &system_ctx(2));
    assert_eq!(op.status, OperationStatus::Running);
    let (op, events) = apply(op, &step(None), &system_ctx(3));
    assert_eq!(types(&events), ["operation.step_recorded", "operation.completed"]);
    assert_eq!(op.completion_reason, Some(CompletionReason::MaxSteps));
    assert!(matches!(
        refused(&op, &step(None), &system_ctx(4)),
        DomainError::AlreadyFinished { .. }
    ));

    let (op, _) = apply(start(None, Some(1_000)), &step(Some(600)), &system_ctx(2));
    assert_eq!(op.status, OperationStatus::Running);
    let (op, events) = apply(op, &step(Some(400)), &system_ctx(3));
    assert_eq!(types(&events), ["operation.step_recorded", "operation.completed"]);
    assert_eq!(op.completion_reason, Some(CompletionReason::CostLimit));
    assert_eq!(op.status, OperationStatus::Done);
}

#[test]
fn an_interrupt_budget_reached_by_a_step_ends_the_run_with_cost_limit() {
    use crate::budgets::{BudgetAction, BudgetSpec, BudgetStanding, Spend};
    let standing = |action, spent| BudgetStanding {
        spec: BudgetSpec { action, ..BudgetSpec::user("b1", "u1", Some(1_000), None) },
        spent: Spend { cost_micros: spent, tokens: 0 },
    };
    let step = |budgets| {
        OperationCommand::RecordStep(StepReport {
            phase: Phase::Acting,
            tool_calls: vec![],
            usage: Usage { cost_micros: Some(100), ..Usage::default() },
            budgets,
        })
    };
    let running = op_in(OperationStatus::Running);
    let (op, _) =
        apply(running.clone(), &step(vec![standing(BudgetAction::Interrupt, 800)]), &system_ctx(2));
    assert_eq!(op.status, OperationStatus::Running);
    // a refuse budget lets a running run go on past its limit
    let (op, _) = apply(op, &step(vec![standing(BudgetAction::Refuse, 950)]), &system_ctx(3));
    assert_eq!(op.status, OperationStatus::Running);
    let (op, events) =
        apply(op, &step(vec![standing(BudgetAction::Interrupt, 900)]), &system_ctx(4));
    assert_eq!(types(&events), ["operation.step_recorded", "operation.completed"]);
    assert_eq!(op.completion_reason, Some(CompletionReason::CostLimit));

    // After a step: the limit reached by other runs' steps beside it ends the run too.
    let stop =
        |action, spent| OperationCommand::StopAtBudget { budgets: vec![standing(action, spent)] };
    assert_eq!(running.decide(&stop(BudgetAction::Interrupt, 999), &system_ctx(5)), Ok(Vec::new()));
    assert_eq!(running.decide(&stop(BudgetAction::Refuse, 1_000), &system_ctx(5)), Ok(Vec::new()));
    let (op, events) = apply(running, &stop(BudgetAction::Interrupt, 1_000), &system_ctx(5));
    assert_eq!(types(&events), ["operation.completed"]);
    assert_eq!(op.completion_reason, Some(CompletionReason::CostLimit));
}

#[test]
fn plans_and_todos_are_replaced_whole() {
    use super::model::{ItemStatus, PlanStep};
    let op = op_in(OperationStatus::Running);
    let plan = |texts: &[&str]| Plan {
        explanation: None,
        steps: texts
            .iter()
            .map(|t| PlanStep { text: (*t).into(), status: ItemStatus::Pending })
            .collect(),
    };
    let (op, _) = apply(op, &OperationCommand::UpdatePlan(plan(&["a", "b", "c"])), &system_ctx(5));
    let (op, _) = apply(op, &OperationCommand::UpdatePlan(plan(&["z"])), &system_ctx(6));
    assert_eq!(op.plan, Some(plan(&["z"])));
    let todo = |id: &str| Todo { id: id.into(), text: id.into(), status: ItemStatus::InProgress };
    let (op, _) =
        apply(op, &OperationCommand::UpdateTodos(vec![todo("1"), todo("2")]), &system_ctx(7));
    let (op, _) = apply(op, &OperationCommand::UpdateTodos(vec![todo("3")]), &system_ctx(8));
    assert_eq!(op.todos, Some(vec![todo("3")]));
    let dup = OperationCommand::UpdateTodos(vec![todo("1"), todo("1")]);
    assert!(matches!(refused(&op, &dup, &system_ctx(9)), DomainError::Validation { .. }));
}

#[test]
fn artifacts_scores_and_agent_config_version_are_recorded() {
    let op = op_in(OperationStatus::Running);
    assert_eq!(op.spec.as_ref().map(|s| s.agent.config_version), Some(3));
    let art = Artifact {
        artifact_id: "a".into(),
        title: "T".into(),
        kind: "document".into(),
        size_bytes: None,
        content_ref: "d".into(),
    };
    let (op, _) = apply(op, &OperationCommand::RecordArtifact(art.clone()), &system_ctx(5));
    assert!(matches!(
        refused(&op, &OperationCommand::RecordArtifact(art), &system_ctx(6)),
        DomainError::AlreadyExists { .. }
    ));
    let (op, _) = apply(
        op,
        &OperationCommand::Complete { result: None, handoff: None, brief_judgement: None },
        &system_ctx(7),
    );
    let score = ReviewScore { rubric_id: "r".into(), score: 101, passed: true, reason: None };
    assert!(matches!(
        refused(&op, &OperationCommand::RecordScore(score.clone()), &system_ctx(8)),
        DomainError::Validation { .. }
    ));
    let (op, _) = apply(
        op,
        &OperationCommand::RecordScore(ReviewScore { score: 90, ..score }),
        &system_ctx(8),
    );
    assert_eq!(op.scores.len(), 1);
}

#[test]
fn creation_is_validated() {
    let bad = |f: fn(&mut CreateOperation)| {
        let mut c = create("op1");
        f(&mut c);
        refused(&Operation::default(), &OperationCommand::Create(c), &system_ctx(0))
    };
    assert!(matches!(bad(|c| c.operation_id = " ".into()), DomainError::Validation { .. }));
    assert!(matches!(bad(|c| c.max_steps = Some(0)), DomainError::Validation { .. }));
    assert!(matches!(
        bad(|c| c.parent_operation_id = Some("op1".into())),
        DomainError::Validation { .. }
    ));
    assert!(matches!(bad(|c| c.background = true), DomainError::Validation { .. }));
    let missing =
        refused(&Operation::default(), &OperationCommand::Cancel { reason: None }, &system_ctx(0));
    assert!(matches!(missing, DomainError::NotFound { .. }));
}

#[test]
fn step_recorded_v1_is_upcast_to_v2() {
    use crate::aggregate::DomainEvent;
    let v1 = serde_json::json!({
        "stepIndex": 4,
        "phase": "acting",
        "toolCalls": ["search", "fetch"],
        "tokens": 120,
        "at": "2026-11-29T10:00:00Z"
    });
    let OperationEvent::StepRecorded(e) =
        OperationEvent::decode("operation.step_recorded", 1, &v1).unwrap()
    else {
        panic!("wrong variant")
    };
    assert_eq!(e.step_index, 4);
    assert_eq!(
        e.tool_calls.iter().map(|t| (t.id.as_str(), t.name.as_str())).collect::<Vec<_>>(),
        [("4-0", "search"), ("4-1", "fetch")]
    );
    assert_eq!(e.usage.total_tokens, Some(120));
    assert_eq!(e.usage.cost_micros, None, "absent in v1 stays absent");
    // current version reads as is; future and unknown versions are refused
    let v2 = OperationEvent::StepRecorded(e.clone()).to_payload();
    assert_eq!(
        OperationEvent::decode("operation.step_recorded", 2, &v2).unwrap(),
        OperationEvent::StepRecorded(e)
    );
    assert!(matches!(
        OperationEvent::decode("operation.step_recorded", 3, &v2),
        Err(crate::error::DecodeError::UnsupportedVersion { .. })
    ));
    assert!(matches!(
        OperationEvent::decode("operation.created", 0, &v2),
        Err(crate::error::DecodeError::UnsupportedVersion { .. })
    ));
    assert!(matches!(
        OperationEvent::decode("operation.bogus", 1, &v2),
        Err(crate::error::DecodeError::UnknownEventType { .. })
    ));
    let bad_v1 = serde_json::json!({"stepIndex": 1, "phase": "acting", "toolCalls": [1], "at": "2026-11-29T10:00:00Z"});
    assert!(matches!(
        OperationEvent::decode("operation.step_recorded", 1, &bad_v1),
        Err(crate::error::DecodeError::InvalidPayload { .. })
    ));
    // from the stored text: the same, upcast or current; text that is not JSON is refused
    let from_text = |v: i32, payload: &serde_json::Value| {
        OperationEvent::decode_str("operation.step_recorded", v, &payload.to_string())
    };
    assert_eq!(
        from_text(1, &v1).unwrap(),
        OperationEvent::decode("operation.step_recorded", 1, &v1).unwrap()
    );
    assert_eq!(
        from_text(2, &v2).unwrap(),
        OperationEvent::decode("operation.step_recorded", 2, &v2).unwrap()
    );
    assert!(matches!(from_text(3, &v2), Err(crate::error::DecodeError::UnsupportedVersion { .. })));
    assert!(matches!(from_text(1, &bad_v1), Err(crate::error::DecodeError::InvalidPayload { .. })));
    for version in [1, 2] {
        assert!(matches!(
            OperationEvent::decode_str("operation.step_recorded", version, "{not json"),
            Err(crate::error::DecodeError::InvalidPayload { .. })
        ));
    }
}

#[test]
fn an_interrupted_run_that_may_resume_goes_back_to_the_queue() {
    use OperationCommand as C;
    let op = op_in(OperationStatus::Running);
    let (op, _) = apply(op, &C::ExpireLease, &system_ctx(400));
    assert_eq!(op.status, OperationStatus::Interrupted);
    let (op, events) = apply(op, &C::Resume, &system_ctx(401));
    assert_eq!(types(&events), ["operation.resumed"]);
    assert_eq!(
        (op.status, op.lease.is_none(), op.completed_at),
        (OperationStatus::Running, true, None)
    );
    assert!(matches!(
        refused(&op, &C::Resume, &system_ctx(402)),
        DomainError::InvalidTransition { .. }
    ));
    // Claimed again, it runs on from where it was.
    let (op, events) =
        apply(op, &C::Claim { worker_id: "w2".into(), lease_secs: 60 }, &system_ctx(403));
    assert_eq!(types(&events), ["operation.claimed"]);
    assert_eq!(op.step_count, 0);
    let stopped = apply(
        op_in(OperationStatus::Running),
        &C::Interrupt { reason: "user stop".into(), can_resume: false },
        &system_ctx(5),
    )
    .0;
    assert!(matches!(
        refused(&stopped, &C::Resume, &system_ctx(6)),
        DomainError::InvalidTransition { .. }
    ));
    for status in [OperationStatus::Done, OperationStatus::Cancelled, OperationStatus::Idle] {
        assert!(
            refused(&op_in(status), &C::Resume, &system_ctx(9)).code()
                == crate::error::ErrorCode::Conflict
        );
    }
}

#[test]
fn a_run_with_tools_disabled_refuses_tool_calls() {
    let mut c = create("op1");
    c.disable_tools = true;
    let op = apply(Operation::default(), &OperationCommand::Create(c), &system_ctx(0)).0;
    let op = apply(
        op,
        &OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 300 },
        &system_ctx(1),
    )
    .0;
    let step = |calls: Vec<ToolCall>| {
        OperationCommand::RecordStep(StepReport {
            phase: Phase::Acting,
            tool_calls: calls,
            usage: Usage::default(),
            budgets: Vec::new(),
        })
    };
    let call = ToolCall { id: "t".into(), name: "search".into(), status: None, arguments: None };
    assert!(matches!(
        op.decide(&step(vec![call]), &system_ctx(2)),
        Err(DomainError::Validation { field, .. }) if field == "toolCalls"
    ));
    assert!(op.decide(&step(Vec::new()), &system_ctx(2)).is_ok(), "a step without tools is fine");
}
