//! Runs go out as OpenTelemetry GenAI traces (`serve --otlp-endpoint`), received by a real
//! OTLP/HTTP endpoint in the test that decodes the protobuf with `opentelemetry-proto`: the span
//! tree and its attributes, nothing lost while the collector is down or refuses the credentials,
//! nothing sent twice after a restart, requests within a size bound, a run the collector refuses
//! skipped alone, and a log without run ends passed over once, not read again at every pass.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing::post};
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest, common::v1::any_value::Value, trace::v1::Span,
};
use prost::Message;
use serde_json::json;

use agentlog_eventlog::{StoreOptions, open_store};
use agentlog_projections::ReadDb;

use crate::support::{Db, Server};

/// An OTLP/HTTP trace receiver on loopback.
#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Span>>>,
    /// While true, every export is answered 503 (the collector is down).
    down: Arc<AtomicBool>,
    refused: Arc<AtomicUsize>,
    /// The `authorization` header of every export received.
    auth: Arc<Mutex<Vec<String>>>,
    /// While true, every export is answered 401 (the credentials are wrong).
    unauthorized: Arc<AtomicBool>,
    /// Bodies larger than this are answered 413 (0: no limit).
    max_body: Arc<AtomicUsize>,
    /// A request with a span of this run (`agentlog.operation.id`) is answered 400.
    refuse_run: Arc<Mutex<Option<String>>>,
    /// The size of every request taken, and what was answered to the others.
    taken: Arc<Mutex<Vec<usize>>>,
    answered: Arc<Mutex<Vec<u16>>>,
    /// When set, this many more requests are taken, then every one is answered 503.
    takes_left: Arc<Mutex<Option<usize>>>,
}

async fn receive(State(c): State<Collector>, headers: axum::http::HeaderMap, body: Bytes) -> StatusCode {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    c.auth.lock().unwrap().push(auth);
    if c.down.load(Ordering::SeqCst) {
        c.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let refuse = |status: StatusCode| {
        c.answered.lock().unwrap().push(status.as_u16());
        status
    };
    if c.unauthorized.load(Ordering::SeqCst) {
        return refuse(StatusCode::UNAUTHORIZED);
    }
    if let Some(left) = c.takes_left.lock().unwrap().as_mut() {
        if *left == 0 {
            return refuse(StatusCode::SERVICE_UNAVAILABLE);
        }
        *left -= 1;
    }
    let max = c.max_body.load(Ordering::SeqCst);
    if max > 0 && body.len() > max {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE);
    }
    let size = body.len();
    let Ok(request) = ExportTraceServiceRequest::decode(body) else { return StatusCode::BAD_REQUEST };
    let received: Vec<Span> =
        request.resource_spans.into_iter().flat_map(|rs| rs.scope_spans).flat_map(|ss| ss.spans).collect();
    let refused_run = c.refuse_run.lock().unwrap().clone();
    if received.iter().any(|span| refused_run.is_some() && text(span, "agentlog.operation.id") == refused_run) {
        return refuse(StatusCode::BAD_REQUEST);
    }
    c.taken.lock().unwrap().push(size);
    c.spans.lock().unwrap().extend(received);
    StatusCode::OK
}

