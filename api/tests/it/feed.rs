//! The `events` subscriptions the server serves beside the GraphQL engine (api/src/feed) answer
//! exactly what the engine answers: byte for byte, on both websocket protocols, with the
//! engine's `complete` and its replacement of a repeated id.

use crate::support;

use std::collections::HashMap;

use serde_json::{Value, json};
use support::{Db, Server, Ws};

/// Every field of `Event`, some aliased; the feed serves it.
const FED: &str = "subscription($p: Int) { events(fromPosition: $p) { position eventId at: recordedAt streamId \
                   streamVersion eventType schemaVersion payload metadata rootSourceId parentNodeId userId __typename } }";
/// The same answer, but a directive (which changes nothing) leaves it to the engine.
const ENGINE: &str = "subscription($p: Int) { events(fromPosition: $p) { position eventId at: recordedAt streamId \
                      streamVersion eventType schemaVersion payload metadata rootSourceId parentNodeId userId __typename @include(if: true) } }";

/// Write a few events with varied payloads (nesting, unicode, escapes, numbers).
async fn write_some(s: &Server, token: &str) {
    let m = |q: &'static str, v: Value| async move { s.data(Some(token), q, v).await };
    m(
        "mutation { createConversation(topicId: \"c1\", title: \"naïve \\\"quoted\\\" \\\\ ✓\") { position } }",
        json!({}),
    )
    .await;
    let append = "mutation($m: JSON!) { appendMessage(topicId: \"c1\", message: $m) { position } }";
    m(append, json!({"m": {"messageId": "q", "role": "user", "content": "hi\n\ttab \u{1F600} <b>&</b>"}})).await;
    m(
        append,
        json!({"m": {"messageId": "a", "role": "assistant", "content": "ok", "parentId": "q",
                     "metadata": {"usage": {"totalTokens": 12, "cost": 0.125}, "list": [1, -2.5, null, true]}}}),
    )
    .await;
    let input =
        json!({"input": {"operationId": "op-1", "kind": "TASK", "agentId": "inbox", "model": "m1", "provider": "p1"}});
    m("mutation($input: StartOperationInput!) { startOperation(input: $input) { position } }", input).await;
}

/// Read until every id in `want` has `n` data messages; the raw texts per id.
async fn collect(ws: &mut Ws, want: &[&str], n: usize) -> HashMap<String, Vec<String>> {
    let mut got: HashMap<String, Vec<String>> = want.iter().map(|id| (id.to_string(), Vec::new())).collect();
    while got.values().any(|v| v.len() < n) {
        let text = ws.next_text().await.expect("a message");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        let id = v["id"].as_str().expect("an id").to_string();
        assert!(v["type"] == "next" || v["type"] == "data", "{text}");
        got.get_mut(&id).unwrap_or_else(|| panic!("unexpected id: {text}")).push(text);
    }
    got
}

async fn answers_as_the_engine_does(db: Db) {
    let s = Server::start(db).await;
    let token = s.user_token("ann").await;
    write_some(&s, &token).await;
    for protocol in ["graphql-transport-ws", "graphql-ws"] {
        let head = s.data(Some(&token), "{ headPosition }", json!({})).await["headPosition"].as_i64().unwrap();
        let visible = s
            .data(Some(&token), "{ events(first: 500) { edges { node { position } } } }", json!({}))
            .await["events"]["edges"]
            .as_array()
            .unwrap()
            .len();
        assert!(visible >= 4, "ann's events: {visible}");
        let mut ws = Ws::connect(&s, &token, protocol).await;
        ws.subscribe("fed", FED, json!({"p": 0})).await;
        ws.subscribe("engine", ENGINE, json!({"p": 0})).await;
        // History (everything ann may read), then live: one more event after subscribing.
        let create = "mutation($t: String!) { createConversation(topicId: $t) { position } }";
        let live = s
            .data(Some(&token), create, json!({"t": format!("live-{protocol}")}))
            .await["createConversation"]["position"]
            .as_i64()
            .unwrap();
        assert!(live > head);
        let got = collect(&mut ws, &["fed", "engine"], visible + 1).await;
        let engine: Vec<String> =
            got["engine"].iter().map(|t| t.replacen(r#""id":"engine""#, r#""id":"fed""#, 1)).collect();
        assert_eq!(got["fed"], engine, "{protocol}: the fed messages are the engine's, byte for byte");
        let last: Value = serde_json::from_str(got["fed"].last().unwrap()).unwrap();
        assert_eq!(
            last["payload"]["data"]["events"]["position"].as_i64(),
            Some(live),
            "{protocol}: live after history"
        );

        // A client's `complete` is answered with `complete`, and nothing more comes for it.
        ws.send_json(json!({"type": if protocol == "graphql-ws" { "stop" } else { "complete" }, "id": "fed"})).await;
        ws.send_json(json!({"type": if protocol == "graphql-ws" { "stop" } else { "complete" }, "id": "engine"})).await;
        let mut completed = Vec::new();
        while completed.len() < 2 {
            let v = ws.next_json().await.expect("complete");
            assert_eq!(v["type"], "complete", "{v}");
            completed.push(v["id"].as_str().unwrap().to_string());
        }
        completed.sort();
        assert_eq!(completed, ["engine", "fed"], "{protocol}");

        // A repeated id replaces the subscription that had it: here a fed one by the engine's.
        ws.subscribe("x", "subscription($p: Int) { events(fromPosition: $p) { position } }", json!({"p": live - 1}))
            .await;
        let first = ws.next_data().await;
        assert_eq!(first["data"]["events"]["position"].as_i64(), Some(live), "{first}");
        ws.subscribe(
            "x",
            "subscription($p: Int) { events(fromPosition: $p) { eventType @include(if: true) } }",
            json!({"p": live - 1}),
        )
        .await;
        let mut types = Vec::new();
        while types.len() < 2 {
            let p = ws.next_data().await;
            let e = &p["data"]["events"];
            if types.is_empty() && e.get("position").is_some() {
                // Sent by the fed `x` before the server read the new subscribe: allowed.
                continue;
            }
            assert!(e.get("position").is_none(), "only the engine's subscription answers for x now: {p}");
            types.push(e["eventType"].as_str().unwrap().to_string());
            if types.len() == 1 {
                // The engine's `x` is running: an event written now reaches only it.
                s.data(Some(&token), create, json!({"t": format!("after-{protocol}")})).await;
            }
        }
        assert_eq!(types, ["conversation.created", "conversation.created"], "{protocol}");
        // A negative position is refused, fed or not, as the change feeds refuse it.
        for query in [
            "subscription($p: Int) { events(fromPosition: $p) { position } }",
            "subscription($p: Int) { events(fromPosition: $p) { position @include(if: true) } }",
        ] {
            ws.subscribe("neg", query, json!({"p": -5})).await;
            let mut answer = Vec::new();
            loop {
                let m = ws.next_json().await.expect("an answer");
                if m["id"] == "neg" {
                    answer.push(m.clone());
                    if m["type"] == "complete" {
                        break;
                    }
                }
            }
            let answer = json!(answer);
            assert!(answer.to_string().contains("VALIDATION"), "{protocol}: {answer}");
        }
        ws.cut().await;
    }
    s.stop();
}

both!(answers_as_the_engine_does as feed_answers_as_the_engine_does);
