//! No idle burn, through the real server: a heartbeat task configured with `requireInput` runs
//! its first tick, then skips every tick with nothing new since its last run (each skip a
//! `task.tick_skipped` event, counted on the task), and runs again once a user comments.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

const TASK: &str = "{ task(id: \"t1\") { status totalTopics heartbeatRequireInput skippedTicks lastSkippedTickAt topics { edges { node { operationId status } } } } }";
const SKIPPED: &str =
    "{ events(first: 100, filter: {eventTypes: [\"task.tick_skipped\"]}) { edges { node { streamId payload } } } }";

fn topics(d: &Value) -> Vec<Value> {
    d["task"]["topics"]["edges"].as_array().map(|e| e.iter().map(|n| n["node"].clone()).collect()).unwrap_or_default()
}

/// Claim the task's running topic `n` and complete it with a hand-off that names no next
/// action: the run left nothing to do.
async fn finish_run(s: &Server, token: &str, n: usize) {
    let d =
        s.eventually(token, TASK, |d| topics(d).len() == n && topics(d).iter().any(|t| t["status"] == "running")).await;
    let op = topics(&d).into_iter().find(|t| t["status"] == "running").expect("a running topic")["operationId"]
        .as_str()
        .expect("an operation")
        .to_string();
    let lt = s.claim(token, &op, "w1").await;
    s.data(
        Some(token),
        "mutation($id: String!, $lt: String!) { completeOperation(id: $id, leaseToken: $lt, result: \"Checked the inbox: nothing to do.\", handoff: {title: \"idle\"}) { position } }",
        json!({"id": op, "lt": lt}),
    )
    .await;
    s.eventually(token, TASK, |d| topics(d).len() == n && topics(d).iter().all(|t| t["status"] == "completed")).await;
}

async fn a_tick_without_new_input_is_skipped_and_counted(db: Db) {
    let s = Server::start(db).await;
    // A second instance schedules too: a skipped tick is still written once.
    let other = s.sibling().await;
    let alice = s.user_token("alice").await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Answer new comments.", "maxTopics": 5,
        "config": {"pauseAfterTopic": false}});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    let configure = "mutation($h: JSON) { configureTaskAutomation(id: \"t1\", mode: \"heartbeat\", heartbeat: $h) { task { heartbeatRequireInput } } }";
    let d = s.data(Some(&alice), configure, json!({"h": {"intervalSecs": 1, "requireInput": true}})).await;
    assert_eq!(d["configureTaskAutomation"]["task"]["heartbeatRequireInput"], true, "{d}");
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t1\", status: \"scheduled\") { position } }", json!({}))
        .await;

    // The first tick runs: there was no run before it.
    finish_run(&s, &alice, 1).await;
    // Nothing new since: the next ticks are skipped, counted, and start no run.
    let d = s.eventually(&alice, TASK, |d| d["task"]["skippedTicks"].as_i64().is_some_and(|n| n >= 2)).await;
    assert_eq!(d["task"]["totalTopics"], 1, "a skipped tick starts no run: {d}");
    assert!(d["task"]["lastSkippedTickAt"].is_string(), "{d}");
    let events = s.data(Some(&alice), SKIPPED, json!({})).await;
    let skips = events["events"]["edges"].as_array().cloned().unwrap_or_default();
    assert!(skips.len() >= 2, "{events}");
    assert!(
        skips
            .iter()
            .all(|e| e["node"]["streamId"].as_str().is_some_and(|id| id.starts_with("task@") && id.ends_with("/t1"))),
        "on the task's history: {events}"
    );
    assert!(skips.iter().all(|e| e["node"]["payload"]["reason"] == "no-new-input"), "{events}");
    let mut tokens: Vec<&str> = skips.iter().filter_map(|e| e["node"]["payload"]["tickToken"].as_str()).collect();
    let all = tokens.len();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), all, "each tick skipped once across two instances: {events}");
    // The count is the log's.
    let d = s.data(Some(&alice), TASK, json!({})).await;
    let counted = d["task"]["skippedTicks"].as_i64().unwrap_or_default();
    let logged = s.data(Some(&alice), SKIPPED, json!({})).await["events"]["edges"].as_array().map_or(0, Vec::len);
    assert!(counted as usize <= logged && counted >= 2, "{counted} counted, {logged} logged");

    // A user's comment is new input: the next tick runs.
    s.data(
        Some(&alice),
        "mutation { addTaskComment(id: \"t1\", commentId: \"c1\", content: \"Please also check the invoices.\") { position } }",
        json!({}),
    )
    .await;
    finish_run(&s, &alice, 2).await;
    let d = s.data(Some(&alice), TASK, json!({})).await;
    assert_eq!(d["task"]["totalTopics"], 2, "{d}");
    // And after that run, idle again.
    let before = d["task"]["skippedTicks"].as_i64().unwrap_or_default();
    let d = s.eventually(&alice, TASK, |d| d["task"]["skippedTicks"].as_i64().is_some_and(|n| n > before)).await;
    assert_eq!(d["task"]["totalTopics"], 2, "{d}");
    drop(other);
    support::verify_read_models(&s.stop()).await;
}

both!(a_tick_without_new_input_is_skipped_and_counted as a_tick_without_new_input_is_skipped_and_counted);
