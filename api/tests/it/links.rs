//! The links a brief's buttons and a notification lead to are `http(s)` or relative: any other
//! scheme (`javascript:`, `data:`, …) is refused with VALIDATION and nothing is written, so the
//! console never has such an href to draw.

use serde_json::json;

use crate::support::{Db, Server, error_code};

const BRIEF: &str = "mutation($i: JSON!) { createBrief(input: $i) { position } }";
const NOTIFY: &str = "mutation($u: String) { createNotification(input: {category: \"c\", type: \"t\", title: \"T\", body: \"B\", actionUrl: $u}) { position } }";
const HEAD: &str = "{ headPosition }";

fn brief(id: &str, url: &str) -> serde_json::Value {
    json!({"i": {"briefId": id, "type": "result", "title": "Done", "summary": "see it",
        "actions": [{"key": "open", "label": "Open", "type": "link", "url": url}]}})
}

async fn only_http_and_relative_links_are_written(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"t1\") { position } }", json!({})).await;
    let head = s.data(Some(&alice), HEAD, json!({})).await["headPosition"].clone();
    for url in [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "java\tscript:alert(1)",
        " javascript:x",
        "data:text/html,<b>x</b>",
        "vbscript:x",
    ] {
        let r = s.gql(Some(&alice), BRIEF, brief("b-bad", url)).await;
        assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{url:?}: {r}");
        assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("http(s)")), "{r}");
        let r = s.gql(Some(&alice), NOTIFY, json!({"u": url})).await;
        assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{url:?}: {r}");
    }
    assert_eq!(s.data(Some(&alice), HEAD, json!({})).await["headPosition"], head, "nothing was written");
    let r = s.data(Some(&alice), "{ briefs(first: 10) { edges { node { briefId } } } }", json!({})).await;
    assert_eq!(r["briefs"]["edges"], json!([]), "{r}");

    for (i, url) in ["https://example.com/x", "/tasks/t1", "runs/r1"].iter().enumerate() {
        s.data(Some(&alice), BRIEF, brief(&format!("b{i}"), url)).await;
        s.data(Some(&alice), NOTIFY, json!({"u": url})).await;
    }
    let r = s.data(Some(&alice), "{ briefs(first: 10) { edges { node { briefId actions } } } }", json!({})).await;
    assert_eq!(r["briefs"]["edges"].as_array().map(Vec::len), Some(3), "{r}");
    s.stop();
}

both!(only_http_and_relative_links_are_written as only_http_and_relative_links_are_written);
