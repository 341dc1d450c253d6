//! Graceful shutdown under load. SIGTERM while 16 clients write (12 appending messages, 4
//! running operations step by step), a subscriber follows the log, and one request is held in
//! flight (its headers sent, its body not finished). Then:
//! - `/readyz` says it is shutting down, a new request is refused with UNAVAILABLE and writes
//!   nothing, and every client's next mutation is refused the same way;
//! - the subscriber gets a close frame with 1001 (going away);
//! - the held request, finished after the signal, is answered with its data;
//! - the process exits 0 well inside `--shutdown-timeout-secs`;
//! - every acknowledged mutation is in the log once, every refused one is not there;
//! - the next start resumes from the committed checkpoints: it serves writes, and the read
//!   models (with additive costs, which would count twice were a batch applied twice) equal a
//!   rebuild.
//!
//! A request still in flight when the bound passes makes the process exit 1 at the bound.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use agentlog_projections::ReadDb;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::support::{Db, Server, Ws, check_log, error_code, read_log, verify_read_models};

const WRITERS: usize = 12;
const RUNNERS: usize = 4;
const STEP_COST: i64 = 10;

const APPEND: &str = "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }";
const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const CLAIM: &str =
    "mutation($id: String!) { claimOperation(id: $id, workerId: \"w\", leaseSecs: 600) { position lease { token } } }";
const STEP: &str = "mutation($id: String!, $l: String!, $u: UsageInput) { reportStep(id: $id, leaseToken: $l, phase: ACTING, usage: $u) { position } }";
const COMPLETE: &str =
    "mutation($id: String!, $l: String!) { completeOperation(id: $id, leaseToken: $l, result: \"ok\") { position } }";

/// What one mutation got.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Answered with data: the position of its last event.
    Acked(Value),
    /// Answered with an error code; nothing may have been written.
    Refused(String),
    /// No connection (the server stopped listening): nothing was sent.
    Unsent,
    /// Sent, and no answer came: the outcome is unknown to the client.
    Lost(String),
}

async fn call(client: &reqwest::Client, base: &str, token: &str, query: &str, variables: Value) -> Outcome {
    let sent = client
        .post(format!("{base}/graphql"))
        .bearer_auth(token)
        .json(&json!({"query": query, "variables": variables}))
        .send()
        .await;
    let response = match sent {
        Ok(r) => r,
        Err(e) if e.is_connect() => return Outcome::Unsent,
        Err(e) => return Outcome::Lost(e.to_string()),
    };
    let body: Value = match response.json().await {
        Ok(b) => b,
        Err(e) => return Outcome::Lost(e.to_string()),
    };
    match error_code(&body) {
        Some(code) => Outcome::Refused(code),
        None if body["errors"].is_array() => Outcome::Refused(format!("no code: {body}")),
        None => Outcome::Acked(body["data"].clone()),
    }
}

/// A writer: messages `m<i>-<k>` into its own conversation until one is not acknowledged.
/// Answers each message id with its outcome.
async fn writer(base: String, token: String, i: usize) -> Vec<(String, Outcome)> {
    let client = reqwest::Client::new();
    let mut seen = Vec::new();
    for k in 0.. {
        let id = format!("m{i}-{k}");
        let m = json!({"messageId": id, "role": if k % 2 == 0 { "user" } else { "assistant" }, "content": id});
        let outcome = call(&client, &base, &token, APPEND, json!({"t": format!("t{i}"), "m": m})).await;
        let last = !matches!(outcome, Outcome::Acked(_));
        seen.push((id, outcome));
        if last {
            break;
        }
    }
    seen
}

/// A runner: operations `op<i>-<k>`, each started, claimed, three steps of cost 10 and
/// completed, until a mutation is not acknowledged. Answers (mutation, outcome) in order.
async fn runner(base: String, token: String, i: usize) -> Vec<(String, Outcome)> {
    let client = reqwest::Client::new();
    let mut seen = Vec::new();
    'runs: for k in 0.. {
        let id = format!("op{i}-{k}");
        let input = json!({"operationId": id, "kind": "TASK", "agentId": "a1", "model": "m1", "provider": "p1"});
        let mut calls = vec![("start".to_string(), START, json!({"i": input}))];
        calls.push(("claim".into(), CLAIM, json!({"id": id})));
        let mut lease = String::new();
        for (n, (name, query, mut vars)) in (0..).zip(
            calls
                .into_iter()
                .chain((0..3).map(|s| {
                    let usage = json!({"inputTokens": 1, "outputTokens": 1, "costMicros": STEP_COST});
                    (format!("step{s}"), STEP, json!({"id": id, "u": usage}))
                }))
                .chain([("complete".to_string(), COMPLETE, json!({"id": id}))]),
        ) {
            if n >= 2 {
                vars["l"] = json!(lease);
            }
            let outcome = call(&client, &base, &token, query, vars).await;
            if let Outcome::Acked(d) = &outcome
                && let Some(t) = d["claimOperation"]["lease"]["token"].as_str()
            {
                lease = t.to_string();
            }
            let last = !matches!(outcome, Outcome::Acked(_));
            seen.push((format!("{id} {name}"), outcome));
            if last {
                break 'runs;
            }
        }
    }
    seen
}

