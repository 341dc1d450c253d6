//! Tasks end to end through the real server: a completion starts the work that waited on it
//! (the task cascade), held dependants are reported, and ending a run stops its operation.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

const CREATE: &str = "mutation($i: JSON!) { createTask(input: $i) { position } }";
const DEPEND: &str =
    "mutation($id: String!, $on: String!) { addTaskDependency(id: $id, dependsOnId: $on, kind: \"blocks\") { position } }";
const BRIEF: &str = "mutation($i: JSON!) { createBrief(input: $i) { position } }";
const APPROVE: &str = "mutation($id: String!) { resolveBrief(id: $id, action: \"approve\") { position } }";

/// The task query for `id` (a literal: `eventually` takes no variables).
fn task_query(id: &str) -> String {
    format!("{{ task(id: \"{id}\") {{ status topics {{ edges {{ node {{ topicId operationId status trigger }} }} }} }} }}")
}

async fn create_task(s: &Server, token: &str, id: &str) {
    let input = json!({"taskId": id, "identifier": id.to_uppercase(), "instruction": format!("do {id}")});
    s.data(Some(token), CREATE, json!({"i": input})).await;
}

async fn task(s: &Server, token: &str, id: &str) -> Value {
    s.data(Some(token), &task_query(id), json!({})).await["task"].clone()
}

fn topics(t: &Value) -> Vec<Value> {
    t["topics"]["edges"].as_array().map(|e| e.iter().map(|n| n["node"].clone()).collect()).unwrap_or_default()
}

/// Approve a result brief of task `id` made by hand (a worker's run would make one too).
async fn approve_result(s: &Server, token: &str, id: &str) {
    let brief = format!("brief-{id}");
    let input = json!({"briefId": brief, "type": "result", "title": format!("{id} done"), "summary": "Finished.", "taskId": id});
    s.data(Some(token), BRIEF, json!({"i": input})).await;
    s.data(Some(token), APPROVE, json!({"id": brief})).await;
}

async fn approving_a_result_brief_starts_the_released_dependants(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    for id in ["a", "b", "c", "d", "e"] {
        create_task(&s, &alice, id).await;
    }
    // a blocks b and c; b blocks d; e waits on a and on a task alice cannot see (bob's).
    for (id, on) in [("b", "a"), ("c", "a"), ("d", "b"), ("e", "a")] {
        s.data(Some(&alice), DEPEND, json!({"id": id, "on": on})).await;
    }
    let admin = s.admin_token.clone();
    s.data(
        Some(&admin),
        "mutation($i: JSON!) { createTask(input: $i, ownerId: \"bob\") { position } }",
        json!({"i": {"taskId": "x", "identifier": "X", "instruction": "bob's"}}),
    )
    .await;
    s.data(Some(&admin), DEPEND, json!({"id": "e", "on": "x"})).await;

    approve_result(&s, &alice, "a").await;
    assert_eq!(task(&s, &alice, "a").await["status"], "completed");
    for id in ["b", "c"] {
        let t = s.eventually(&alice, &task_query(id), |d| d["task"]["status"] == "running").await;
        let runs = topics(&t["task"]);
        assert_eq!(runs.len(), 1, "{id} started once: {t}");
        assert_eq!(runs[0]["status"], "running", "{t}");
        assert_eq!(runs[0]["trigger"], "manual", "{t}");
    }
    // The cascade's notification about e says why it was not started.
    let inbox = s
        .eventually(&alice, "{ notifications { edges { node { type metadata } } } }", |d| {
            d["notifications"]["edges"].as_array().is_some_and(|e| e.iter().any(|n| n["node"]["type"] == "task_held"))
        })
        .await;
    let held: Vec<&Value> = inbox["notifications"]["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["node"]["type"] == "task_held")
        .collect();
    assert_eq!(held.len(), 1, "{inbox}");
    assert_eq!(held[0]["node"]["metadata"]["taskId"], "e", "{inbox}");
    assert_eq!(held[0]["node"]["metadata"]["unknownUpstreams"], json!(["x"]), "{inbox}");
    // d waits for b, e for the task alice cannot see.
    for id in ["d", "e"] {
        let t = task(&s, &alice, id).await;
        assert_eq!(t["status"], "backlog", "{id}: {t}");
        assert!(topics(&t).is_empty(), "{id} not started: {t}");
    }

    // Finishing b (its result approved while it runs) starts d.
    approve_result(&s, &alice, "b").await;
    let t = s.eventually(&alice, &task_query("d"), |d| d["task"]["status"] == "running").await;
    assert_eq!(topics(&t["task"]).len(), 1, "{t}");
    let t = task(&s, &alice, "e").await;
    assert_eq!(t["status"], "backlog", "e is still held: {t}");
    // c still runs, started once.
    let t = task(&s, &alice, "c").await;
    assert_eq!(topics(&t).len(), 1, "{t}");
    s.stop();
}

both!(approving_a_result_brief_starts_the_released_dependants as cascade_starts_released_dependants);
