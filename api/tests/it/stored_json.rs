//! The log keeps each payload as the JSON text that was appended, on both backends: what a
//! client wrote comes back the same from the log and from the read models built from it. On
//! PostgreSQL a `jsonb` column had turned `-0.0` into `0.0` (and reordered keys, dropped
//! duplicates), so the two backends answered differently for one history.

use crate::support;

use serde_json::json;
use support::{Db, Server};

const APPEND: &str = "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }";
const LOG: &str = "{ events(first: 10, filter: {eventTypes: [\"conversation.message_appended\"]}) \
    { edges { node { payload } } } }";
const MESSAGES: &str = "{ conversation(topicId: \"c1\") { messages { edges { node { message } } } } }";

async fn json_is_kept_as_appended(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let metadata = json!({"delta": -0.0, "nested": {"zero": -0.0, "list": [-0.0, 0.5]}});
    let m = json!({"messageId": "m1", "role": "user", "content": "hi", "metadata": metadata});
    s.data(Some(&alice), APPEND, json!({"t": "c1", "m": m})).await;

    // From the log.
    let log = s.text(&alice, LOG).await;
    assert!(log.contains("\"delta\":-0.0"), "{log}");
    assert!(log.contains("\"zero\":-0.0") && log.contains("[-0.0,0.5]"), "{log}");
    // From the read model, built from the log's text.
    s.eventually(&alice, MESSAGES, |d| d["conversation"]["messages"]["edges"].as_array().is_some_and(|e| e.len() == 1))
        .await;
    let read = s.text(&alice, MESSAGES).await;
    assert!(read.contains("\"delta\":-0.0") && read.contains("\"zero\":-0.0"), "{read}");
}

both!(json_is_kept_as_appended as json_is_kept_as_appended);
