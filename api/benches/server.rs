//! The server under a realistic log, over real HTTP and websockets: query latency (an
//! operations page, 1,000- and 10,000-message conversation trees side by side with the parse
//! alone, an analytics report), mutation
//! throughput, and append-to-delivery latency with many subscribers.
//!
//! Run: `cargo bench -p agentlog-api --bench server`
//! - `AGENTLOG_BENCH_EVENTS` (default 100000): the workload log loaded first (1000000 works,
//!   slowly: the read models are built before measuring);
//! - `AGENTLOG_BENCH_SUBSCRIBERS` (default 1000): websocket subscribers, of which
//!   `AGENTLOG_BENCH_SLOW` (default 100) read slowly (200 ms per message);
//! - a temp SQLite file by default; `AGENTLOG_BENCH_DATABASE` names another store (e.g. a
//!   fresh PostgreSQL database's URL; the bench's own mutations need a database it has not
//!   run on before).
//!
//! Resident memory (`VmRSS`, and the peak `VmHWM`) of the process is printed at each stage: it
//! holds the server and the clients.
//!
//! The server runs in this process on its own 2-thread runtime; the clients on another. Both
//! share the machine, so the figures include the clients' own cost.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentlog_api::{
    auth::Role,
    graphql::build_schema,
    http::{Http, router},
    server::open_app,
    state::{ApiLimits, Settings},
};
use agentlog_eventlog::{StoreOptions, open_store, testing::TempSqlite};
use agentlog_workload::{Workload, WorkloadConfig};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// p50, p99 and max of `samples` (ms).
fn percentiles(mut samples: Vec<f64>) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99), at(1.0))
}

fn report(name: &str, samples: Vec<f64>) {
    let n = samples.len();
    let (p50, p99, max) = percentiles(samples);
    println!("  {name:<52} n={n:<6} p50 {p50:>8.2} ms  p99 {p99:>8.2} ms  max {max:>8.2} ms");
}

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Client {
    async fn gql(&self, query: &str, variables: Value) -> Result<Value, BoxError> {
        let r: Value = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .json(&json!({"query": query, "variables": variables}))
            .send()
            .await?
            .json()
            .await?;
        match r.get("errors") {
            Some(e) => Err(format!("{query}: {e}").into()),
            None => Ok(r["data"].clone()),
        }
    }

    /// Run `query` `n` times; the latency of each, ms.
    async fn time(&self, n: usize, query: &str, variables: Value) -> Result<Vec<f64>, BoxError> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            self.gql(query, variables.clone()).await?;
            out.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(out)
    }
}

/// `VmRSS` and `VmHWM` of this process, MiB (Linux; zeros elsewhere).
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
}

fn print_memory(stage: &str) {
    let (rss, peak) = memory();
    println!("memory {stage}: resident {rss:.0} MiB (peak so far {peak:.0} MiB)");
}

