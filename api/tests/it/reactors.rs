//! The signal bus over the real server: a failed run yields an urgent error brief and its
//! notification in the run's causal chain, a question to a human a decision notification; each
//! effect happens once across restarts and with two server processes on one database.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const BRIEFS: &str =
    "{ briefs(filter: {type: \"error\"}) { edges { node { briefId priority operationId title summary } } } }";
const INBOX: &str = "{ notifications { edges { node { category type dedupeKey title } } } }";

fn count(data: &Value, root: &str) -> usize {
    data[root]["edges"].as_array().map_or(0, Vec::len)
}

/// Start run `id`, claim it and fail it: a fact the signal bus answers with an error brief.
pub(crate) async fn fail_a_run(s: &Server, token: &str, id: &str) {
    let input = json!({"i": {"operationId": id, "kind": "CONVERSATION", "agentId": "inbox"}});
    s.data(Some(token), START, input).await;
    let lt = s.claim(token, id, "w").await;
    s.data(
        Some(token),
        "mutation($id: String!, $lt: String!) { failOperation(id: $id, leaseToken: $lt, message: \"the model timed out\", code: \"TIMEOUT\") { position } }",
        json!({"id": id, "lt": lt}),
    )
    .await;
}

async fn a_failed_run_yields_an_urgent_brief_and_a_notification(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    fail_a_run(&s, &alice, "op1").await;
    let briefs = s.eventually(&alice, BRIEFS, |d| count(d, "briefs") >= 1).await;
    assert_eq!(count(&briefs, "briefs"), 1, "{briefs}");
    let brief = &briefs["briefs"]["edges"][0]["node"];
    assert_eq!(brief["priority"], "urgent");
    assert_eq!(brief["operationId"], "op1");
    assert_eq!(brief["summary"], "the model timed out");
    let brief_id = brief["briefId"].as_str().unwrap().to_string();
    let inbox = s.eventually(&alice, INBOX, |d| count(d, "notifications") >= 1).await;
    assert_eq!(count(&inbox, "notifications"), 1, "{inbox}");
    assert_eq!(inbox["notifications"]["edges"][0]["node"]["dedupeKey"], format!("brief:{brief_id}"));

    // Brief and notification are in the failure's causal chain, in that order (the worker's
    // failOperation is the chain's source).
    let failed = s
        .data(
            Some(&alice),
            "{ events(filter: {eventTypes: [\"operation.failed\"]}) { edges { node { rootSourceId } } } }",
            json!({}),
        )
        .await;
    let root = failed["events"]["edges"][0]["node"]["rootSourceId"].clone();
    let chain = s
        .data(
            Some(&alice),
            "query($r: UUID!) { chain(rootSourceId: $r) { eventType actor: metadata } }",
            json!({"r": root}),
        )
        .await;
    let types: Vec<&str> = chain["chain"].as_array().unwrap().iter().filter_map(|e| e["eventType"].as_str()).collect();
    assert_eq!(types, ["operation.failed", "brief.created", "notification.created"]);
    // A task run and a sub-agent get no operation-failure brief; a human question a notification.
    s.data(Some(&alice), START, json!({"i": {"operationId": "op2", "kind": "CONVERSATION", "agentId": "inbox"}})).await;
    let lt = s.claim(&alice, "op2", "w").await;
    let card = json!({"cardId": "card-1", "title": "Ship it?", "kind": "confirm"});
    s.data(
        Some(&alice),
        "mutation($c: JSON!, $lt: String!) { askHuman(id: \"op2\", leaseToken: $lt, card: $c) { position } }",
        json!({"c": card, "lt": lt}),
    )
    .await;
    let inbox = s.eventually(&alice, INBOX, |d| count(d, "notifications") >= 2).await;
    let hitl: Vec<&Value> = inbox["notifications"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"]["category"] == "hitl")
        .collect();
    assert_eq!(hitl.len(), 1, "{inbox}");
    assert_eq!(hitl[0]["node"]["title"], "Ship it?");
    s.stop();
}

async fn each_effect_happens_once_across_restarts_and_two_servers(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let other = s.sibling().await;
    // Both servers' signal buses see every failure; each brief and notification is written once.
    for i in 0..5 {
        let server = if i % 2 == 0 { &s } else { &other };
        fail_a_run(server, &alice, &format!("op{i}")).await;
    }
    let inbox = s.eventually(&alice, INBOX, |d| count(d, "notifications") >= 5).await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let briefs = s.data(Some(&alice), BRIEFS, json!({})).await;
    assert_eq!(count(&briefs, "briefs"), 5, "{briefs}");
    let inbox2 = s.data(Some(&alice), INBOX, json!({})).await;
    assert_eq!(count(&inbox2, "notifications"), 5, "{inbox} {inbox2}");
    let created = "{ events(first: 500, filter: {eventTypes: [\"brief.created\", \"notification.created\"]}) { edges { cursor } } }";
    assert_eq!(s.data(Some(&alice), created, json!({})).await["events"]["edges"].as_array().map(Vec::len), Some(10));
    drop(other);
    // A restart reacts from its checkpoint: nothing doubles.
    let data_dir = s.data_dir.clone();
    let url = s.db.url();
    let token = alice.clone();
    let mut s = s;
    s.kill();
    let s2 = Server::start_in(Db::Shared(url), data_dir).await;
    fail_a_run(&s2, &token, "op-after").await;
    s2.eventually(&token, BRIEFS, |d| count(d, "briefs") >= 6).await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(s2.data(Some(&token), created, json!({})).await["events"]["edges"].as_array().map(Vec::len), Some(12));
    drop(s2);
    drop(s);
}

const EMIT: &str = "mutation($id: String!, $t: String!, $p: JSON!) { emitSourceEvent(sourceId: $id, sourceType: $t, payload: $p, timestampMs: 1700000000000) { accepted } }";

fn types_in(data: &Value, root: &str) -> Vec<String> {
    let mut types: Vec<String> = data[root]
        .as_array()
        .map_or(Vec::new(), |a| a.iter().filter_map(|e| e["eventType"].as_str().map(str::to_string)).collect());
    types.sort();
    types
}

async fn chain_of(s: &Server, token: &str, source_id: &str) -> Value {
    let sources = s
        .data(
            Some(token),
            "{ events(first: 500, filter: {eventTypes: [\"signal.source_received\"]}) { edges { node { rootSourceId payload } } } }",
            json!({}),
        )
        .await;
    let root = sources["events"]["edges"]
        .as_array()
        .and_then(|e| e.iter().find(|n| n["node"]["payload"]["sourceId"] == source_id))
        .map(|n| n["node"]["rootSourceId"].clone())
        .unwrap_or(Value::Null);
    s.data(Some(token), "query($r: UUID!) { chain(rootSourceId: $r) { eventType } }", json!({"r": root})).await
}

/// Sources run through the registries — source → signal → actions (two processors for one
/// signal type) → results and a notification — once, with two servers and across a kill in
/// the middle of reacting; a pause reported as `completed` is not a finished run.
async fn sources_run_through_the_registries_once(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let other = s.sibling().await;
    let pause = json!({"operationId": "op9", "reason": "waiting_for_human"});
    s.data(Some(&alice), EMIT, json!({"id": "src-pause", "t": "agent.execution.completed", "p": pause})).await;
    let failed = json!({"operationId": "op9", "error": {"message": "boom"}});
    other.data(Some(&alice), EMIT, json!({"id": "src-fail", "t": "agent.execution.failed", "p": failed})).await;
    let want = [
        "notification.created",
        "signal.action_completed",
        "signal.action_completed",
        "signal.action_dispatched",
        "signal.action_dispatched",
        "signal.emitted",
        "signal.source_received",
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut chain = chain_of(&s, &alice, "src-fail").await;
    while types_in(&chain, "chain") != want && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        chain = chain_of(&s, &alice, "src-fail").await;
    }
    assert_eq!(types_in(&chain, "chain"), want, "{chain}");
    let paused = chain_of(&s, &alice, "src-pause").await;
    assert_eq!(types_in(&paused, "chain"), ["signal.source_received"], "a pause is not an end: {paused}");
    // agentlog's own source types are agentlog's to produce, not a caller's.
    let forged = s.gql(Some(&alice), EMIT, json!({"id": "src-forged", "t": "agentlog.cron.exhausted", "p": {}})).await;
    assert_eq!(forged["errors"][0]["extensions"]["code"], "VALIDATION", "{forged}");
    let received = s
        .data(
            Some(&alice),
            "{ events(first: 500, filter: {eventTypes: [\"signal.source_received\"]}) { edges { node { payload } } } }",
            json!({}),
        )
        .await;
    let ids: Vec<&Value> = received["events"]["edges"]
        .as_array()
        .map_or(Vec::new(), |e| e.iter().map(|n| &n["node"]["payload"]["sourceId"]).collect());
    assert_eq!(ids, [&json!("src-pause"), &json!("src-fail")], "nothing written for the forged source");
    drop(other);

    // Tool failures, and the server killed while it reacts: the restart finishes the work, once.
    for i in 0..5 {
        let p = json!({"operationId": "op9", "tool": {"identifier": "web-search"}, "outcome": {"status": "failed", "error": {"message": "timeout"}}});
        s.data(Some(&alice), EMIT, json!({"id": format!("tool-{i}"), "t": "tool.outcome.failed", "p": p})).await;
    }
    let (data_dir, url) = (s.data_dir.clone(), s.db.url());
    let mut s = s;
    s.kill();
    let s2 = Server::start_in(Db::Shared(url), data_dir).await;
    let tool_failed = |d: &Value| {
        d["notifications"]["edges"]
            .as_array()
            .map_or(0, |e| e.iter().filter(|n| n["node"]["type"] == "tool_failed").count())
    };
    s2.eventually(&alice, INBOX_TYPES, |d| tool_failed(d) >= 5).await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let inbox = s2.data(Some(&alice), INBOX_TYPES, json!({})).await;
    assert_eq!(tool_failed(&inbox), 5, "{inbox}");
    let completed = "{ events(first: 500, filter: {eventTypes: [\"signal.action_completed\"]}) { edges { cursor } } }";
    let n = s2.data(Some(&alice), completed, json!({})).await["events"]["edges"].as_array().map(Vec::len);
    assert_eq!(n, Some(2 + 5), "one result per action, none doubled");
    drop(s2);
    drop(s);
}

const INBOX_TYPES: &str = "{ notifications(first: 100) { edges { node { type dedupeKey } } } }";

both!(
    a_failed_run_yields_an_urgent_brief_and_a_notification as signal_bus_failed_run_brief_and_notification,
    each_effect_happens_once_across_restarts_and_two_servers as signal_bus_effects_happen_once,
    sources_run_through_the_registries_once as signal_sources_run_through_registries_once
);
