//! A worker that drives a scripted agent end to end against a running `agentlog serve`.
//!
//! ```text
//! cargo run --release -p agentlog-api -- serve &            # prints where the admin token is
//! AGENTLOG_TOKEN=$(cat agentlog-admin-token) \
//!   cargo run -p agentlog-api --example worker -- --url http://127.0.0.1:8080 --enqueue 3
//! ```
//!
//! It subscribes to `workAvailable` for its agent over a websocket (graphql-transport-ws), and
//! for each operation announced: claims it with a lease, moves through the phases, streams its
//! answer as live deltas (`publishMessageDelta`, never stored), reports a step with a tool call
//! and measured usage, appends the finished message (the one stored event), and completes.
//! `--enqueue N` first creates N conversations with a user message and an operation each, so a
//! fresh server has work; the worker stops after `--runs` operations (default: the enqueued
//! count).

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};

/// The agent this worker runs as.
pub const AGENT: &str = "scripted-agent";

/// The scripted answer, streamed in pieces.
const ANSWER: [&str; 4] = ["Looking ", "that up", "… ", "done: 42."];

/// A GraphQL client for one server and token.
pub struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Client {
    /// A client for `url` (`http://host:port`) with a bearer `token`.
    pub fn new(url: &str, token: &str) -> Self {
        Self { http: reqwest::Client::new(), url: url.trim_end_matches('/').to_string(), token: token.to_string() }
    }

    /// Run a query or mutation; errors come back as `Err` with the server's message and code.
    pub async fn gql(&self, query: &str, variables: Value) -> Result<Value, String> {
        let response: Value = self
            .http
            .post(format!("{}/graphql", self.url))
            .bearer_auth(&self.token)
            .json(&json!({"query": query, "variables": variables}))
            .send()
            .await
            .map_err(|e| format!("request failed: {e}"))?
            .json()
            .await
            .map_err(|e| format!("bad response: {e}"))?;
        match response.get("errors") {
            Some(errors) => Err(format!("{errors}")),
            None => Ok(response["data"].clone()),
        }
    }
}

/// Create `n` conversations, each with a user question and an operation for [`AGENT`]; answers
/// the operation ids.
pub async fn enqueue(client: &Client, n: usize, tag: &str) -> Result<Vec<String>, String> {
    // Runs name a registered agent; an earlier enqueue may have registered it already.
    let agent = json!({"agentId": AGENT, "config": {"slug": AGENT, "title": "Scripted agent", "model": "scripted-1", "provider": "local"}});
    match client.gql("mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": agent})).await {
        Ok(_) => {}
        Err(e) if e.contains("CONFLICT") => {}
        Err(e) => return Err(e),
    }
    let mut ids = Vec::new();
    for i in 0..n {
        let topic = format!("{tag}-topic-{i}");
        let op = format!("{tag}-op-{i}");
        client
            .gql(
                "mutation($t: String!, $a: String!) { createConversation(topicId: $t, agentId: $a) { position } }",
                json!({"t": topic, "a": AGENT}),
            )
            .await?;
        let question = json!({"messageId": format!("{topic}-q"), "role": "user", "content": "What is the answer?"});
        client
            .gql(
                "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }",
                json!({"t": topic, "m": question}),
            )
            .await?;
        let input = json!({"operationId": op, "kind": "CONVERSATION", "agentId": AGENT, "topicId": topic,
                           "model": "scripted-1", "provider": "local"});
        client
            .gql("mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }", json!({"i": input}))
            .await?;
        ids.push(op);
    }
    Ok(ids)
}

/// Do one announced operation, start to finish.
pub async fn work(client: &Client, worker_id: &str, op: &Value) -> Result<(), String> {
    let id = op["id"].as_str().ok_or("an announced operation without an id")?;
    let topic = op["topicId"].as_str().ok_or("an announced operation without a topic")?;
    let claim = client
        .gql(
            "mutation($id: String!, $w: String!) { claimOperation(id: $id, workerId: $w, leaseSecs: 60) { lease { token } } }",
            json!({"id": id, "w": worker_id}),
        )
        .await;
    let lease = match claim {
        Ok(data) => {
            data["claimOperation"]["lease"]["token"].as_str().ok_or("a claim without a lease token")?.to_string()
        }
        // Another worker won the race: not ours.
        Err(e) if e.contains("CONFLICT") || e.contains("lease") => return Ok(()),
        Err(e) => return Err(e),
    };
    // Every report presents the lease token: only the claim's holder reports.
    let phase = "mutation($id: String!, $lt: String!, $p: PhaseInput!) { changePhase(id: $id, leaseToken: $lt, phase: $p) { position } }";
    client.gql(phase, json!({"id": id, "lt": lease, "p": "THINKING"})).await?;
    let step = "mutation($id: String!, $lt: String!) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, toolCalls: [{id: \"c1\", name: \"calculator\", status: \"succeeded\"}], usage: {inputTokens: 120, outputTokens: 16, totalTokens: 136, costMicros: 95}) { position } }";
    client.gql(step, json!({"id": id, "lt": lease})).await?;
    client.gql(phase, json!({"id": id, "lt": lease, "p": "RESPONDING"})).await?;
    let message_id = format!("{id}-answer");
    for piece in ANSWER {
        client
            .gql(
                "mutation($t: String!, $m: String!, $d: String!) { publishMessageDelta(topicId: $t, messageId: $m, delta: $d) }",
                json!({"t": topic, "m": message_id, "d": piece}),
            )
            .await?;
    }
    let answer = json!({"messageId": message_id, "role": "assistant", "content": ANSWER.concat(),
                        "parentId": format!("{topic}-q"), "operationId": id, "agentId": AGENT,
                        "model": "scripted-1", "provider": "local"});
    client
        .gql(
            "mutation($t: String!, $m: JSON!, $lt: String) { appendMessage(topicId: $t, message: $m, leaseToken: $lt) { position } }",
            json!({"t": topic, "m": answer, "lt": lease}),
        )
        .await?;
    client
        .gql(
            "mutation($id: String!, $lt: String!, $r: String!) { completeOperation(id: $id, leaseToken: $lt, result: $r) { position } }",
            json!({"id": id, "lt": lease, "r": ANSWER.concat()}),
        )
        .await?;
    Ok(())
}

