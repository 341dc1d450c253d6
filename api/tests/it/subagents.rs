//! Sub-agents keep their limits: a child runs in its parent's conversation whatever topic it
//! is given, so the cap of 3 background sub-agents per conversation holds.

use crate::support;

use serde_json::json;
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
    s.stop();
}

both!(the_background_cap_holds_whatever_topic_a_child_names as the_background_cap_holds_whatever_topic_a_child_names);
