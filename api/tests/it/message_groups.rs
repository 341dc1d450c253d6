//! Message groups through the real server: a compression group with a pinned message and a
//! parallel group make the tree upstream's `parse` makes of the same topic (byte for byte,
//! `conversation-flow/tests/data/differential/outputs/message-groups.json`); bad groups are
//! refused and write nothing; removing a group on another instance changes this instance's
//! cached tree; the read models equal a rebuild.

use std::time::Duration;

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, error_code, read_log};

const APPEND: &str =
    "mutation($m: JSON!) { appendMessage(topicId: \"c1\", message: $m) { conversation { messagesVersion } } }";
const COMPRESS: &str = "mutation($g: String!, $ids: [String!]!, $pins: [String!], $content: String!, $meta: JSON) {
    compressMessages(topicId: \"c1\", groupId: $g, messageIds: $ids, content: $content, pinnedMessageIds: $pins, metadata: $meta) {
        conversation { messagesVersion } } }";
const PARALLEL: &str = "mutation($g: String!, $ids: [String!]!, $title: String, $description: String) {
    createParallelGroup(topicId: \"c1\", groupId: $g, messageIds: $ids, title: $title, description: $description) {
        conversation { messagesVersion } } }";
const REMOVE: &str =
    "mutation($g: String!) { removeMessageGroup(topicId: \"c1\", groupId: $g) { conversation { messagesVersion } } }";
const TREE: &str = "{ conversation(topicId: \"c1\") { tree { contextTree flatList messageMap } } }";
const GROUPS: &str = "{ conversation(topicId: \"c1\") { messagesVersion messageGroups { groupId kind messageIds pinnedMessageIds parentMessageId content title description metadata createdAt } } }";

/// Upstream's output for the topic built below (its input is beside it, in `inputs/`).
const UPSTREAM: &str = include_str!("../../../conversation-flow/tests/data/differential/outputs/message-groups.json");

/// The fixture's times: message or group number `k` at `T0 + k` seconds.
const T0: i64 = 1_767_225_600_000;

fn messages_before_compression() -> Vec<Value> {
    vec![
        json!({"messageId": "m1", "role": "user", "content": "Plan a three-day trip to Kyoto."}),
        json!({"messageId": "m2", "role": "assistant", "content": "Let me look up the season.", "parentId": "m1",
               "model": "gpt-4o", "provider": "openai",
               "tools": [{"id": "call-1", "identifier": "web-search", "apiName": "search",
                          "arguments": "{\"q\":\"Kyoto in May\"}", "type": "default"}]}),
        json!({"messageId": "t1", "role": "tool", "content": "Mild, 22°C, the Aoi festival on the 15th.",
               "parentId": "m2", "toolCallId": "call-1"}),
        json!({"messageId": "m3", "role": "assistant", "content": "May is mild; the Aoi festival is on the 15th.",
               "parentId": "t1", "model": "gpt-4o", "provider": "openai"}),
        json!({"messageId": "m4", "role": "user", "content": "Book temples on day one.", "parentId": "m3"}),
        json!({"messageId": "m5", "role": "assistant", "content": "Day one: Kinkaku-ji, then Ryoan-ji.",
               "parentId": "m4", "model": "claude-sonnet", "provider": "anthropic"}),
    ]
}

fn messages_after_compression() -> Vec<Value> {
    vec![
        json!({"messageId": "u6", "role": "user", "content": "Day two?", "parentId": "m5"}),
        json!({"messageId": "a1", "role": "assistant", "content": "Day two: Arashiyama.", "parentId": "u6",
               "model": "gpt-4o", "provider": "openai"}),
        json!({"messageId": "a2", "role": "assistant", "content": "Day two: Fushimi Inari at dawn.", "parentId": "u6",
               "model": "claude-sonnet", "provider": "anthropic", "metadata": {"activeColumn": true}}),
    ]
}

/// Each message's and group's place in the fixture's clock (`T0 + k` seconds).
const FIXTURE_ORDER: [&str; 11] = ["m1", "m2", "t1", "m3", "m4", "m5", "g1", "u6", "a1", "a2", "u7"];