/// Open a connection and send a POST of `appendMessage(held)` but its last byte; the server
/// has the request in flight until [`finish_held`].
async fn hold_request(base: &str, token: &str) -> (TcpStream, u8) {
    let body = json!({"query": APPEND, "variables": {"t": "held", "m": {"messageId": "held", "role": "user", "content": "held"}}})
        .to_string()
        .into_bytes();
    let addr = base.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /graphql HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.expect("send the head");
    let (rest, last) = body.split_at(body.len() - 1);
    tcp.write_all(rest).await.expect("send the body but its last byte");
    tcp.flush().await.expect("flush");
    (tcp, last[0])
}

/// Send the held request's last byte; its answer (status line and body).
async fn finish_held(mut tcp: TcpStream, last: u8) -> String {
    tcp.write_all(&[last]).await.expect("send the last byte");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), tcp.read_to_end(&mut answer))
        .await
        .expect("the held request is answered")
        .expect("read the answer");
    String::from_utf8_lossy(&answer).into_owned()
}

async fn sigterm_under_load(db: Db) {
    let server = Server::start_with(db, &["--shutdown-timeout-secs", "30"]).await;
    let token = server.admin_token.clone();
    server
        .data(
            Some(&token),
            "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
            json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "a1", "model": "m1", "provider": "p1"}}}),
        )
        .await;
    for i in (0..WRITERS).map(|i| format!("t{i}")).chain(["held".to_string()]) {
        server
            .data(
                Some(&token),
                "mutation($t: String!) { createConversation(topicId: $t, title: \"chat\") { position } }",
                json!({"t": i}),
            )
            .await;
    }
    reactors_have_reacted(&server, &token).await;
    let mut ws = Ws::connect(&server, &token, "graphql-transport-ws").await;
    ws.subscribe("e", "subscription { events(fromPosition: 0) { position } }", json!({})).await;
    assert!(ws.next_data().await["data"]["events"]["position"].is_number());
    let (held, last_byte) = hold_request(&server.base, &token).await;

    let mut clients = tokio::task::JoinSet::new();
    for i in 0..WRITERS {
        clients.spawn(writer(server.base.clone(), token.clone(), i));
    }
    for i in WRITERS..WRITERS + RUNNERS {
        clients.spawn(runner(server.base.clone(), token.clone(), i));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let signalled = Instant::now();
    server.terminate();

    // Draining: not ready, and a new request is refused with UNAVAILABLE (nothing written).
    let probe = reqwest::Client::new();
    let mut ready = String::new();
    for _ in 0..1000 {
        let r = probe.get(format!("{}/readyz", server.base)).send().await.expect("readyz while draining");
        ready = r.text().await.unwrap_or_default();
        if ready.contains("shutting down") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(ready.trim(), "not ready: shutting down");
    let late = json!({"messageId": "late", "role": "user", "content": "late"});
    let refused = probe
        .post(format!("{}/graphql", server.base))
        .bearer_auth(&token)
        .json(&json!({"query": APPEND, "variables": {"t": "t1", "m": late}}))
        .send()
        .await
        .expect("a request while draining is answered");
    assert_eq!(refused.status().as_u16(), 503);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(error_code(&body).as_deref(), Some("UNAVAILABLE"), "{body}");

    assert_eq!(ws.close_code().await, Some(1001), "the subscriber gets a close frame with 1001");

    // Each client's last mutation is refused with UNAVAILABLE: the held request keeps the
    // server draining, so no connection is cut.
    let mut outcomes: Vec<(String, Outcome)> = Vec::new();
    while let Some(done) = clients.join_next().await {
        let seen = done.expect("a client");
        let (what, last) = seen.last().cloned().expect("each client sent something");
        assert_eq!(last, Outcome::Refused("UNAVAILABLE".into()), "{what}: {last:?}");
        outcomes.extend(seen);
    }
    let acked = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Acked(_))).count();
    let refusals = outcomes.len() - acked;
    assert!(acked >= WRITERS + RUNNERS, "the load did something before the signal: {acked} acknowledged");
    assert_eq!(refusals, WRITERS + RUNNERS, "only each client's last mutation was not acknowledged");

    let answer = finish_held(held, last_byte).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "the in-flight request is answered: {answer}");
    assert!(answer.contains("\"appendMessage\":{\"position\":"), "{answer}");

    let mut server = server;
    let status = tokio::task::spawn_blocking(move || {
        let s = server.exit_status(Duration::from_secs(30));
        (server, s)
    })
    .await
    .expect("wait for the exit");
    let (server, status) = status;
    let status = status.expect("the server exits within its shutdown timeout");
    let took = signalled.elapsed();
    assert!(status.success(), "exit status {status:?}");
    assert!(took < Duration::from_secs(30), "shut down in {took:?}");
    eprintln!(
        "shutdown: {acked} acknowledged, {refusals} refused (UNAVAILABLE), held request answered, exit 0 {took:?} after SIGTERM"
    );

    // Every acknowledged message once, every refused one absent; the held one once.
    let events = read_log(&server.db).await;
    check_log(&events);
    let mut messages: HashMap<String, usize> = HashMap::new();
    for e in events.iter().filter(|e| e.event_type == "conversation.message_appended") {
        *messages.entry(e.payload["messageId"].as_str().unwrap_or_default().to_string()).or_default() += 1;
    }
    for (what, outcome) in &outcomes {
        if what.starts_with('m') {
            let n = messages.get(what).copied().unwrap_or(0);
            let want = usize::from(matches!(outcome, Outcome::Acked(_)));
            assert_eq!(n, want, "{what} ({outcome:?}) is in the log {n} times");
        }
    }
    assert_eq!(messages.get("held"), Some(&1), "the held request's message is in the log once");
    assert_eq!(messages.get("late"), None, "the refused request wrote nothing");
    let checkpoints = checkpoints(&server.db).await;
    assert!(checkpoints.iter().any(|(n, p)| n.starts_with("reactor") && *p > 0), "{checkpoints:?}");

    // The next start resumes from those checkpoints, serves writes, and nothing is applied twice.
    let server = server.start_again().await;
    server
        .data(
            Some(&token),
            APPEND,
            json!({"t": "t1", "m": {"messageId": "after", "role": "user", "content": "after the restart"}}),
        )
        .await;
    let db = server.stop();
    for (name, before) in &checkpoints {
        let now = checkpoints_of(&db, name).await;
        assert!(now >= *before, "{name} went back from {before} to {now} across the restart");
    }
    check_log(&read_log(&db).await);
    verify_read_models(&db).await;
}