/// Follow `workAvailable` for [`AGENT`] and do `runs` operations; answers their ids.
pub async fn run(url: &str, token: &str, worker_id: &str, runs: usize) -> Result<Vec<String>, String> {
    let client = Client::new(url, token);
    let ws_url = url.replacen("http", "ws", 1).trim_end_matches('/').to_string() + "/graphql";
    let mut request = ws_url.into_client_request().map_err(|e| format!("websocket url: {e}"))?;
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
    let (mut socket, _) =
        tokio_tungstenite::connect_async(request).await.map_err(|e| format!("websocket connect: {e}"))?;
    let send = |v: Value| Message::text(v.to_string());
    socket
        .send(send(json!({"type": "connection_init", "payload": {"authorization": format!("Bearer {token}")}})))
        .await
        .map_err(|e| format!("websocket: {e}"))?;
    let query = "subscription($a: [String!]!) { workAvailable(agentIds: $a) { id topicId status } }";
    socket
        .send(send(
            json!({"id": "work", "type": "subscribe", "payload": {"query": query, "variables": {"a": [AGENT]}}}),
        ))
        .await
        .map_err(|e| format!("websocket: {e}"))?;
    let mut done = Vec::new();
    while done.len() < runs {
        let msg = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .map_err(|_| "no work announced for 30 s".to_string())?
            .ok_or("the server closed the subscription")?
            .map_err(|e| format!("websocket: {e}"))?;
        let Message::Text(text) = msg else { continue };
        let v: Value = serde_json::from_str(text.as_str()).map_err(|e| format!("bad message: {e}"))?;
        match v["type"].as_str() {
            Some("ping") => {
                let _ = socket.send(send(json!({"type": "pong"}))).await;
            }
            Some("next") => {
                if let Some(errors) = v["payload"].get("errors") {
                    return Err(format!("subscription error: {errors}"));
                }
                let op = &v["payload"]["data"]["workAvailable"];
                work(&client, worker_id, op).await?;
                done.push(op["id"].as_str().unwrap_or_default().to_string());
            }
            Some("error") => return Err(format!("subscription refused: {}", v["payload"])),
            _ => {}
        }
    }
    let _ = socket.close(None).await;
    Ok(done)
}

#[allow(dead_code)] // the integration test includes this file for `run` and `enqueue` only
#[tokio::main]
async fn main() {
    let mut url = std::env::var("AGENTLOG_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".into());
    let mut token = std::env::var("AGENTLOG_TOKEN").unwrap_or_default();
    let (mut enqueue_n, mut runs) = (0usize, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match arg.as_str() {
            "--url" => url = value(),
            "--token" => token = value(),
            "--enqueue" => enqueue_n = value().parse().unwrap_or(0),
            "--runs" => runs = value().parse().ok(),
            other => {
                eprintln!("unknown argument {other}; use --url, --token, --enqueue N, --runs N");
                std::process::exit(2);
            }
        }
    }
    if token.is_empty() {
        eprintln!("give a token with --token or AGENTLOG_TOKEN");
        std::process::exit(2);
    }
    let tag = format!("demo-{}", std::process::id());
    let client = Client::new(&url, &token);
    if let Err(e) = enqueue(&client, enqueue_n, &tag).await {
        eprintln!("enqueueing failed: {e}");
        std::process::exit(1);
    }
    let runs = runs.unwrap_or(enqueue_n.max(1));
    match run(&url, &token, &format!("worker-{tag}"), runs).await {
        Ok(ids) => println!("completed {} operations: {}", ids.len(), ids.join(", ")),
        Err(e) => {
            eprintln!("worker failed: {e}");
            std::process::exit(1);
        }
    }
}
