//! The conversation tree over real HTTP: served as the parser wrote it (numbers as JavaScript
//! writes them, which a conversion to GraphQL values would not keep), the same bytes to every
//! reader of a version, and a client's own strings never taken for the server's placeholders.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

const APPEND: &str = "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }";
const TREE: &str = "{ conversation(topicId: \"c1\") { tree { version contextTree flatList messageMap diagnostics } } }";

async fn tree_is_the_written_json(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let messages = [
        json!({"messageId": "m1", "role": "user", "content": "hi"}),
        json!({"messageId": "m2", "role": "assistant", "content": "hello", "parentId": "m1",
               "metadata": {"usage": {"cost": 1e21, "totalTokens": 9007199254740993u64}, "tps": 1.5e-7}}),
    ];
    for m in messages {
        s.data(Some(&alice), APPEND, json!({"t": "c1", "m": m})).await;
    }
    let text = s
        .eventually(&alice, TREE, |d| d["conversation"]["tree"]["flatList"].as_array().is_some_and(|l| l.len() == 2))
        .await;
    assert!(text["conversation"]["tree"]["diagnostics"].is_array(), "{text}");

    let body = s.text(&alice, TREE).await;
    // JavaScript's spellings: `1e+21` (not `1e21`), 2^53 + 1 read as the f64 2^53, `1.5e-7`.
    assert!(body.contains("\"cost\":1e+21"), "{body}");
    assert!(body.contains("\"totalTokens\":9007199254740992"), "{body}");
    assert!(body.contains("\"tps\":1.5e-7"), "{body}");
    let parsed: Value = serde_json::from_str(&body).expect("the answer is JSON");
    let tree = &parsed["data"]["conversation"]["tree"];
    assert_eq!(tree["flatList"][1]["id"], "m2");
    assert_eq!(tree["contextTree"][1]["id"], "m2");
    assert!(tree["messageMap"]["m1"].is_object(), "{tree}");
    // The same version is the same bytes for the next reader.
    assert_eq!(s.text(&alice, TREE).await, body);
    // The shorthand fields and aliases of the same field are spliced too.
    let both = s.text(&alice, "{ conversation(topicId: \"c1\") { a: flatList b: flatList contextTree } }").await;
    let both: Value = serde_json::from_str(&both).expect("JSON");
    assert_eq!(both["data"]["conversation"]["a"], tree["flatList"]);
    assert_eq!(both["data"]["conversation"]["b"], tree["flatList"]);
    assert_eq!(both["data"]["conversation"]["contextTree"], tree["contextTree"]);
}

async fn placeholder_lookalikes_stay_strings(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let fake = "\u{1}raw:00000000000000000000000000000000:0\u{1}";
    s.data(Some(&alice), APPEND, json!({"t": "c1", "m": {"messageId": "m1", "role": "user", "content": fake}})).await;
    let q = "{ conversation(topicId: \"c1\") { title messages { edges { node { message } } } flatList } }";
    s.eventually(&alice, q, |d| d["conversation"]["flatList"].as_array().is_some_and(|l| l.len() == 1)).await;
    let body = s.text(&alice, q).await;
    let parsed: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(parsed["data"]["conversation"]["messages"]["edges"][0]["node"]["message"]["content"], fake);
    assert_eq!(parsed["data"]["conversation"]["flatList"][0]["content"], fake);
}

both!(
    tree_is_the_written_json as tree_is_the_written_json,
    placeholder_lookalikes_stay_strings as placeholder_lookalikes_stay_strings
);
