//! A query's answer is one moment of the read models: while a worker reports steps three at a
//! time (one atomic append each), an operation's `stepCount` and its `steps` — rows of two
//! tables, read by two queries — always agree, through the real server on both backends.
//! Without the request's snapshot (each query on its own) a reader polling at the same time sees
//! a count the steps do not match.

use serde_json::{Value, json};

use crate::support::{Db, Server};

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const BATCH: &str = "mutation($id: String!, $lt: String!, $items: [BatchItemInput!]!) { reportBatch(operationId: $id, leaseToken: $lt, items: $items) { position } }";
// The list's nodes are read-model rows (`operation(id)` reads the operation's stream instead).
const READ: &str = "{ operations(first: 1) { nodes { stepCount steps(first: 100) { nodes { stepIndex } } } } }";
const BATCHES: i64 = 30;

fn step(n: i64) -> Value {
    json!({"step": {"phase": "ACTING", "usage": {"inputTokens": n, "totalTokens": n, "costMicros": 1}, "toolCalls": []}})
}

async fn an_answer_is_one_moment(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let agent = json!({"agentId": "a1", "config": {"slug": "a1", "title": "Helper", "model": "m1", "provider": "p1"}});
    s.data(Some(&alice), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": agent})).await;
    s.data(Some(&alice), START, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "a1"}})).await;
    let lease = s.claim(&alice, "op1", "w1").await;

    let reader = {
        let (url, token, client) = (format!("{}/graphql", s.base), alice.clone(), reqwest::Client::new());
        tokio::spawn(async move {
            let (mut reads, mut last) = (0u32, 0i64);
            while last < BATCHES * 3 {
                let answer: Value = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&json!({"query": READ}))
                    .send()
                    .await
                    .expect("request")
                    .json()
                    .await
                    .expect("json");
                let d = &answer["data"];
                let op = &d["operations"]["nodes"][0];
                let count = op["stepCount"].as_i64().expect("stepCount");
                let steps = op["steps"]["nodes"].as_array().expect("steps").len() as i64;
                assert_eq!(count, steps, "stepCount and steps from one moment (read {reads}): {d}");
                assert_eq!(count % 3, 0, "never half of one append (read {reads}): {d}");
                (reads, last) = (reads + 1, count);
            }
            reads
        })
    };
    for b in 0..BATCHES {
        let items: Vec<Value> = (1..=3).map(|k| step(b * 3 + k)).collect();
        s.data(Some(&alice), BATCH, json!({"id": "op1", "lt": lease, "items": items})).await;
    }
    let reads = reader.await.expect("the reader");
    assert!(reads > 0);
    s.stop();
}

/// `operation(id)` reads the run from its stream, and its children, steps and cards from the
/// read model: when the stream has gone past the read model, the run is folded up to the read
/// model's position, so its `stepCount` and `historyLength` agree with its `steps`. The read
/// model is held behind here (its checkpoint marked with a newer version, so this server
/// leaves it alone); in production the gap is a batch's time, and a group supervisor showed
/// its dispatched members with its status from before their dispatch (a flake of
/// `orchestration.rs`).
async fn a_run_read_by_id_is_at_its_rows_moment(db: Db) {
    let mut s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), START, json!({"i": {"operationId": "held", "kind": "TASK", "agentId": "inbox"}})).await;
    let lease = s.claim(&alice, "held", "w1").await;
    s.data(Some(&alice), BATCH, json!({"id": "held", "lt": lease, "items": [step(1)]})).await;
    const READ_ONE: &str =
        "{ operation(id: \"held\") { stepCount historyLength steps(first: 10) { nodes { stepIndex } } } }";
    let before = s.data(Some(&alice), READ_ONE, json!({})).await;
    assert_eq!(before["operation"]["stepCount"], 1, "{before}");
    let version = before["operation"]["historyLength"].clone();

    s.terminate();
    s.exit_status(std::time::Duration::from_secs(30)).expect("the server stopped");
    let store =
        agentlog_eventlog::open_store(&s.db.url(), agentlog_eventlog::StoreOptions::default()).await.expect("open");
    agentlog_projections::ReadDb::from(store.database())
        .execute("UPDATE projection_checkpoints SET version = 99 WHERE name = 'operations'", &[])
        .await
        .expect("hold the operations read model");
    store.close().await;
    let s = s.start_again().await;
    // The stream moves on; the read model does not (the mutation's wait for it times out).
    s.data(Some(&alice), BATCH, json!({"id": "held", "lt": lease, "items": [step(2), step(3)]})).await;
    let after = s.data(Some(&alice), READ_ONE, json!({})).await;
    let op = &after["operation"];
    assert_eq!(op["steps"]["nodes"].as_array().map(Vec::len), Some(1), "{after}");
    assert_eq!(op["stepCount"], 1, "the run as its steps were read: {after}");
    assert_eq!(op["historyLength"], version, "{after}");
    s.stop();
}

both!(
    an_answer_is_one_moment as snapshots_an_answer_is_one_moment,
    a_run_read_by_id_is_at_its_rows_moment as snapshots_a_run_read_by_id_is_at_its_rows_moment
);
