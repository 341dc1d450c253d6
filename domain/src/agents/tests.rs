//! Agent: transition table, config versions, built-ins, properties.

use proptest::prelude::*;

use super::*;
use crate::envelope::Actor;
use crate::testing::*;

fn register(id: &str) -> AgentCommand {
    AgentCommand::Register(RegisterAgent {
        agent_id: id.into(),
        config: AgentConfig {
            slug: id.into(),
            title: "Writer".into(),
            model: Some("m1".into()),
            ..AgentConfig::default()
        },
        builtin: false,
    })
}

fn patch_model(model: &str) -> AgentCommand {
    AgentCommand::UpdateConfig(AgentConfigPatch {
        model: Some(model.into()),
        ..AgentConfigPatch::default()
    })
}

#[test]
fn transition_table() {
    let none = Agent::default();
    let live = run_all::<Agent>(&[register("a1")]);
    let archived = run_all::<Agent>(&[register("a1"), AgentCommand::Archive]);
    let builtin = apply(
        Agent::default(),
        &AgentCommand::Register(builtin_agents().remove(0)),
        &system_ctx(1),
    )
    .0;
    let states = [("none", &none), ("live", &live), ("archived", &archived), ("builtin", &builtin)];
    let table: Vec<(&str, AgentCommand, [Expect; 4])> = vec![
        (
            "register",
            register("a1"),
            [
                ok(&["agent.registered"]),
                no("AlreadyExists"),
                no("AlreadyExists"),
                no("AlreadyExists"),
            ],
        ),
        (
            "update",
            patch_model("m2"),
            [
                no("NotFound"),
                ok(&["agent.config_updated"]),
                no("InvalidTransition"),
                ok(&["agent.config_updated"]),
            ],
        ),
        (
            "no-op update",
            patch_model("m1"),
            [no("NotFound"), ok(&[]), no("InvalidTransition"), ok(&["agent.config_updated"])],
        ),
        (
            "archive",
            AgentCommand::Archive,
            [
                no("NotFound"),
                ok(&["agent.archived"]),
                no("InvalidTransition"),
                no("InvalidTransition"),
            ],
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
fn every_config_change_is_a_new_version_an_operation_can_record() {
    let a = run_all::<Agent>(&[register("a1"), patch_model("m2"), patch_model("m3")]);
    assert_eq!(a.version, 3);
    let r = a.run_ref().unwrap();
    assert_eq!((r.config_version, r.model.as_deref()), (3, Some("m3")));
    let archived = run_all::<Agent>(&[register("a1"), AgentCommand::Archive]);
    assert!(matches!(archived.run_ref(), Err(DomainError::InvalidTransition { .. })));
    assert!(matches!(Agent::default().run_ref(), Err(DomainError::NotFound { .. })));
}

#[test]
fn built_in_ids_are_reserved_for_the_built_ins() {
    let squat = RegisterAgent {
        agent_id: "inbox".into(),
        config: AgentConfig {
            slug: "inbox".into(),
            title: "Mine".into(),
            ..AgentConfig::default()
        },
        builtin: false,
    };
    let r = Agent::default().decide(&AgentCommand::Register(squat), &system_ctx(0));
    assert!(matches!(r, Err(DomainError::AlreadyExists { .. })), "{r:?}");
    let fake = RegisterAgent {
        agent_id: "mine".into(),
        config: AgentConfig { slug: "mine".into(), title: "Mine".into(), ..AgentConfig::default() },
        builtin: true,
    };
    let r = Agent::default().decide(&AgentCommand::Register(fake), &system_ctx(0));
    assert!(matches!(r, Err(DomainError::Validation { .. })), "{r:?}");
    for register in builtin_agents() {
        assert!(Agent::default().decide(&AgentCommand::Register(register), &system_ctx(0)).is_ok());
    }
}

#[test]
fn builtin_agents_include_inbox_and_are_upstreams_twelve() {
    let all = builtin_agents();
    assert_eq!(all.len(), 12);
    assert!(all.iter().all(|a| a.builtin && a.agent_id == a.config.slug));
    assert!(all.iter().any(|a| a.agent_id == INBOX_AGENT_ID));
    assert!(all.iter().all(|a| a.config.model.is_none()), "built-ins use the user's default model");
}

#[test]
fn heterogeneous_agents_need_a_runtime() {
    let cmd = AgentCommand::Register(RegisterAgent {
        agent_id: "cc".into(),
        config: AgentConfig {
            slug: "cc".into(),
            kind: AgentKind::Heterogeneous { runtime: " ".into(), capabilities: vec![] },
            ..AgentConfig::default()
        },
        builtin: false,
    });
    assert!(matches!(
        refused(&Agent::default(), &cmd, &system_ctx(1)),
        DomainError::Validation { .. }
    ));
}

fn command() -> impl Strategy<Value = AgentCommand> {
    prop_oneof![
        Just(register("a1")),
        prop::sample::select(vec!["m1", "m2", "m3"]).prop_map(patch_model),
        "[a-z ]{0,6}".prop_map(|title| AgentCommand::UpdateConfig(AgentConfigPatch {
            title: Some(title),
            ..AgentConfigPatch::default()
        })),
        Just(AgentCommand::Archive),
    ]
}

proptest! {
    #[test]
    fn random_command_sequences_keep_the_agent_consistent(commands in prop::collection::vec(command(), 1..30)) {
        let times: Vec<(i64, Actor)> = commands.iter().map(|_| (1, Actor::user("u1"))).collect();
        let steps: Vec<_> = commands.into_iter().zip(timeline(&times)).collect();
        let (agent, _) = exercise::<Agent>(&steps);
        prop_assert!(agent.version == 0 || agent.exists());
    }
}