/// The server's times (epoch ms) of the topic's messages and groups → the fixture's.
async fn fixture_clock(s: &Server, token: &str) -> std::collections::HashMap<i64, i64> {
    let q = "{ conversation(topicId: \"c1\") { messages(first: 100) { edges { node { messageId createdAt } } }
               messageGroups { groupId createdAt } } }";
    let d = s.data(Some(token), q, json!({})).await;
    let c = &d["conversation"];
    let messages = c["messages"]["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (&e["node"]["messageId"], &e["node"]["createdAt"]));
    let groups = c["messageGroups"].as_array().into_iter().flatten().map(|g| (&g["groupId"], &g["createdAt"]));
    messages
        .chain(groups)
        // A parallel group's time is not in the tree.
        .filter_map(|(id, at)| {
            let k = FIXTURE_ORDER.iter().position(|o| id == o)?;
            let at = chrono::DateTime::parse_from_rfc3339(at.as_str().unwrap_or_default()).expect("a time");
            Some((at.timestamp_millis(), T0 + (k as i64 + 1) * 1000))
        })
        .collect()
}

/// Each `"createdAt"`/`"updatedAt"` number of `body` read on the fixture's clock.
fn on_fixture_clock(body: &str, clock: &std::collections::HashMap<i64, i64>) -> String {
    let mut spans = Vec::new();
    for key in ["\"createdAt\":", "\"updatedAt\":"] {
        for (at, _) in body.match_indices(key) {
            let start = at + key.len();
            let end = start + body[start..].bytes().take_while(u8::is_ascii_digit).count();
            let t: i64 = body[start..end].parse().unwrap_or_else(|_| panic!("a time at {start}"));
            spans.push((start, end, *clock.get(&t).unwrap_or_else(|| panic!("{t} is no message's or group's time"))));
        }
    }
    spans.sort();
    let mut out = String::with_capacity(body.len());
    let mut from = 0;
    for (start, end, t) in spans {
        out.push_str(&body[from..start]);
        out.push_str(&t.to_string());
        from = end;
    }
    out.push_str(&body[from..]);
    out
}

