//! Operation: human-in-the-loop cards — the four kinds, answer validation, timeouts, and what a
//! pause does to the lease.

use super::super::*;
use super::{choice_card, op_in};
use crate::operations::hitl::{CardKind, ChoiceOption, FieldKind, FormField};
use crate::testing::*;

fn ask(op: Operation, card: HitlCard) -> Operation {
    apply(op, &OperationCommand::AskHuman(card), &system_ctx(10)).0
}

fn answer(op: &Operation, id: &str, a: CardAnswer) -> Result<Vec<OperationEvent>, DomainError> {
    op.decide(&OperationCommand::AnswerCard { card_id: id.into(), answer: a }, &system_ctx(20))
}

#[test]
fn hitl_choice_card_accepts_only_its_choices() {
    let op = ask(op_in(OperationStatus::Running), choice_card());
    assert_eq!(op.status, OperationStatus::WaitingForHuman);
    let pick =
        |v: &[&str]| CardAnswer::Choice { values: v.iter().map(|s| (*s).to_string()).collect() };
    assert!(matches!(answer(&op, "c1", pick(&["maybe"])), Err(DomainError::InvalidAnswer { .. })));
    assert!(matches!(
        answer(&op, "c1", pick(&["yes", "no"])),
        Err(DomainError::InvalidAnswer { .. })
    ));
    assert!(matches!(answer(&op, "c1", pick(&[])), Err(DomainError::InvalidAnswer { .. })));
    assert!(matches!(
        answer(&op, "c1", CardAnswer::Confirm { confirmed: true }),
        Err(DomainError::InvalidAnswer { .. })
    ));
    assert!(matches!(answer(&op, "c2", pick(&["yes"])), Err(DomainError::NotFound { .. })));
    let events = answer(&op, "c1", pick(&["yes"])).unwrap();
    let op = events.iter().fold(op, |s, e| s.evolve(e));
    assert_eq!(op.status, OperationStatus::Running);
    assert_eq!(op.human_waiting_ms, Some(10_000));
    let multi = HitlCard::new(
        "c3",
        "Pick",
        CardKind::Choice {
            options: vec![ChoiceOption::new("a", "A"), ChoiceOption::new("b", "B")],
            multiple: true,
        },
    );
    let op = ask(op, multi);
    assert!(answer(&op, "c3", pick(&["a", "b"])).is_ok());
    assert!(matches!(answer(&op, "c3", pick(&["a", "a"])), Err(DomainError::InvalidAnswer { .. })));
}