impl Collector {
    async fn start() -> (Self, String) {
        let c = Collector::default();
        let app = Router::new().route("/v1/traces", post(receive)).with_state(c.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (c, format!("http://{addr}"))
    }

    /// Wait until the collector has answered `status` to some request.
    async fn wait_for_answer(&self, status: u16) {
        for _ in 0..200 {
            if self.answered.lock().unwrap().contains(&status) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the collector never answered {status}");
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    async fn wait_for(&self, count: usize) -> Vec<Span> {
        for _ in 0..200 {
            let spans = self.spans();
            if spans.len() >= count {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("expected {count} spans, got {:?}", self.spans().iter().map(|s| &s.name).collect::<Vec<_>>());
    }
}

fn attr(span: &Span, key: &str) -> Option<Value> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.clone()?.value)
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attr(span, key) {
        Some(Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(Value::IntValue(i)) => Some(i),
        _ => None,
    }
}

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const STEP: &str = "mutation($id: String!, $lt: String!, $t: [ToolCallInput!], $u: UsageInput) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, toolCalls: $t, usage: $u) { position } }";
const DONE: &str =
    "mutation($id: String!, $lt: String!) { completeOperation(id: $id, leaseToken: $lt, result: \"ok\") { position } }";

/// A run with a tool-calling step, a human's answer and a sub-agent, exported while the
/// collector is down at first, then across a restart.
async fn runs_are_exported_as_genai_traces(db: Db) {
    let (collector, endpoint) = Collector::start().await;
    collector.down.store(true, Ordering::SeqCst);
    let mut s =
        Server::start_with(db, &["--otlp-endpoint", &endpoint, "--otlp-header", "authorization=Basic cGs6c2s="]).await;
    let t = s.user_token("alice").await;
    let writer = json!({"agentId": "writer", "config": {"slug": "writer", "title": "Writer", "model": "gpt-4o", "provider": "openai"}});
    s.data(Some(&t), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": writer})).await;
    s.data(Some(&t), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    s.data(
        Some(&t),
        START,
        json!({"i": {"operationId": "p", "kind": "CONVERSATION", "agentId": "writer", "topicId": "c1"}}),
    )
    .await;
    let lt = s.claim(&t, "p", "w1").await;
    let calls = json!([{"id": "1-1", "name": "web/search", "status": "succeeded"}, {"id": "1-2", "name": "fs/read", "status": "failed"}]);
    s.data(
        Some(&t),
        STEP,
        json!({"id": "p", "lt": lt, "t": calls, "u": {"inputTokens": 100, "outputTokens": 20, "costMicros": 300}}),
    )
    .await;
    let spawn = "mutation($lt: String!) { spawnSubagent(parentOperationId: \"p\", leaseToken: $lt, input: {operationId: \"k\", kind: SUBAGENT, agentId: \"writer\"}) { position } }";
    s.data(Some(&t), spawn, json!({"lt": lt})).await;
    let klt = s.claim(&t, "k", "w2").await;
    s.data(Some(&t), STEP, json!({"id": "k", "lt": klt, "u": {"inputTokens": 7, "outputTokens": 3}})).await;
    s.data(Some(&t), DONE, json!({"id": "k", "lt": klt})).await;
    let card = json!({"cardId": "c1", "title": "Publish?", "kind": "confirm"});
    s.data(
        Some(&t),
        "mutation($c: JSON!, $lt: String!) { askHuman(id: \"p\", leaseToken: $lt, card: $c) { position } }",
        json!({"c": card, "lt": lt}),
    )
    .await;
    s.data(
        Some(&t),
        "mutation { answerCard(id: \"p\", cardId: \"c1\", answer: {kind: \"confirm\", confirmed: true}) { position } }",
        json!({}),
    )
    .await;
    let lt = s.claim(&t, "p", "w1").await;
    s.data(Some(&t), STEP, json!({"id": "p", "lt": lt, "u": {"inputTokens": 50, "outputTokens": 10}})).await;
    let done = s.data(Some(&t), DONE, json!({"id": "p", "lt": lt})).await;
    let done_at = done["completeOperation"]["position"].as_i64().expect("the end's position");

    // The collector is down: the exporter keeps trying and sends nothing else meanwhile.
    for _ in 0..100 {
        if collector.refused.load(Ordering::SeqCst) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(collector.refused.load(Ordering::SeqCst) >= 2, "the exporter retried while the collector was down");
    assert!(collector.spans().is_empty());
    collector.down.store(false, Ordering::SeqCst);
    // parent: invoke_agent + 2 chat + 2 execute_tool; child: invoke_agent + chat
    let spans = collector.wait_for(7).await;
    let auth = collector.auth.lock().unwrap().clone();
    assert!(!auth.is_empty() && auth.iter().all(|a| a == "Basic cGs6c2s="), "--otlp-header on every export: {auth:?}");
    let by_name = |name: &str| spans.iter().filter(|s| s.name == name).cloned().collect::<Vec<_>>();
    let agents = by_name("invoke_agent writer");
    assert_eq!(agents.len(), 2, "{:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let parent = agents.iter().find(|s| text(s, "agentlog.operation.id").as_deref() == Some("p")).unwrap();
    let child = agents.iter().find(|s| text(s, "agentlog.operation.id").as_deref() == Some("k")).unwrap();
    assert!(parent.parent_span_id.is_empty(), "the top-level run is the trace's root");
    assert_eq!(child.parent_span_id, parent.span_id, "a sub-agent is a child of its parent's run");
    assert!(spans.iter().all(|s| s.trace_id == parent.trace_id), "one trace for the tree");
    assert_eq!(text(parent, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
    assert_eq!(text(parent, "gen_ai.provider.name").as_deref(), Some("openai"));
    assert_eq!(text(parent, "gen_ai.request.model").as_deref(), Some("gpt-4o"));
    assert_eq!(text(parent, "gen_ai.agent.id").as_deref(), Some("writer"));
    assert_eq!(text(parent, "gen_ai.conversation.id").as_deref(), Some("c1"));
    assert_eq!(int(parent, "gen_ai.usage.input_tokens"), Some(150));
    assert_eq!(int(parent, "gen_ai.usage.output_tokens"), Some(30));
    assert_eq!(int(parent, "agentlog.cost_micros"), Some(300));
    assert!(text(parent, "agentlog.root_source_id").is_some_and(|r| !r.is_empty()));
    assert_eq!(parent.status.as_ref().map(|st| st.code), Some(1), "OK: the run completed");
    let hitl: Vec<&str> = parent.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(hitl, ["agentlog.hitl.asked", "agentlog.hitl.answered"]);
    let chats = by_name("chat gpt-4o");
    assert_eq!(chats.len(), 3);
    let tools: HashMap<String, Span> =
        spans.iter().filter(|s| s.name.starts_with("execute_tool ")).map(|s| (s.name.clone(), s.clone())).collect();
    let search = &tools["execute_tool web/search"];
    assert_eq!(text(search, "gen_ai.tool.call.id").as_deref(), Some("1-1"));
    assert!(chats.iter().any(|c| c.span_id == search.parent_span_id && c.parent_span_id == parent.span_id));
    assert_eq!(tools["execute_tool fs/read"].status.as_ref().map(|st| st.code), Some(2), "a failed call is an error");

    // A restart sends nothing again; a new run after it is sent once. The exporter is
    // at-least-once (it sends, then saves its checkpoint) and the restart is a kill, so wait for
    // the checkpoint first: a kill between the two would rightly send the page again.
    exported_up_to(&s, done_at).await;
    s.restart().await;
    s.data(Some(&t), START, json!({"i": {"operationId": "q", "kind": "CONVERSATION", "agentId": "writer"}})).await;
    let lt = s.claim(&t, "q", "w1").await;
    s.data(Some(&t), "mutation($lt: String!) { failOperation(id: \"q\", leaseToken: $lt, message: \"model refused\", errorType: \"provider_error\") { position } }", json!({"lt": lt}))
        .await;
    let spans = collector.wait_for(8).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let spans_later = collector.spans();
    assert_eq!(spans_later.len(), spans.len(), "nothing more was sent");
    let mut ids: Vec<&Vec<u8>> = spans_later.iter().map(|s| &s.span_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), spans_later.len(), "no span was sent twice");
    let failed = spans_later.iter().find(|s| text(s, "agentlog.operation.id").as_deref() == Some("q")).unwrap();
    assert_eq!(failed.status.as_ref().map(|st| (st.code, st.message.as_str())), Some((2, "model refused")));
    assert_eq!(text(failed, "error.type").as_deref(), Some("provider_error"));
    s.stop();
}

both!(runs_are_exported_as_genai_traces as runs_are_exported_as_genai_traces);

/// Wait until the exporter's checkpoint has reached `position`.
async fn exported_up_to(s: &Server, position: i64) {
    let store = open_store(&s.db.url(), StoreOptions::default()).await.expect("open the log");
    let read = ReadDb::from(store.database());
    for _ in 0..200 {
        let rows = read
            .fetch("SELECT position FROM reactor_checkpoints WHERE name = 'otlp_export'", &[])
            .await
            .expect("checkpoint");
        if rows.first().and_then(|r| r.i64(0)).is_some_and(|at| at >= position) {
            store.close().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the exporter's checkpoint never reached {position}");
}

/// Two instances with the exporter on one database: each run's spans are sent once.
async fn two_instances_export_each_run_once(db: Db) {
    let (collector, endpoint) = Collector::start().await;
    let a = Server::start_with(db, &["--otlp-endpoint", &endpoint]).await;
    let b = Server::start_with(Db::Shared(a.db.url()), &["--otlp-endpoint", &endpoint]).await;
    let t = a.user_token("alice").await;
    for n in 0..6 {
        let s = if n % 2 == 0 { &a } else { &b };
        let id = format!("r{n}");
        s.data(Some(&t), START, json!({"i": {"operationId": id, "kind": "CONVERSATION", "agentId": "inbox"}})).await;
        let lt = s.claim(&t, &id, "w").await;
        s.data(Some(&t), STEP, json!({"id": id, "lt": lt, "u": {"inputTokens": 1}})).await;
        s.data(Some(&t), DONE, json!({"id": id, "lt": lt})).await;
    }
    let spans = collector.wait_for(12).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let spans_later = collector.spans();
    assert_eq!(spans_later.len(), spans.len());
    assert_eq!(spans_later.len(), 12, "6 runs × (invoke_agent + chat), each once");
    b.stop();
    a.stop();
}

both!(two_instances_export_each_run_once as two_instances_export_each_run_once);

/// Events that end no run still move the exporter on: its checkpoint reaches the head it read
/// at, so the next pass reads from there, not again from the last run end (or the start).
async fn the_exporter_moves_past_events_that_end_no_run(db: Db) {
    let (collector, endpoint) = Collector::start().await;
    let s = Server::start_with(db, &["--otlp-endpoint", &endpoint]).await;
    let t = s.user_token("alice").await;
    // A run that stays open: its steps end no run, so nothing is exported for them.
    s.data(Some(&t), START, json!({"i": {"operationId": "open", "kind": "CONVERSATION", "agentId": "inbox"}})).await;
    let lt = s.claim(&t, "open", "w").await;
    let mut head = 0;
    for _ in 0..5 {
        let d = s.data(Some(&t), STEP, json!({"id": "open", "lt": lt, "u": {"inputTokens": 1}})).await;
        head = d["reportStep"]["position"].as_i64().expect("a position");
    }
    exported_up_to(&s, head).await;
    assert!(collector.spans().is_empty(), "no run ended, no span sent");
    s.stop();
}

both!(the_exporter_moves_past_events_that_end_no_run as the_exporter_moves_past_events_that_end_no_run);

/// Run each `(user's token, run, steps, tool calls per step)` to its end; the ends' positions.
async fn end_runs(s: &Server, runs: &[(&String, &str, usize, usize)]) -> Vec<i64> {
    let mut ends = Vec::new();
    for &(t, id, steps, calls) in runs {
        s.data(Some(t), START, json!({"i": {"operationId": id, "kind": "CONVERSATION", "agentId": "inbox"}})).await;
        let lt = s.claim(t, id, "w").await;
        for step in 0..steps {
            let calls: Vec<_> = (0..calls)
                .map(|n| json!({"id": format!("{step}-{n}"), "name": "web/search", "status": "succeeded"}))
                .collect();
            s.data(Some(t), STEP, json!({"id": id, "lt": lt, "t": calls, "u": {"inputTokens": 3}})).await;
        }
        let done = s.data(Some(t), DONE, json!({"id": id, "lt": lt})).await;
        ends.push(done["completeOperation"]["position"].as_i64().expect("a position"));
    }
    ends
}

/// A page of runs whose spans exceed what one request may carry, sent while the credentials are
/// wrong (401: kept, sent again), to a collector that limits a request's size (413: split, a
/// long run's spans over several requests) and refuses one user's run as data (400: that run
/// alone is skipped). Every other run, of either user, arrives whole and once.
async fn a_refused_run_costs_no_other_run_its_trace(db: Db) {
    let (collector, endpoint) = Collector::start().await;
    collector.unauthorized.store(true, Ordering::SeqCst);
    collector.max_body.store(3_000, Ordering::SeqCst);
    *collector.refuse_run.lock().unwrap() = Some("poison".into());
    let s = Server::start_with(db, &["--otlp-endpoint", &endpoint, "--otlp-max-request-bytes", "4096"]).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    // (user, run, steps, tool calls per step)
    let runs = [(&alice, "long", 30, 3), (&bob, "poison", 2, 1), (&alice, "short", 1, 0), (&bob, "b1", 1, 1)];
    let head = end_runs(&s, &runs).await[3];
    collector.wait_for_answer(401).await;
    assert!(collector.spans().is_empty(), "nothing is taken while the credentials are wrong");
    collector.unauthorized.store(false, Ordering::SeqCst);
    exported_up_to(&s, head).await;

    let spans = collector.spans();
    let of = |run: &str| spans.iter().filter(|sp| text(sp, "agentlog.operation.id").as_deref() == Some(run)).count();
    assert_eq!(of("long"), 1 + 30 + 30 * 3, "the long run whole: its run, steps and tool calls");
    assert_eq!(of("short"), 2);
    assert_eq!(of("b1"), 1 + 1 + 1);
    assert_eq!(of("poison"), 0, "the refused run is skipped");
    let mut ids: Vec<&[u8]> = spans.iter().map(|sp| sp.span_id.as_slice()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), spans.len(), "no span twice");
    let taken = collector.taken.lock().unwrap().clone();
    assert!(taken.iter().all(|&size| size <= 3_000), "every request within the collector's limit: {taken:?}");
    assert!(taken.len() > 3, "the long run went out over several requests: {taken:?}");
    let answered = collector.answered.lock().unwrap().clone();
    assert!(answered.contains(&413) && answered.contains(&400), "{answered:?}");
    // The poison run: its run, two steps and two tool calls, refused; the others taken.
    let (_, metrics) = s.metrics_text().await;
    assert!(metrics.contains("agentlog_otlp_spans_total{outcome=\"refused\"} 5\n"), "{metrics}");
    assert!(metrics.contains(&format!("agentlog_otlp_spans_total{{outcome=\"sent\"}} {}\n", spans.len())), "{metrics}");
    let retries = metrics.lines().find_map(|l| l.strip_prefix("agentlog_otlp_retries_total ")).expect("retries");
    assert!(retries.parse::<u64>().expect("a count") >= 1, "the 401s were retried: {retries}");
    s.stop();
}

both!(a_refused_run_costs_no_other_run_its_trace as a_refused_run_costs_no_other_run_its_trace);

/// An outage in the middle of a page: the runs sent whole before it keep the checkpoint past
/// them, so after it only the run in flight is sent again (same ids), and nothing is lost.
async fn a_page_cut_by_an_outage_keeps_the_runs_it_sent(db: Db) {
    let (collector, endpoint) = Collector::start().await;
    collector.unauthorized.store(true, Ordering::SeqCst);
    let s = Server::start_with(db, &["--otlp-endpoint", &endpoint, "--otlp-max-request-bytes", "2048"]).await;
    let t = s.user_token("alice").await;
    let runs = [(&t, "r1", 12, 1), (&t, "r2", 12, 1), (&t, "r3", 12, 1)];
    let ends = end_runs(&s, &runs).await;
    let (first_end, head) = (ends[0], ends[2]);
    collector.wait_for_answer(401).await;
    // Each run needs about five requests of 2 KiB; after 8 taken the collector goes down.
    *collector.takes_left.lock().unwrap() = Some(8);
    collector.unauthorized.store(false, Ordering::SeqCst);
    collector.wait_for_answer(503).await;
    exported_up_to(&s, first_end).await;
    let store = open_store(&s.db.url(), StoreOptions::default()).await.expect("open the log");
    let rows = ReadDb::from(store.database())
        .fetch("SELECT position FROM reactor_checkpoints WHERE name = 'otlp_export'", &[])
        .await
        .expect("checkpoint");
    store.close().await;
    let at = rows.first().and_then(|r| r.i64(0)).expect("a checkpoint");
    assert!(at < head, "the page did not go out whole: checkpoint {at}, head {head}");
    let before = collector.spans().len();
    *collector.takes_left.lock().unwrap() = None;
    exported_up_to(&s, head).await;
    let spans = collector.spans();
    let of = |run: &str| {
        let mut ids: Vec<&[u8]> = spans
            .iter()
            .filter(|sp| text(sp, "agentlog.operation.id").as_deref() == Some(run))
            .map(|sp| sp.span_id.as_slice())
            .collect();
        let sent = ids.len();
        ids.sort_unstable();
        ids.dedup();
        (ids.len(), sent)
    };
    assert_eq!(of("r1"), (25, 25), "the run sent whole before the outage is not sent again");
    assert_eq!(of("r2").0, 25);
    assert_eq!(of("r3"), (25, 25));
    assert!(before > 25, "the outage came after r1 was out: {before} spans before it");
    s.stop();
}

both!(a_page_cut_by_an_outage_keeps_the_runs_it_sent as a_page_cut_by_an_outage_keeps_the_runs_it_sent);

/// A run longer than a page of its stream (1,000 events) goes out whole: its stream is read a
/// page at a time, and every step's span arrives once, with the run's own.
async fn a_run_longer_than_a_page_of_its_stream_goes_out_whole(db: Db) {
    const BATCH: &str = "mutation($id: String!, $lt: String!, $items: [BatchItemInput!]!) { reportBatch(operationId: $id, leaseToken: $lt, items: $items) { position } }";
    let (collector, endpoint) = Collector::start().await;
    let s = Server::start_with(db, &["--otlp-endpoint", &endpoint]).await;
    let t = s.user_token("alice").await;
    s.data(Some(&t), START, json!({"i": {"operationId": "long", "kind": "CONVERSATION", "agentId": "inbox"}})).await;
    let lt = s.claim(&t, "long", "w").await;
    for _ in 0..3 {
        let items: Vec<_> = (0..400)
            .map(|_| json!({"step": {"phase": "ACTING", "usage": {"inputTokens": 1}, "toolCalls": []}}))
            .collect();
        s.data(Some(&t), BATCH, json!({"id": "long", "lt": lt, "items": items})).await;
    }
    let done = s.data(Some(&t), DONE, json!({"id": "long", "lt": lt})).await;
    exported_up_to(&s, done["completeOperation"]["position"].as_i64().expect("a position")).await;
    let spans = collector.spans();
    let steps: Vec<i64> = spans
        .iter()
        .filter(|sp| sp.name.starts_with("chat "))
        .filter_map(|sp| int(sp, "agentlog.step.index"))
        .collect();
    let mut distinct = steps.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!((steps.len(), distinct.len()), (1_200, 1_200), "every step once");
    let root = spans.iter().find(|sp| sp.name.starts_with("invoke_agent ")).expect("the run's span");
    assert_eq!(int(root, "gen_ai.usage.input_tokens"), Some(1_200), "its sums over every page");
    assert_eq!(spans.len(), 1_201);
    s.stop();
}

both!(a_run_longer_than_a_page_of_its_stream_goes_out_whole as a_run_longer_than_a_page_of_its_stream_goes_out_whole);
