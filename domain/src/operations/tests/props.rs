//! Random command sequences on an operation.

use proptest::prelude::*;

use super::super::*;
use super::{agent, create};
use crate::envelope::Actor;
use crate::operations::hitl::{CardKind, ChoiceOption};
use crate::testing::{exercise, timeline};
use crate::values::ReviewScore;
use crate::values::Usage;

fn worker() -> impl Strategy<Value = String> {
    prop_oneof![Just("w1".to_string()), Just("w2".to_string())]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![Just("k1".to_string()), Just("k2".to_string()), Just("child".to_string())]
}

fn card() -> impl Strategy<Value = HitlCard> {
    let on_timeout = prop_oneof![
        Just(OnTimeout::Continue),
        Just(OnTimeout::Fail),
        Just(OnTimeout::Cancel),
        Just(OnTimeout::UseDefault { answer: CardAnswer::Confirm { confirmed: true } }),
    ];
    (any::<bool>(), prop::option::of((1u64..120, on_timeout))).prop_map(|(confirm, timeout)| {
        let kind = if confirm {
            CardKind::Confirm
        } else {
            CardKind::Choice {
                options: vec![ChoiceOption::new("a", "A"), ChoiceOption::new("b", "B")],
                multiple: false,
            }
        };
        let mut card = HitlCard::new("c1", "Q?", kind);
        if let Some((secs, on)) = timeout {
            card = card.with_timeout(secs, on);
        }
        card
    })
}

fn answer() -> impl Strategy<Value = CardAnswer> {
    prop_oneof![
        any::<bool>().prop_map(|confirmed| CardAnswer::Confirm { confirmed }),
        prop::sample::select(vec!["a", "b", "z"])
            .prop_map(|v| CardAnswer::Choice { values: vec![v.to_string()] }),
        Just(CardAnswer::Input { text: "hi".into() }),
    ]
}

fn usage() -> impl Strategy<Value = Usage> {
    (prop::option::of(0u64..500), prop::option::of(0u64..500), prop::option::of(0u64..2_000))
        .prop_map(|(i, o, c)| Usage {
            input_tokens: i,
            output_tokens: o,
            total_tokens: None,
            cost_micros: c,
        })
}

fn command() -> impl Strategy<Value = OperationCommand> {
    use OperationCommand as C;
    prop_oneof![
        (prop::option::of(1u32..6), prop::option::of(500u64..3_000)).prop_map(
            |(max_steps, cost)| {
                let mut c = create("op1");
                c.max_steps = max_steps;
                c.cost_limit_micros = cost;
                c.agent = agent();
                C::Create(c)
            }
        ),
        (worker(), 1u32..400)
            .prop_map(|(worker_id, lease_secs)| C::Claim { worker_id, lease_secs }),
        (worker(), 1u32..400)
            .prop_map(|(worker_id, lease_secs)| C::RenewLease { worker_id, lease_secs }),
        Just(C::ExpireLease),
        prop::sample::select(vec![
            Phase::Thinking,
            Phase::Acting,
            Phase::Responding,
            Phase::Finalizing
        ])
        .prop_map(C::ChangePhase),
        (usage(), 0usize..3).prop_map(|(usage, calls)| C::RecordStep(StepReport {
            phase: Phase::Acting,
            tool_calls: (0..calls)
                .map(|i| ToolCall {
                    id: format!("t{i}"),
                    name: "tool".into(),
                    status: None,
                    arguments: None
                })
                .collect(),
            usage,
            budgets: Vec::new(),
        })),
        Just(C::UpdatePlan(Plan::default())),
        Just(C::UpdateTodos(vec![])),
        card().prop_map(C::AskHuman),
        answer().prop_map(|answer| C::AnswerCard { card_id: "c1".into(), answer }),
        Just(C::TimeoutCard { card_id: "c1".into() }),
        prop::collection::vec(key(), 1..3).prop_map(|keys| C::AwaitAsync { keys }),
        (key(), any::<bool>(), prop::option::of("[a-z]{0,8}"))
            .prop_map(|(key, success, result)| C::ReceiveAsyncResult { key, success, result }),
        (key(), any::<bool>()).prop_map(|(child_operation_id, background)| C::RegisterChild {
            child_operation_id,
            background
        }),
        Just(C::Complete { result: Some("done".into()), handoff: None, brief_judgement: None }),
        Just(C::Fail(OperationError {
            message: "boom".into(),
            error_type: None,
            code: Some("x".into())
        })),
        Just(C::Interrupt { reason: "stop".into(), can_resume: true }),
        Just(C::Cancel { reason: None }),
        (0u8..=110).prop_map(|score| C::RecordScore(ReviewScore {
            rubric_id: "r".into(),
            score,
            passed: true,
            reason: None
        })),
    ]
}

fn actor() -> impl Strategy<Value = Actor> {
    prop_oneof![
        Just(Actor::system("reaper")),
        Just(Actor::worker("w1")),
        Just(Actor::worker("w2")),
        Just(Actor::user("u1"))
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_command_sequences_keep_the_operation_consistent(
        steps in prop::collection::vec((command(), 0i64..200, actor()), 1..40)
    ) {
        let times: Vec<(i64, Actor)> = steps.iter().map(|(_, dt, a)| (*dt, a.clone())).collect();
        let contexts = timeline(&times);
        let mut sequence = vec![(OperationCommand::Create(create("op1")), crate::testing::system_ctx(0))];
        sequence.extend(steps.into_iter().map(|(c, _, _)| c).zip(contexts));
        let (op, _) = exercise::<Operation>(&sequence);
        // ends exactly once: a finished operation has exactly one completion reason and time
        if op.is_finished() {
            prop_assert!(op.completion_reason.is_some());
        }
    }
}
