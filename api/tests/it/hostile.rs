//! Requests an attacker would send, with a valid low-privilege token or with none, against a
//! server holding another user's data: each is refused (or bounded) and changes nothing for the
//! other user. RELIABILITY.md, "Hostile requests", has each probe's cost before and after.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::support::{Db, Server, Ws, error_code};

/// A fragment bomb: `levels` fragments on `Query`, each spreading the previous one ten times,
/// the first selecting `__typename` — 10^(levels-1) fields from a few hundred bytes.
fn bomb(levels: usize) -> String {
    let mut q = format!("query {{ ...F{} }} fragment F0 on Query {{ __typename }}", levels - 1);
    for i in 1..levels {
        let spreads: Vec<String> = (0..10).map(|_| format!("...F{}", i - 1)).collect();
        q.push_str(&format!(" fragment F{i} on Query {{ {} }}", spreads.join(" ")));
    }
    q
}

/// The server process's peak resident memory so far, KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc status")
}

/// How long one request took, and its answer.
async fn timed(s: &Server, token: Option<&str>, query: &str) -> (Duration, Value) {
    let t = Instant::now();
    let r = s.gql(token, query, json!({})).await;
    (t.elapsed(), r)
}

async fn a_fragment_bomb_is_refused_at_once_and_costs_no_memory(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"t1\") { position } }", json!({})).await;
    s.data(Some(&alice), "{ headPosition }", json!({})).await;
    let before = peak_kib(s.pid());

    // 7, 8 and 9 levels, anonymous and as bob, all at once, while alice reads.
    let bombs: Vec<String> = [7, 8, 9].map(bomb).to_vec();
    let attacks = bombs.iter().flat_map(|b| [None, Some(bob.as_str())].map(|t| timed(&s, t, b)));
    let (answers, (alice_took, alice_read)) =
        tokio::join!(join_all(attacks), timed(&s, Some(&alice), "{ headPosition }"));
    for (took, r) in &answers {
        assert_eq!(error_code(r).as_deref(), Some("LIMIT"), "{r}");
        assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("fragment spread")), "{r}");
        assert!(r.get("data").is_none_or(Value::is_null), "nothing executed: {r}");
        assert!(*took < Duration::from_secs(1), "refused after {took:?}");
    }
    assert!(alice_read["errors"].is_null(), "{alice_read}");
    assert!(alice_read["data"]["headPosition"].as_i64().is_some_and(|p| p > 0), "{alice_read}");
    assert!(alice_took < Duration::from_secs(1), "alice waited {alice_took:?}");

    // The same over a websocket.
    let mut ws = Ws::connect(&s, &bob, "graphql-transport-ws").await;
    ws.subscribe("1", &bomb(9), json!({})).await;
    let refused = ws.next_json().await.expect("an answer");
    let text = refused.to_string();
    assert!(text.contains("LIMIT") && text.contains("fragment spread"), "{refused}");
    ws.cut().await;

    let grew = peak_kib(s.pid()).saturating_sub(before);
    assert!(grew < 64 * 1024, "the server's peak resident memory grew by {grew} KiB");
    s.stop();
}

async fn only_introspection_is_answered_without_a_token(db: Db) {
    let s = Server::start(db).await;
    let r = s.gql(None, "{ __schema { queryType { name } } }", json!({})).await;
    assert_eq!(r["data"]["__schema"]["queryType"]["name"], "Query", "{r}");
    for q in [
        "{ headPosition }",
        "{ __typename headPosition }",
        "{ ...F } fragment F on Query { headPosition }",
        "{ ... on Query { headPosition } }",
        "mutation { createConversation(topicId: \"t\") { position } }",
        "subscription { events { position } }",
    ] {
        let r = s.gql(None, q, json!({})).await;
        assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{q}: {r}");
        assert!(r.get("data").is_none_or(Value::is_null), "{q}: {r}");
    }
    // A wide document is refused on its size whoever sends it, before the token matters.
    let wide: String = (0..2_001).map(|i| format!("a{i}: __typename ")).collect();
    let r = s.gql(None, &format!("{{ {wide} }}"), json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    s.stop();
}

both!(
    a_fragment_bomb_is_refused_at_once_and_costs_no_memory as a_fragment_bomb_is_refused_at_once_and_costs_no_memory,
    only_introspection_is_answered_without_a_token as only_introspection_is_answered_without_a_token
);
