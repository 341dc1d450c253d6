//! Group: transition table, member rules, orchestration reading maxRounds, properties.

use proptest::prelude::*;

use super::*;
use crate::envelope::Actor;
use crate::supervisor::{ActionPayload, DecidedPayload};
use crate::testing::*;

fn member(id: &str, role: MemberRole) -> GroupMember {
    GroupMember { agent_id: id.into(), role, enabled: true, order: 0 }
}

fn create(max_rounds: u32) -> GroupCommand {
    GroupCommand::Create {
        group_id: "g1".into(),
        title: "Team".into(),
        config: GroupConfig { max_rounds, ..GroupConfig::default() },
        members: vec![member("sup", MemberRole::Supervisor), member("a1", MemberRole::Participant)],
    }
}

fn spoke() -> ExecutorResult {
    ExecutorResult::AgentSpoke {
        payload: ActionPayload { agent_id: Some("a1".into()), ..ActionPayload::default() },
    }
}

#[test]
fn transition_table() {
    use GroupCommand as C;
    let none = Group::default();
    let live = run_all::<Group>(&[create(10)]);
    let running =
        apply(live.clone(), &C::StartOrchestration { operation_id: "op1".into() }, &system_ctx(5))
            .0;
    let deleted = apply(live.clone(), &C::Delete, &system_ctx(5)).0;
    let states =
        [("none", &none), ("live", &live), ("orchestrating", &running), ("deleted", &deleted)];
    let add = C::AddMember {
        agent_id: "a2".into(),
        role: MemberRole::Participant,
        enabled: true,
        order: None,
    };
    let update =
        C::UpdateMember { agent_id: "a1".into(), role: None, enabled: Some(false), order: None };
    let remove = C::RemoveMember { agent_id: "a1".into() };
    let config = C::UpdateConfig(GroupConfig { max_rounds: 4, ..GroupConfig::default() });
    let start = C::StartOrchestration { operation_id: "op1".into() };
    let advance = C::AdvanceOrchestration { operation_id: "op1".into(), result: spoke() };
    let table: Vec<(&str, C, [Expect; 4])> = vec![
        (
            "create",
            create(10),
            [ok(&["group.created"]), no("AlreadyExists"), no("AlreadyExists"), no("AlreadyExists")],
        ),
        (
            "config",
            config,
            [
                no("NotFound"),
                ok(&["group.config_updated"]),
                ok(&["group.config_updated"]),
                no("NotFound"),
            ],
        ),
        (
            "add",
            add,
            [
                no("NotFound"),
                ok(&["group.member_added"]),
                ok(&["group.member_added"]),
                no("NotFound"),
            ],
        ),
        (
            "update",
            update,
            [
                no("NotFound"),
                ok(&["group.member_updated"]),
                ok(&["group.member_updated"]),
                no("NotFound"),
            ],
        ),
        (
            "remove",
            remove,
            [
                no("NotFound"),
                ok(&["group.member_removed"]),
                ok(&["group.member_removed"]),
                no("NotFound"),
            ],
        ),
        (
            "delete",
            C::Delete,
            [no("NotFound"), ok(&["group.deleted"]), ok(&["group.deleted"]), no("NotFound")],
        ),
        (
            "start",
            start,
            [
                no("NotFound"),
                ok(&["group.orchestration_advanced"]),
                no("AlreadyExists"),
                no("NotFound"),
            ],
        ),
        (
            "advance",
            advance,
            [no("NotFound"), no("NotFound"), ok(&["group.orchestration_advanced"]), no("NotFound")],
        ),
    ];
    let mut failures = Vec::new();
    for (name, command, row) in &table {
        for ((state_name, state), expect) in states.iter().zip(row) {
            if let Some(m) = check(*state, command, &system_ctx(10), expect) {
                failures.push(format!("{name} on {state_name}: {m}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_group_has_at_most_one_supervisor() {
    let g = run_all::<Group>(&[create(10)]);
    let second = GroupCommand::AddMember {
        agent_id: "s2".into(),
        role: MemberRole::Supervisor,
        enabled: true,
        order: None,
    };
    assert!(matches!(refused(&g, &second, &system_ctx(5)), DomainError::Validation { .. }));
    let promote = GroupCommand::UpdateMember {
        agent_id: "a1".into(),
        role: Some(MemberRole::Supervisor),
        enabled: None,
        order: None,
    };
    assert!(matches!(refused(&g, &promote, &system_ctx(5)), DomainError::Validation { .. }));
    let dup = GroupCommand::AddMember {
        agent_id: "a1".into(),
        role: MemberRole::Participant,
        enabled: true,
        order: None,
    };
    assert!(matches!(refused(&g, &dup, &system_ctx(5)), DomainError::AlreadyExists { .. }));
}

#[test]
fn new_members_go_after_the_last() {
    let g = run_all::<Group>(&[create(10)]);
    let add = GroupCommand::AddMember {
        agent_id: "a2".into(),
        role: MemberRole::Participant,
        enabled: true,
        order: None,
    };
    let (g, _) = apply(g, &add, &system_ctx(5));
    assert_eq!(g.members["a2"].order, 1);
}

#[test]
fn max_rounds_defaults_to_ten_and_zero_is_refused() {
    let config: GroupConfig =
        serde_json::from_value(serde_json::json!({"systemPrompt": "be nice"})).unwrap();
    assert_eq!(config.max_rounds, 10);
    assert!(matches!(
        refused(&Group::default(), &create(0), &system_ctx(1)),
        DomainError::Validation { .. }
    ));
}

#[test]
fn orchestration_reads_the_groups_max_rounds_and_ends_on_finish() {
    let g = run_all::<Group>(&[create(2)]);
    let (g, events) =
        apply(g, &GroupCommand::StartOrchestration { operation_id: "op1".into() }, &system_ctx(5));
    let GroupEvent::OrchestrationAdvanced(first) = &events[0] else { panic!() };
    assert_eq!(first.instruction.type_name(), "call_supervisor");
    assert_eq!(g.orchestrations["op1"].max_rounds, 2);
    let decide_speak = ExecutorResult::SupervisorDecided {
        payload: DecidedPayload {
            decision: "speak".into(),
            params: serde_json::Map::new(),
            skip_call_supervisor: None,
        },
    };
    let advance = |r: ExecutorResult| GroupCommand::AdvanceOrchestration {
        operation_id: "op1".into(),
        result: r,
    };
    let (g, _) = apply(g, &advance(decide_speak.clone()), &system_ctx(6));
    let (g, e) = apply(g, &advance(spoke()), &system_ctx(7));
    let GroupEvent::OrchestrationAdvanced(step) = &e[0] else { panic!() };
    assert_eq!(step.instruction.type_name(), "call_supervisor");
    let (g, _) = apply(g, &advance(decide_speak), &system_ctx(8));
    let (g, e) = apply(g, &advance(spoke()), &system_ctx(9));
    let GroupEvent::OrchestrationAdvanced(last) = &e[0] else { panic!() };
    assert_eq!(
        last.instruction,
        SupervisorInstruction::Finish { reason: "max_rounds_exceeded".into() }
    );
    assert!(g.orchestrations.is_empty(), "a finished run leaves the state");
    assert!(matches!(
        refused(&g, &advance(spoke()), &system_ctx(10)),
        DomainError::NotFound { .. }
    ));
}

#[test]
fn orchestration_needs_an_enabled_supervisor() {
    let g = run_all::<Group>(&[
        create(10),
        GroupCommand::UpdateMember {
            agent_id: "sup".into(),
            role: None,
            enabled: Some(false),
            order: None,
        },
    ]);
    let start = GroupCommand::StartOrchestration { operation_id: "op1".into() };
    assert!(matches!(refused(&g, &start, &system_ctx(5)), DomainError::Validation { .. }));
}

fn command() -> impl Strategy<Value = GroupCommand> {
    use GroupCommand as C;
    let agent = prop::sample::select(vec!["sup", "a1", "a2", "a3"]).prop_map(str::to_string);
    let role = prop_oneof![Just(MemberRole::Participant), Just(MemberRole::Supervisor)];
    let result = prop_oneof![
        Just(spoke()),
        Just(ExecutorResult::Unknown),
        prop::sample::select(vec!["speak", "finish", "broadcast", "zzz"]).prop_map(|d| {
            ExecutorResult::SupervisorDecided {
                payload: DecidedPayload {
                    decision: d.into(),
                    params: serde_json::Map::new(),
                    skip_call_supervisor: Some(d == "broadcast"),
                },
            }
        }),
    ];
    prop_oneof![
        (1u32..5).prop_map(create),
        (agent.clone(), role.clone(), any::<bool>()).prop_map(|(agent_id, role, enabled)| {
            C::AddMember { agent_id, role, enabled, order: None }
        }),
        (agent.clone(), prop::option::of(role), prop::option::of(any::<bool>())).prop_map(
            |(agent_id, role, enabled)| {
                C::UpdateMember { agent_id, role, enabled, order: None }
            }
        ),
        agent.prop_map(|agent_id| C::RemoveMember { agent_id }),
        (0u32..4).prop_map(|max_rounds| C::UpdateConfig(GroupConfig {
            max_rounds,
            ..GroupConfig::default()
        })),
        Just(C::StartOrchestration { operation_id: "op1".into() }),
        result.prop_map(|result| C::AdvanceOrchestration { operation_id: "op1".into(), result }),
        Just(C::Delete),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_the_group_consistent(
        commands in prop::collection::vec(command(), 1..40)
    ) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (1, Actor::user("u1"))).collect();
        let mut steps = vec![(create(3), timeline(&[(0, Actor::user("u1"))])[0].clone())];
        steps.extend(commands.into_iter().zip(timeline(&times)));
        exercise::<Group>(&steps);
    }
}