/// Every projection's and reactor's committed checkpoint.
async fn checkpoints(db: &Db) -> Vec<(String, i64)> {
    let store = agentlog_eventlog::open_store(&db.url(), agentlog_eventlog::StoreOptions::default())
        .await
        .expect("open the log");
    let read = ReadDb::from(store.database());
    let mut out = Vec::new();
    for table in ["projection_checkpoints", "reactor_checkpoints"] {
        let rows = read.fetch(&format!("SELECT name, position FROM {table}"), &[]).await.expect("checkpoints");
        out.extend(rows.iter().map(|r| (format!("{table}/{}", r.str(0).unwrap_or_default()), r.i64(1).unwrap_or(0))));
    }
    store.close().await;
    out
}

/// Run one operation to its end and wait (at most 30 s) until a reactor has committed a
/// checkpoint past it, so the shutdown has reactor checkpoints to resume from.
async fn reactors_have_reacted(server: &Server, token: &str) {
    let input = json!({"operationId": "op-first", "kind": "TASK", "agentId": "a1", "model": "m1", "provider": "p1"});
    server.data(Some(token), START, json!({"i": input})).await;
    let d = server.data(Some(token), CLAIM, json!({"id": "op-first"})).await;
    let lease = d["claimOperation"]["lease"]["token"].as_str().expect("a lease token").to_string();
    server.data(Some(token), COMPLETE, json!({"id": "op-first", "l": lease})).await;
    for _ in 0..300 {
        if checkpoints(&server.db).await.iter().any(|(n, p)| n.starts_with("reactor") && *p > 0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no reactor committed a checkpoint: {:?}", checkpoints(&server.db).await);
}

async fn checkpoints_of(db: &Db, name: &str) -> i64 {
    checkpoints(db).await.into_iter().find(|(n, _)| n == name).map_or(0, |(_, p)| p)
}

/// A request still in flight when `--shutdown-timeout-secs` passes: the process exits 1 at the
/// bound, the request wrote nothing, and the next start serves with read models equal to a
/// rebuild.
async fn shutdown_is_bounded(db: Db) {
    let server = Server::start_with(db, &["--shutdown-timeout-secs", "2"]).await;
    let token = server.admin_token.clone();
    server
        .data(
            Some(&token),
            "mutation { createConversation(topicId: \"held\", title: \"chat\") { position } }",
            json!({}),
        )
        .await;
    let (held, _) = hold_request(&server.base, &token).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let signalled = Instant::now();
    server.terminate();
    let mut server = server;
    let (server, status) = tokio::task::spawn_blocking(move || {
        let s = server.exit_status(Duration::from_secs(20));
        (server, s)
    })
    .await
    .expect("wait for the exit");
    let took = signalled.elapsed();
    let status = status.expect("the server exits soon after its shutdown timeout");
    assert_eq!(status.code(), Some(1), "a shutdown past its bound is a failure: {status:?}");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(10), "exited {took:?} after SIGTERM");
    drop(held);
    let events = read_log(&server.db).await;
    assert!(!events.iter().any(|e| e.payload["messageId"] == json!("held")), "the unfinished request wrote nothing");
    let server = server.start_again().await;
    server
        .data(Some(&token), APPEND, json!({"t": "held", "m": {"messageId": "after", "role": "user", "content": "x"}}))
        .await;
    verify_read_models(&server.stop()).await;
}

both!(sigterm_under_load as sigterm_under_load, shutdown_is_bounded as shutdown_is_bounded);