async fn groups_render_as_upstream_renders_them(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let append = |m: Value| {
        let (s, alice) = (&s, alice.clone());
        async move {
            // Distinct milliseconds, so each time names one message.
            tokio::time::sleep(Duration::from_millis(3)).await;
            s.data(Some(&alice), APPEND, json!({"m": m})).await
        }
    };
    for m in messages_before_compression() {
        append(m).await;
    }
    tokio::time::sleep(Duration::from_millis(3)).await;
    let compress = json!({"g": "g1", "ids": ["m1", "m2", "t1", "m3", "m4", "m5"], "pins": ["m3"],
                          "content": "Summary: a May trip to Kyoto; temples on day one.", "meta": {"expanded": false}});
    s.data(Some(&alice), COMPRESS, compress.clone()).await;
    for m in messages_after_compression() {
        append(m).await;
    }
    s.data(Some(&alice), PARALLEL, json!({"g": "p1", "ids": ["a1", "a2"], "title": "Day two"})).await;
    append(json!({"messageId": "u7", "role": "user", "content": "Go with Fushimi Inari.", "parentId": "a2"})).await;

    // Upstream's bytes, once the server's clock is read as the fixture's.
    let clock = fixture_clock(&s, &alice).await;
    let body = s.text(&alice, TREE).await;
    let want = format!("{{\"data\":{{\"conversation\":{{\"tree\":{UPSTREAM}}}}}}}");
    assert_eq!(on_fixture_clock(&body, &clock), want, "the grouped tree differs from upstream's");

    let d = s.data(Some(&alice), GROUPS, json!({})).await;
    let groups = &d["conversation"]["messageGroups"];
    assert_eq!(groups[0]["kind"], "compression", "{d}");
    assert_eq!(groups[0]["pinnedMessageIds"], json!(["m3"]));
    assert_eq!(groups[0]["metadata"], json!({"expanded": false}));
    assert_eq!(groups[1]["kind"], "parallel");
    assert_eq!(groups[1]["parentMessageId"], "u6");
    assert_eq!(groups[1]["title"], "Day two");
    let version = d["conversation"]["messagesVersion"].clone();

    // Refused, each with its code, writing nothing.
    let refusals = [
        (COMPRESS, json!({"g": "g2", "ids": ["u6", "nope"], "content": "s"}), "NOT_FOUND"),
        (COMPRESS, json!({"g": "g2", "ids": ["u6", "a1"], "content": "s"}), "CONFLICT"),
        (COMPRESS, json!({"g": "g2", "ids": ["m1"], "content": "s"}), "CONFLICT"),
        (COMPRESS, json!({"g": "u7", "ids": ["u6"], "content": "s"}), "CONFLICT"),
        (COMPRESS, json!({"g": "g1", "ids": ["u7"], "content": "s"}), "CONFLICT"),
        (COMPRESS, json!({"g": "g2", "ids": ["u6"], "pins": ["u7"], "content": "s"}), "VALIDATION"),
        (COMPRESS, json!({"g": "g2", "ids": ["u6", "u6"], "content": "s"}), "VALIDATION"),
        (COMPRESS, json!({"g": "g2", "ids": [], "content": "s"}), "VALIDATION"),
        (COMPRESS, json!({"g": "g2", "ids": ["u6"], "content": "s", "meta": [1]}), "VALIDATION"),
        (PARALLEL, json!({"g": "p2", "ids": ["u6", "u7"]}), "VALIDATION"),
        (PARALLEL, json!({"g": "p2", "ids": ["u7"]}), "VALIDATION"),
        (REMOVE, json!({"g": "nope"}), "NOT_FOUND"),
    ];
    for (query, vars, code) in &refusals {
        let r = s.gql(Some(&alice), query, vars.clone()).await;
        assert_eq!(error_code(&r).as_deref(), Some(*code), "{vars}: {r}");
    }
    // Someone else's topic does not exist for them.
    for (query, vars) in [(COMPRESS, json!({"g": "g9", "ids": ["u6"], "content": "s"})), (REMOVE, json!({"g": "g1"}))] {
        let r = s.gql(Some(&bob), query, vars).await;
        assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    }
    assert_eq!(error_code(&s.gql(Some(&bob), GROUPS, json!({})).await).as_deref(), Some("NOT_FOUND"));
    assert_eq!(s.data(Some(&alice), GROUPS, json!({})).await["conversation"]["messagesVersion"], version);
    let grouped = |events: &[agentlog_domain::envelope::RecordedEvent]| {
        events.iter().filter(|e| e.event_type.starts_with("conversation.message_group_")).count()
    };
    assert_eq!(grouped(&read_log(&s.db).await), 2, "a refused group wrote an event");
    assert_eq!(on_fixture_clock(&s.text(&alice, TREE).await, &clock), want, "a refusal changed the tree");

    // Another instance removes the compression: this instance's cached tree follows.
    let other = s.sibling().await;
    other.data(Some(&alice), REMOVE, json!({"g": "g1"})).await;
    let flat = "{ conversation(topicId: \"c1\") { flatList } }";
    let d = s.eventually(&alice, flat, |d| d["conversation"]["flatList"][0]["id"] == "m1").await;
    let rows = d["conversation"]["flatList"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows[0]["id"], "m1", "{d}");
    assert!(rows.iter().all(|r| r["role"] != "compressedGroup"), "{d}");
    assert!(rows.iter().any(|r| r["type"] == "compare" || r["role"] == "compare"), "the parallel group stays: {d}");
    // The freed members may be grouped again, from either instance.
    s.data(Some(&alice), COMPRESS, json!({"g": "g2", "ids": ["m1", "m2"], "content": "Asked about Kyoto."})).await;
    let g2 = |d: &Value| {
        d["conversation"]["flatList"].as_array().and_then(|rows| rows.iter().find(|r| r["id"] == "g2")).cloned()
    };
    let d = other.eventually(&alice, flat, |d| g2(d).is_some()).await;
    let row = g2(&d).unwrap_or_default();
    assert_eq!(row["role"], "compressedGroup", "{d}");
    assert_eq!(row["lastMessageId"], "m2", "{d}");
    assert_eq!(row["compressedMessages"][0]["id"], "m1", "{d}");
    let log = read_log(&s.db).await;
    assert_eq!(grouped(&log), 4);
    support::check_log(&log);
    // The groups table as folded live equals a rebuild from the log.
    other.stop();
    support::verify_read_models(&s.stop()).await;
}

both!(groups_render_as_upstream_renders_them as groups_render_as_upstream_renders_them);
