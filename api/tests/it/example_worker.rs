//! The example worker (`api/examples/worker.rs`) drives its scripted agent end to end against
//! the real server: work announced over a websocket, claimed, streamed, stored, completed.

use crate::support;

use crate::worker;

use serde_json::json;
use support::{Db, Server};

async fn the_example_worker_completes_enqueued_runs(db: Db) {
    let s = Server::start(db).await;
    let token = s.user_token("alice").await;
    let client = worker::Client::new(&s.base, &token);
    let ids = worker::enqueue(&client, 3, "t").await.expect("enqueue");
    let mut done = worker::run(&s.base, &token, "w-test", 3).await.expect("worker run");
    done.sort();
    assert_eq!(done, ids);
    for (i, id) in ids.iter().enumerate() {
        let q = "query($id: String!, $t: String!) { operation(id: $id) { status stepCount inputTokens leaseWorkerId }
                 conversation(topicId: $t) { messageCount flatList } }";
        let d = s.data(Some(&token), q, json!({"id": id, "t": format!("t-topic-{i}")})).await;
        assert_eq!(d["operation"]["status"], "done", "{d}");
        assert_eq!(d["operation"]["stepCount"], 1);
        assert_eq!(d["operation"]["inputTokens"], 120);
        assert_eq!(d["conversation"]["messageCount"], 2);
        let rows = d["conversation"]["flatList"].as_array().expect("flat list");
        assert_eq!(rows.last().map(|r| r["content"].clone()), Some(json!("Looking that up… done: 42.")), "{d}");
    }
    let events = s
        .data(
            Some(&token),
            "{ events(first: 500, filter: {eventTypes: [\"conversation.message_appended\"]}) { edges { cursor } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        events["events"]["edges"].as_array().map(Vec::len),
        Some(6),
        "one event per finished message, none per delta"
    );
    let a = s.data(Some(&token), "{ analytics { total { runs costMicros } } }", json!({})).await;
    assert_eq!(a["analytics"]["total"], json!({"runs": 3, "costMicros": 285}));
    s.stop();
}

both!(the_example_worker_completes_enqueued_runs as example_worker_end_to_end);