async fn load_log(url: &str, events: usize) -> Result<(), BoxError> {
    let store = open_store(url, StoreOptions::default()).await?;
    let head = store.head_position().await?;
    if head > 0 {
        println!("log: {head} events already there (not loaded again)");
        store.close().await;
        return Ok(());
    }
    let start = Instant::now();
    let workload = Workload::generate(&WorkloadConfig {
        min_events: events,
        users: (events / 1_000).clamp(6, 400),
        ..WorkloadConfig::default()
    })?;
    for batch in workload.batches(20) {
        store.append_multi(batch).await?;
    }
    let head = store.head_position().await?;
    store.close().await;
    println!("log: {head} events generated and loaded in {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

async fn subscriber(
    ws_url: String,
    token: String,
    from: i64,
    expect: usize,
    pause: Duration,
) -> Result<Vec<f64>, BoxError> {
    let mut request = ws_url.into_client_request()?;
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    let init = json!({"type": "connection_init", "payload": {"authorization": format!("Bearer {token}")}});
    socket.send(Message::text(init.to_string())).await?;
    let query = "subscription($from: Int!) { events(filter: {eventTypes: [\"operation.step_recorded\"]}, fromPosition: $from) { position recordedAt } }";
    // From the head before the burst: only the burst.
    let sub = json!({"id": "1", "type": "subscribe", "payload": {"query": query, "variables": {"from": from}}});
    socket.send(Message::text(sub.to_string())).await?;
    let mut latencies = Vec::with_capacity(expect);
    while latencies.len() < expect {
        let Some(msg) = tokio::time::timeout(Duration::from_secs(120), socket.next()).await? else { break };
        let Message::Text(text) = msg? else { continue };
        let v: Value = serde_json::from_str(text.as_str())?;
        if v["type"] == "next" {
            let recorded = v["payload"]["data"]["events"]["recordedAt"].as_str().unwrap_or_default();
            let recorded = chrono::DateTime::parse_from_rfc3339(recorded)?;
            let ms = (chrono::Utc::now() - recorded.to_utc()).num_microseconds().unwrap_or(0) as f64 / 1e3;
            latencies.push(ms);
            // A slow reader: the server's socket buffer fills and its subscription falls behind.
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
    }
    Ok(latencies)
}

/// The parse alone, in this process, on the topic's messages as the server reads them (its
/// `messageMap`, in creation order): median of repeated runs, without and with writing the JSON.
async fn parse_alone(client: &Client, topic: &str) -> Result<(), BoxError> {
    let q = format!("{{ conversation(topicId: \"{topic}\") {{ tree {{ messageMap }} }} }}");
    let d = client.gql(&q, json!({})).await?;
    let mut messages: Vec<Value> =
        d["conversation"]["tree"]["messageMap"].as_object().map(|m| m.values().cloned().collect()).unwrap_or_default();
    messages.sort_by(|a, b| a["createdAt"].as_f64().unwrap_or(0.0).total_cmp(&b["createdAt"].as_f64().unwrap_or(0.0)));
    let messages: Vec<agentlog_conversation_flow::Value> = messages.into_iter().map(Into::into).collect();
    let runs = if messages.len() > 5_000 { 21 } else { 51 };
    let mut parse = Vec::with_capacity(runs);
    let mut with_json = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let r = agentlog_conversation_flow::parse(&messages, None);
        parse.push(t.elapsed().as_secs_f64() * 1e3);
        let mut buf = Vec::new();
        r.write_json(&mut buf)?;
        with_json.push(t.elapsed().as_secs_f64() * 1e3);
    }
    report(&format!("parse alone ({} messages, in process)", messages.len()), parse);
    report("parse + write_json alone", with_json);
    Ok(())
}

/// `steps` mutations 20 ms apart: the latency of each (ms) and the burst's length (s).
async fn burst(client: &Client, mutation: &str, steps: usize) -> Result<(Vec<f64>, f64), BoxError> {
    let mut latencies = Vec::with_capacity(steps);
    let start = Instant::now();
    for _ in 0..steps {
        let t = Instant::now();
        client.gql(mutation, json!({})).await?;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((latencies, start.elapsed().as_secs_f64()))
}

async fn measure(base: String, admin: String, user: String, subscribers: usize, slow: usize) -> Result<(), BoxError> {
    let url = format!("{base}/graphql");
    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;
    let admin = Client { http: http.clone(), url: url.clone(), token: admin };
    let user = Client { http: http.clone(), url: url.clone(), token: user };

    println!("queries (sequential, one client):");
    let ops = "{ operations(first: 50) { edges { node { id status kind agentId stepCount totalTokens costMicros createdAt } } pageInfo { hasNextPage endCursor } } }";
    report("operations page (50), admin (every user)", admin.time(200, ops, json!({})).await?);
    report("operations page (50), one user", user.time(200, ops, json!({})).await?);
    let analytics = "{ analytics(input: {granularity: DAY, groupBy: [AGENT, MODEL]}) { total { runs costMicros duration { p50Ms p95Ms p99Ms } } buckets { bucketStart agentId model figures { runs } } } }";
    report("analytics by day × agent × model, admin", admin.time(50, analytics, json!({})).await?);
    report("analytics by day × agent × model, one user", user.time(50, analytics, json!({})).await?);

    println!("mutations:");
    user.gql("mutation { createConversation(topicId: \"bench-topic\") { position } }", json!({})).await?;
    let append = "mutation($m: JSON!) { appendMessage(topicId: \"bench-topic\", message: $m) { position } }";
    let mut appends = Vec::with_capacity(1_000);
    let start = Instant::now();
    let mut parent: Option<String> = None;
    for i in 0..1_000 {
        let id = format!("m{i}");
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let m = json!({"messageId": id, "role": role, "content": format!("message {i} with a little text"), "parentId": parent});
        let t = Instant::now();
        user.gql(append, json!({"m": m})).await?;
        appends.push(t.elapsed().as_secs_f64() * 1e3);
        parent = Some(id);
    }
    let secs = start.elapsed().as_secs_f64();
    println!("  appendMessage, one client: {:.0} mutations/s (each waits for its read models)", 1_000.0 / secs);
    report("appendMessage latency", appends);
    let start_op = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    // Runs name a registered agent.
    let agent = json!({"i": {"agentId": "bench-agent", "config": {"slug": "bench-agent", "title": "Bench"}}});
    user.gql("mutation($i: JSON!) { registerAgent(input: $i) { position } }", agent).await?;
    for clients in [1usize, 8] {
        let per = 200 / clients;
        let start = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..clients {
            let client = Client { http: http.clone(), url: url.clone(), token: user.token.clone() };
            tasks.push(tokio::spawn(async move {
                for i in 0..per {
                    let id = format!("bench-{clients}-{c}-{i}");
                    let input = json!({"operationId": id, "kind": "TOOL", "agentId": "bench-agent"});
                    client.gql(start_op, json!({"i": input})).await?;
                }
                Ok::<_, BoxError>(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        let secs = start.elapsed().as_secs_f64();
        println!("  startOperation, {clients} concurrent clients: {:.0} mutations/s", (per * clients) as f64 / secs);
    }

    println!("conversation tree (1,000 messages):");
    let tree = "{ conversation(topicId: \"bench-topic\") { tree { version contextTree flatList messageMap } } }";
    report("tree, first read after the appends", user.time(1, tree, json!({})).await?);
    report("tree, cached", user.time(50, tree, json!({})).await?);
    let mut after_append = Vec::new();
    for i in 1_000..1_020 {
        let m = json!({"messageId": format!("m{i}"), "role": "user", "content": "one more", "parentId": format!("m{}", i - 1)});
        user.gql(append, json!({"m": m})).await?;
        after_append.extend(user.time(1, tree, json!({})).await?);
    }
    report("tree right after one appended message", after_append);
    parse_alone(&user, "bench-topic").await?;

    println!("conversation tree (10,000 messages; 8 clients append 1,250-message chains):");
    user.gql("mutation { createConversation(topicId: \"bench-topic-10k\") { position } }", json!({})).await?;
    let mut tasks = Vec::new();
    for c in 0..8 {
        let client = Client { http: http.clone(), url: url.clone(), token: user.token.clone() };
        tasks.push(tokio::spawn(async move {
            let mut parent: Option<String> = None;
            for i in 0..1_250 {
                let id = format!("c{c}-m{i}");
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                let m = json!({"messageId": id, "role": role, "content": format!("message {i} with a little text"), "parentId": parent});
                // Eight writers on one stream: a CONFLICT (the stream kept changing) wrote
                // nothing, and a client sends it again, as any client would.
                let q = "mutation($m: JSON!) { appendMessage(topicId: \"bench-topic-10k\", message: $m) { position } }";
                let mut attempt = 0;
                while let Err(e) = client.gql(q, json!({"m": m})).await {
                    attempt += 1;
                    if attempt > 20 || !e.to_string().contains("CONFLICT") {
                        return Err(e);
                    }
                }
                parent = Some(id);
            }
            Ok::<_, BoxError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let tree_10k =
        "{ conversation(topicId: \"bench-topic-10k\") { tree { version contextTree flatList messageMap } } }";
    report("tree, first read after the appends", user.time(1, tree_10k, json!({})).await?);
    report("tree, cached", user.time(20, tree_10k, json!({})).await?);
    parse_alone(&user, "bench-topic-10k").await?;

    let slow = slow.min(subscribers);
    println!("subscribers ({subscribers} websockets, {slow} of them slow, events filtered to one type):");
    let ws_url = url.replacen("http", "ws", 1);
    let steps = 50;
    let claim = "mutation { claimOperation(id: \"bench-1-0-0\", workerId: \"w\", leaseSecs: 600) { lease { token } } }";
    let claimed = user.gql(claim, json!({})).await?;
    let token = claimed["claimOperation"]["lease"]["token"].as_str().unwrap_or_default();
    let step = format!(
        "mutation {{ reportStep(id: \"bench-1-0-0\", leaseToken: \"{token}\", phase: ACTING, usage: {{inputTokens: 1}}) {{ position }} }}"
    );
    let step = step.as_str();
    // The writer alone first: the baseline its latency with subscribers is compared to.
    let (alone, _) = burst(&user, step, steps).await?;
    let head = user.gql("{ headPosition }", json!({})).await?["headPosition"].as_i64().unwrap_or(0);
    let mut subs = Vec::new();
    for i in 0..subscribers {
        let pause = if i < slow { Duration::from_millis(200) } else { Duration::ZERO };
        subs.push(tokio::spawn(subscriber(ws_url.clone(), user.token.clone(), head, steps, pause)));
    }
    // Let every subscription reach the server before the burst.
    tokio::time::sleep(Duration::from_secs(5)).await;
    print_memory(&format!("with {subscribers} subscribers connected"));
    let (listened, write_secs) = burst(&user, step, steps).await?;
    let mut all = Vec::new();
    let mut slow_all = Vec::new();
    let mut short = 0;
    for (i, s) in subs.into_iter().enumerate() {
        let got = s.await??;
        if got.len() < steps {
            short += 1;
        }
        if i < slow { slow_all.extend(got) } else { all.extend(got) }
    }
    println!(
        "  {steps} steps written in {write_secs:.2} s while {subscribers} subscribers listened; {short} subscribers got fewer than {steps}"
    );
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    println!(
        "  writer (reportStep) p50 alone {:.2} ms, with the subscribers {:.2} ms: ratio {:.2}",
        median(&alone),
        median(&listened),
        median(&listened) / median(&alone).max(f64::EPSILON)
    );
    report("reportStep, writer alone", alone);
    report("reportStep, while the subscribers listen", listened);
    if !slow_all.is_empty() {
        report("append → delivery, slow subscribers (200 ms/message)", slow_all);
    }
    report("append → delivery (recordedAt → received), the others", all);
    print_memory("at the end");
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let events: usize = std::env::var("AGENTLOG_BENCH_EVENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let subscribers: usize =
        std::env::var("AGENTLOG_BENCH_SUBSCRIBERS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000);
    let slow: usize = std::env::var("AGENTLOG_BENCH_SLOW").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let file = TempSqlite::new();
    let database = std::env::var("AGENTLOG_BENCH_DATABASE").unwrap_or_else(|_| file.url());
    let server_rt = Arc::new(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?);
    let (base, admin, user) = server_rt.block_on(async {
        load_log(&database, events).await?;
        print_memory("after loading");
        let start = Instant::now();
        // Every subscriber is the one bench user: lift the per-user caps past the subscriber count.
        let per_user = subscribers + 10;
        let limits = ApiLimits {
            max_connections_per_user: per_user,
            max_subscriptions_per_user: per_user,
            ..ApiLimits::default()
        };
        let state = open_app(&database, Settings::default(), limits).await?;
        let head = state.store.head_position().await?;
        state.runner.wait_for(head, Duration::from_secs(24 * 3600)).await?;
        println!("read models built in {:.1} s", start.elapsed().as_secs_f64());
        print_memory("with the read models built");
        let admin = state.tokens.create("bench-admin", Role::Admin, "bench").await?.secret;
        // A user of the workload, so the per-user figures read real rows.
        let any = agentlog_projections::operations::list(
            &state.db,
            None,
            &Default::default(),
            &agentlog_projections::page::PageRequest::first(1),
        )
        .await?;
        let user_id = any.items.first().map_or_else(|| "bench-user".to_string(), |o| o.user_id.clone());
        let user = state.tokens.create(&user_id, Role::User, "bench").await?.secret;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let schema = build_schema(state.clone());
        tokio::spawn(async move { axum::serve(listener, router(Http::new(state, schema))).await });
        Ok::<_, BoxError>((base, admin, user))
    })?;
    let client_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    client_rt.block_on(measure(base, admin, user, subscribers, slow))
}
