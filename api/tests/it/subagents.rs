//! Sub-agents keep their limits: a child runs in its parent's conversation whatever topic it
//! is given, so the cap of 3 background sub-agents per conversation holds.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, error_code};

async fn the_background_cap_holds_whatever_topic_a_child_names(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("alice").await;
    for topic in ["c1", "elsewhere"] {
        s.data(Some(&t), "mutation($t: String!) { createConversation(topicId: $t) { position } }", json!({"t": topic}))
            .await;
    }
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    s.data(
        Some(&t),
        start,
        json!({"i": {"operationId": "p", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c1"}}),
    )
    .await;
    let lt = s.claim(&t, "p", "w1").await;
    let spawn = "mutation($i: StartOperationInput!, $lt: String) { spawnSubagent(parentOperationId: \"p\", leaseToken: $lt, input: $i) { operation { topicId } } }";
    let child = |id: &str, topic: Option<&str>| {
        let mut i = json!({"operationId": id, "kind": "SUBAGENT", "agentId": "inbox", "background": true});
        if let Some(t) = topic {
            i["topicId"] = json!(t);
        }
        json!({"i": i, "lt": lt})
    };
    for n in 0..3 {
        let d = s.data(Some(&t), spawn, child(&format!("k{n}"), None)).await;
        assert_eq!(d["spawnSubagent"]["operation"]["topicId"], "c1", "a child inherits its parent's conversation");
    }
    let r = s.gql(Some(&t), spawn, child("k3", None)).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "a fourth background child: {r}");
    for topic in ["elsewhere", "nowhere"] {
        let r = s.gql(Some(&t), spawn, child("k4", Some(topic))).await;
        assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "another topic does not escape the cap: {r}");
    }
    let d = s.data(Some(&t), "{ operation(id: \"p\") { childIds } }", json!({})).await;
    assert_eq!(d["operation"]["childIds"].as_array().map(Vec::len), Some(3), "{d}");
    // A list's row reads the same children (from the read model).
    let listed = s
        .eventually(&t, "{ operations(first: 50) { nodes { id childIds } } }", |l| {
            l["operations"]["nodes"]
                .as_array()
                .is_some_and(|n| n.iter().any(|o| o["id"] == "p" && o["childIds"].as_array().map(Vec::len) == Some(3)))
        })
        .await;
    let row = listed["operations"]["nodes"].as_array().and_then(|n| n.iter().find(|o| o["id"] == "p")).cloned();
    assert_eq!(row.map(|r| r["childIds"].clone()), Some(d["operation"]["childIds"].clone()), "{listed}");
    s.stop();
}

both!(the_background_cap_holds_whatever_topic_a_child_names as the_background_cap_holds_whatever_topic_a_child_names);

const SPAWN: &str = "mutation($p: String!, $i: StartOperationInput!, $lt: String) { spawnSubagent(parentOperationId: $p, leaseToken: $lt, input: $i) { operation { id } } }";
const COMPLETE: &str = "mutation($id: String!, $lt: String!, $r: String) { completeOperation(id: $id, leaseToken: $lt, result: $r) { position } }";

async fn conversation_run(s: &Server, t: &str, topic: &str, op: &str) -> String {
    s.data(Some(t), "mutation($t: String!) { createConversation(topicId: $t) { position } }", json!({"t": topic}))
        .await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    let i = json!({"operationId": op, "kind": "CONVERSATION", "agentId": "inbox", "topicId": topic});
    s.data(Some(t), start, json!({"i": i})).await;
    s.claim(t, op, "w1").await
}

async fn sub_agents_deeper_than_the_limit_are_refused(db: Db) {
    let s = Server::start_with(db, &["--max-subagent-depth", "2"]).await;
    let t = s.user_token("alice").await;
    let mut lt = conversation_run(&s, &t, "c1", "p").await;
    let mut parent = "p".to_string();
    for id in ["d1", "d2"] {
        let i = json!({"operationId": id, "kind": "SUBAGENT", "agentId": "inbox"});
        s.data(Some(&t), SPAWN, json!({"p": parent, "i": i, "lt": lt})).await;
        lt = s.claim(&t, id, "w1").await;
        parent = id.to_string();
    }
    let i = json!({"operationId": "d3", "kind": "SUBAGENT", "agentId": "inbox"});
    let r = s.gql(Some(&t), SPAWN, json!({"p": "d2", "i": i, "lt": lt})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "a third level under a limit of 2: {r}");
    let d = s.gql(Some(&t), "{ operation(id: \"d3\") { id } }", json!({})).await;
    assert_eq!(error_code(&d).as_deref(), Some("NOT_FOUND"), "nothing written: {d}");
    let d = s.data(Some(&t), "{ operation(id: \"d2\") { childIds } }", json!({})).await;
    assert_eq!(d["operation"]["childIds"], json!([]), "{d}");
    s.stop();
}

const MESSAGES: &str =
    "{ conversation(topicId: \"c1\") { messages(first: 50) { edges { node { messageId role message } } } } }";

async fn a_background_child_that_outlives_its_parent_is_delivered(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("alice").await;
    let lt = conversation_run(&s, &t, "c1", "p").await;
    let i = json!({"operationId": "bg", "kind": "SUBAGENT", "agentId": "inbox", "background": true});
    s.data(Some(&t), SPAWN, json!({"p": "p", "i": i, "lt": lt})).await;
    s.data(Some(&t), COMPLETE, json!({"id": "p", "lt": lt, "r": "parent done"})).await;
    let child = s.claim(&t, "bg", "w2").await;
    s.data(Some(&t), COMPLETE, json!({"id": "bg", "lt": child, "r": "the background finding"})).await;

    let notices = |d: &Value| -> Vec<Value> {
        d["conversation"]["messages"]["edges"]
            .as_array()
            .map(|e| e.iter().map(|n| n["node"].clone()).filter(|n| n["role"] == "taskCallback").collect())
            .unwrap_or_default()
    };
    let d = s.eventually(&t, MESSAGES, |d| !notices(d).is_empty()).await;
    let notice = notices(&d);
    assert_eq!(notice.len(), 1, "{d}");
    let m = &notice[0]["message"];
    assert_eq!(m["content"], "the background finding", "{d}");
    assert_eq!(m["metadata"]["operationId"], "bg", "{d}");
    assert_eq!(m["metadata"]["notice"], "subagent_completed", "{d}");
    assert_eq!(m["metadata"]["parentOperationId"], "p", "{d}");
    // Delivered, so nothing was refused.
    let r = s
        .data(
            Some(&t),
            "{ events(filter: {eventTypes: [\"reactor.command_refused\"]}) { edges { node { payload } } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["events"]["edges"], json!([]), "{r}");
    s.stop();
}

both!(
    sub_agents_deeper_than_the_limit_are_refused as sub_agents_deeper_than_the_limit_are_refused,
    a_background_child_that_outlives_its_parent_is_delivered
        as a_background_child_that_outlives_its_parent_is_delivered
);
