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

both!(an_answer_is_one_moment as snapshots_an_answer_is_one_moment);