#[test]
fn hitl_input_confirm_and_form_cards_validate_answers() {
    let input =
        HitlCard::new("i1", "Name?", CardKind::Input { required: true, max_length: Some(5) });
    let op = ask(op_in(OperationStatus::Running), input);
    let text = |t: &str| CardAnswer::Input { text: t.into() };
    assert!(matches!(answer(&op, "i1", text("  ")), Err(DomainError::InvalidAnswer { .. })));
    assert!(matches!(answer(&op, "i1", text("toolong")), Err(DomainError::InvalidAnswer { .. })));
    assert!(answer(&op, "i1", text("Ann")).is_ok());

    let op = ask(op_in(OperationStatus::Running), HitlCard::new("k1", "Sure?", CardKind::Confirm));
    assert!(answer(&op, "k1", CardAnswer::Confirm { confirmed: false }).is_ok());
    assert!(matches!(answer(&op, "k1", text("yes")), Err(DomainError::InvalidAnswer { .. })));

    let form = HitlCard::new(
        "f1",
        "Details",
        CardKind::Form {
            fields: vec![
                FormField {
                    name: "age".into(),
                    label: "Age".into(),
                    field: FieldKind::Number { min: Some(0), max: Some(150) },
                    required: true,
                },
                FormField {
                    name: "ok".into(),
                    label: "OK".into(),
                    field: FieldKind::Boolean,
                    required: false,
                },
                FormField {
                    name: "tier".into(),
                    label: "Tier".into(),
                    field: FieldKind::Choice { options: vec![ChoiceOption::new("gold", "Gold")] },
                    required: false,
                },
            ],
        },
    );
    let op = ask(op_in(OperationStatus::Running), form);
    let values =
        |v: serde_json::Value| CardAnswer::Form { values: serde_json::from_value(v).unwrap() };
    assert!(
        answer(&op, "f1", values(serde_json::json!({"age": 30, "ok": true, "tier": "gold"})))
            .is_ok()
    );
    for bad in [
        serde_json::json!({}),
        serde_json::json!({"age": 200}),
        serde_json::json!({"age": "thirty"}),
        serde_json::json!({"age": 3, "tier": "silver"}),
        serde_json::json!({"age": 3, "extra": 1}),
        serde_json::json!({"age": 3, "ok": "yes"}),
    ] {
        assert!(
            matches!(
                answer(&op, "f1", values(bad.clone())),
                Err(DomainError::InvalidAnswer { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn malformed_cards_are_refused_when_asked() {
    let op = op_in(OperationStatus::Running);
    let ask_cmd = |card| OperationCommand::AskHuman(card);
    let empty_choice =
        HitlCard::new("c", "Q", CardKind::Choice { options: vec![], multiple: false });
    let bad_default = choice_card().with_timeout(
        5,
        OnTimeout::UseDefault { answer: CardAnswer::Choice { values: vec!["nope".into()] } },
    );
    let no_title = HitlCard::new("c", " ", CardKind::Confirm);
    for card in [empty_choice, bad_default, no_title] {
        assert!(matches!(
            refused(&op, &ask_cmd(card), &system_ctx(5)),
            DomainError::Validation { .. }
        ));
    }
}

#[test]
fn hitl_timeouts_end_the_wait_as_the_card_says() {
    let with =
        |on: OnTimeout| ask(op_in(OperationStatus::Running), choice_card().with_timeout(30, on));
    let timeout = OperationCommand::TimeoutCard { card_id: "c1".into() };
    // before the deadline (asked at 10, +30 s)
    let op = with(OnTimeout::Continue);
    assert!(matches!(refused(&op, &timeout, &system_ctx(39)), DomainError::NotDue { .. }));
    let (op, _) = apply(op, &timeout, &system_ctx(40));
    assert_eq!(op.status, OperationStatus::Running);

    let default =
        OnTimeout::UseDefault { answer: CardAnswer::Choice { values: vec!["no".into()] } };
    let (op, events) = apply(with(default), &timeout, &system_ctx(40));
    assert_eq!(types(&events), ["operation.human_wait_timed_out"]);
    assert_eq!(op.status, OperationStatus::Running);

    let (op, events) = apply(with(OnTimeout::Fail), &timeout, &system_ctx(40));
    assert_eq!(types(&events), ["operation.human_wait_timed_out", "operation.failed"]);
    assert_eq!(op.status, OperationStatus::Error);

    let (op, events) = apply(with(OnTimeout::Cancel), &timeout, &system_ctx(40));
    assert_eq!(types(&events), ["operation.human_wait_timed_out", "operation.cancelled"]);
    assert_eq!(op.status, OperationStatus::Cancelled);

    let no_timeout =
        ask(op_in(OperationStatus::Running), HitlCard::new("c1", "Q", CardKind::Confirm));
    assert!(matches!(
        refused(&no_timeout, &timeout, &system_ctx(9999)),
        DomainError::InvalidTransition { .. }
    ));
}

#[test]
fn a_pause_releases_the_lease_and_resuming_needs_a_new_claim() {
    let op = ask(op_in(OperationStatus::Running), choice_card());
    assert!(op.lease.is_none());
    let events = answer(&op, "c1", CardAnswer::Choice { values: vec!["yes".into()] }).unwrap();
    let op = events.iter().fold(op, |s, e| s.evolve(e));
    let step = OperationCommand::ChangePhase(Phase::Acting);
    let old = Some(lease_token(&system_ctx(1)));
    assert!(matches!(
        refused(&op, &step, &worker_ctx("w1", 30).with_lease_token(old)),
        DomainError::LeaseToken { .. }
    ));
    let claim_ctx = worker_ctx("w2", 30);
    let (op, _) =
        apply(op, &OperationCommand::Claim { worker_id: "w2".into(), lease_secs: 60 }, &claim_ctx);
    let token = Some(lease_token(&claim_ctx));
    assert!(op.decide(&step, &worker_ctx("w2", 31).with_lease_token(token)).is_ok());
}
