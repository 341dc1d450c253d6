//! The roster: upstream's built-in agents exist from the first start, once, whatever the
//! restarts and instances; their ids are reserved.

use crate::support;

use serde_json::json;
use support::{Db, Server};

const AGENTS: &str = "{ agents(first: 100) { edges { node { id builtin userId title } } } }";
const AGENT_EVENTS: &str =
    "{ events(first: 500, filter: {eventTypes: [\"agent.registered\"]}) { edges { node { streamId } } } }";

async fn registered(s: &Server) -> Vec<String> {
    let d = s.data(Some(&s.admin_token), AGENT_EVENTS, json!({})).await;
    let mut streams: Vec<String> = d["events"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["node"]["streamId"].as_str().map(str::to_string))
        .collect();
    streams.sort();
    streams
}

async fn built_in_agents_exist_from_the_first_start_once(db: Db) {
    let mut s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let d = s.eventually(&alice, AGENTS, |d| d["agents"]["edges"].as_array().is_some_and(|e| e.len() >= 12)).await;
    let agents = d["agents"]["edges"].as_array().unwrap().clone();
    assert_eq!(agents.len(), 12, "upstream's twelve built-ins: {d}");
    assert!(agents.iter().all(|a| a["node"]["builtin"] == true && a["node"]["userId"] == "system"), "{d}");
    let inbox = agents.iter().find(|a| a["node"]["id"] == "inbox").expect("the inbox agent");
    assert_eq!(inbox["node"]["title"], "Inbox");
    let first = registered(&s).await;
    assert_eq!(first.len(), 12, "{first:?}");
    // A restart and a second instance on the same database register nothing more.
    s.restart().await;
    let sibling = s.sibling().await;
    assert_eq!(registered(&s).await, first, "registered once");
    let d = sibling.data(Some(&alice), AGENTS, json!({})).await;
    assert_eq!(d["agents"]["edges"].as_array().map(Vec::len), Some(12), "{d}");
    // A user cannot change or archive a built-in.
    let r = s.gql(Some(&alice), "mutation { archiveAgent(id: \"inbox\") { position } }", json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    sibling.stop();
    s.stop();
}

async fn runs_use_the_roster(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { operation { id agentId agentConfigVersion model provider agentOverrides agentConfig } } }";
    let ops = "{ operations { edges { node { id } } } }";
    // An agent that is not in the roster cannot run; nothing is written.
    let r = s
        .gql(Some(&alice), start, json!({"i": {"operationId": "op0", "kind": "CONVERSATION", "agentId": "ghost"}}))
        .await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let writer = json!({"agentId": "writer", "config": {"slug": "writer", "title": "Writer", "model": "m1", "provider": "p1", "systemRole": "Be brief.", "plugins": ["search"]}});
    s.data(Some(&alice), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": writer})).await;
    s.data(
        Some(&alice),
        "mutation { updateAgentConfig(id: \"writer\", patch: {model: \"m2\"}) { position } }",
        json!({}),
    )
    .await;
    // The roster's current version, model and provider are recorded; the client's are not needed.
    let d = s
        .data(Some(&alice), start, json!({"i": {"operationId": "op1", "kind": "CONVERSATION", "agentId": "writer"}}))
        .await;
    let op = &d["startOperation"]["operation"];
    assert_eq!(
        (op["agentConfigVersion"].clone(), op["model"].clone(), op["provider"].clone()),
        (json!(2), json!("m2"), json!("p1")),
        "{op}"
    );
    assert_eq!(op["agentOverrides"], json!([]));
    assert_eq!(op["agentConfig"]["systemRole"], "Be brief.", "{op}");
    assert_eq!(op["agentConfig"]["plugins"], json!(["search"]), "{op}");
    assert_eq!(op["agentConfig"]["model"], "m2", "{op}");
    // An explicit model is an override, recorded as such.
    let d = s
        .data(
            Some(&alice),
            start,
            json!({"i": {"operationId": "op2", "kind": "TASK", "agentId": "writer", "model": "m9", "provider": "p1"}}),
        )
        .await;
    let op = &d["startOperation"]["operation"];
    assert_eq!((op["model"].clone(), op["agentOverrides"].clone()), (json!("m9"), json!(["model"])), "{op}");
    assert_eq!(op["agentConfig"]["model"], "m9", "{op}");
    let d = s
        .data(
            Some(&alice),
            "{ operations(filter: {agentId: \"writer\"}) { edges { node { id agentOverrides } } } }",
            json!({}),
        )
        .await;
    let listed = d["operations"]["edges"].as_array().unwrap().clone();
    assert!(listed.iter().any(|e| e["node"] == json!({"id": "op2", "agentOverrides": ["model"]})), "{d}");
    // A stale config version, an archived agent and someone else's agent are refused.
    let r = s
        .gql(
            Some(&alice),
            start,
            json!({"i": {"operationId": "op3", "kind": "TASK", "agentId": "writer", "agentConfigVersion": 1}}),
        )
        .await;
    assert_eq!(support::error_code(&r).as_deref(), Some("CONFLICT"), "{r}");
    let r = s.gql(Some(&bob), start, json!({"i": {"operationId": "op4", "kind": "TASK", "agentId": "writer"}})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let lt = s.claim(&alice, "op2", "w1").await;
    let spawn = "mutation($lt: String) { spawnSubagent(parentOperationId: \"op2\", leaseToken: $lt, input: {operationId: \"kid\", kind: SUBAGENT, agentId: \"ghost\"}) { position } }";
    let r = s.gql(Some(&alice), spawn, json!({"lt": lt})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "a sub-agent names a registered agent: {r}");
    s.data(Some(&alice), "mutation { archiveAgent(id: \"writer\") { position } }", json!({})).await;
    let r = s.gql(Some(&alice), start, json!({"i": {"operationId": "op5", "kind": "TASK", "agentId": "writer"}})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("CONFLICT"), "an archived agent does not run: {r}");
    let d = s.data(Some(&alice), ops, json!({})).await;
    let ids: Vec<&str> =
        d["operations"]["edges"].as_array().unwrap().iter().filter_map(|e| e["node"]["id"].as_str()).collect();
    assert_eq!(ids.len(), 2, "only the two accepted runs exist: {ids:?}");
    s.stop();
}

both!(
    built_in_agents_exist_from_the_first_start_once as built_in_agents_exist_from_the_first_start_once,
    runs_use_the_roster as runs_use_the_roster
);
