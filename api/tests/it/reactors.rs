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

async fn fail_a_run(s: &Server, token: &str, id: &str) {
    let input = json!({"i": {"operationId": id, "kind": "CONVERSATION", "agentId": "a1"}});
    s.data(Some(token), START, input).await;
    s.data(
        Some(token),
        "mutation($id: String!) { claimOperation(id: $id, workerId: \"w\") { position } }",
        json!({"id": id}),
    )
    .await;
    s.data(
        Some(token),
        "mutation($id: String!) { failOperation(id: $id, message: \"the model timed out\", code: \"TIMEOUT\") { position } }",
        json!({"id": id}),
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
    s.data(Some(&alice), START, json!({"i": {"operationId": "op2", "kind": "CONVERSATION", "agentId": "a1"}})).await;
    s.data(Some(&alice), "mutation { claimOperation(id: \"op2\", workerId: \"w\") { position } }", json!({})).await;
    let card = json!({"cardId": "card-1", "title": "Ship it?", "kind": "confirm"});
    s.data(Some(&alice), "mutation($c: JSON!) { askHuman(id: \"op2\", card: $c) { position } }", json!({"c": card}))
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

both!(
    a_failed_run_yields_an_urgent_brief_and_a_notification as signal_bus_failed_run_brief_and_notification,
    each_effect_happens_once_across_restarts_and_two_servers as signal_bus_effects_happen_once
);
