//! The real server over real HTTP and websockets, on SQLite and on PostgreSQL.

use crate::support;

use std::collections::HashSet;

use serde_json::{Value, json};
use support::{Db, ON_CACHE, RELOADED, Server, Ws, error_code, verify_read_models};

const START: &str = "mutation($input: StartOperationInput!) { startOperation(input: $input) { position operation { id status kind } } }";
const CLAIM: &str = "mutation($id: String!) { claimOperation(id: $id, workerId: \"w1\", leaseSecs: 3600) { operation { status leaseWorkerId } lease { token workerId expiresAt } } }";
const STEP: &str = "mutation($id: String!, $lt: String!, $n: Int) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, toolCalls: [{id: \"c1\", name: \"search\"}], usage: {inputTokens: $n}) { position operation { stepCount inputTokens outputTokens costMicros } } }";

fn start_input(id: &str) -> Value {
    json!({"input": {"operationId": id, "kind": "TASK", "agentId": "inbox", "model": "m1", "provider": "p1"}})
}

async fn health_ready_and_metrics(db: Db) {
    let s = Server::start(db).await;
    assert_eq!(s.get("/healthz").await, (200, "ok".to_string()));
    let (status, body) = s.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = s.metrics_text().await;
    assert_eq!(status, 200);
    for name in [
        "agentlog_http_requests_total",
        "agentlog_appends_total",
        "agentlog_conflicts_total",
        "agentlog_projection_lag_events",
        "agentlog_subscribers",
    ] {
        assert!(body.contains(name), "{name} missing from {body}");
    }
    let page = reqwest::Client::new()
        .get(format!("{}/graphql", s.base))
        .header("accept", "text/html")
        .send()
        .await
        .expect("request");
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap_or_default().contains("graphiql"), "GraphiQL page for a browser");
    assert!(!s.admin_token.is_empty(), "first start wrote an admin token");
    s.stop();
}

/// `/metrics`' count of GraphQL texts whose parsed document was reused.
const REUSED: &str = "agentlog_graphql_documents_total{outcome=\"reused\"}";

/// A worker reporting step after step through one instance: each step is decided on the run
/// the instance holds in memory and appended with no read of the log (the append's expected
/// version proves it current), and answers as a step decided on the stream would. A report the
/// domain refuses on that state is decided again on the stream, which gives the refusal. The
/// step's text is parsed once; the same text again reuses its document.
async fn steps_are_decided_on_the_instances_cached_run(db: Db) {
    let s = Server::start(db).await;
    let t = s.admin_token.clone();
    s.data(Some(&t), START, start_input("cached")).await;
    let claimed = s.data(Some(&t), CLAIM, json!({"id": "cached"})).await;
    let lease = claimed["claimOperation"]["lease"]["token"].as_str().unwrap().to_string();
    let (on_cache, reloaded) = (s.metric(ON_CACHE).await, s.metric(RELOADED).await);
    let reused = s.metric(REUSED).await;
    for n in 1..=5 {
        let d = s.data(Some(&t), STEP, json!({"id": "cached", "lt": lease, "n": 10})).await;
        assert_eq!(d["reportStep"]["operation"]["stepCount"], json!(n), "{d}");
        assert_eq!(d["reportStep"]["operation"]["inputTokens"], json!(10 * n), "{d}");
    }
    assert_eq!(s.metric(ON_CACHE).await - on_cache, 5, "every step on the cached run");
    assert_eq!(s.metric(RELOADED).await, reloaded);
    assert_eq!(s.metric(REUSED).await - reused, 4, "the step's text parsed once, its document reused after");

    let wrong = s.gql(Some(&t), STEP, json!({"id": "cached", "lt": "al_not-this-lease", "n": 1})).await;
    assert_eq!(error_code(&wrong).as_deref(), Some("CONFLICT"), "{wrong}");
    assert_eq!(s.metric(RELOADED).await - reloaded, 1, "refused on the cached state, then on the stream");
    let d = s.data(Some(&t), "{ operation(id: \"cached\") { stepCount inputTokens } }", json!({})).await;
    assert_eq!(d["operation"], json!({"stepCount": 5, "inputTokens": 50}), "the refused report wrote nothing");
    verify_read_models(&s.stop()).await;
}

async fn unauthenticated_and_hostile_requests_write_nothing(db: Db) {
    let s = Server::start(db).await;
    let head = |r: Value| r["data"]["headPosition"].as_i64().unwrap();
    let before = head(s.gql(Some(&s.admin_token), "{ headPosition }", json!({})).await);
    // no token, a bad token
    let r = s.gql(None, START, start_input("x1")).await;
    assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{r}");
    let r = s.gql(Some("al_not_a_real_token"), "{ headPosition }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{r}");
    let token = s.user_token("mallory").await;
    // malformed JSON, invalid UTF-8, wrong types, unknown fields, deep queries, huge bodies
    let (status, body) = s.raw(Some(&token), b"{\"query\": ".to_vec(), "application/json").await;
    assert!(status >= 400 || body.contains("error"), "{status} {body}");
    let (status, _) = s.raw(Some(&token), vec![0xff, 0xfe, 0x00, 0x7b], "application/json").await;
    assert!(status >= 400);
    let r = s.gql(Some(&token), START, json!({"input": {"operationId": 5, "kind": "NOPE"}})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let r = s.gql(Some(&token), "{ nope }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let mut nested = String::from("{ __schema { types { fields { type ");
    for _ in 0..20 {
        nested.push_str("{ ofType ");
    }
    nested.push_str("{ name }");
    for _ in 0..20 {
        nested.push('}');
    }
    nested.push_str(" } } } }");
    let r = s.gql(Some(&token), &nested, json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    // wide: 2,500 aliased fields (complexity 2,500 > 2,000)
    let wide: String = (0..2_500).map(|i| format!("a{i}: headPosition ")).collect();
    let r = s.gql(Some(&token), &format!("{{ {wide} }}"), json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    let (status, _) = s.raw(Some(&token), vec![b' '; 3 * 1024 * 1024], "application/json").await;
    assert_eq!(status, 413, "oversized body refused");
    // bad values inside a valid request: refused with VALIDATION, nothing written
    let r = s
        .gql(Some(&token), START, json!({"input": {"operationId": "has space", "kind": "TASK", "agentId": "inbox"}}))
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let r = s
        .gql(
            Some(&token),
            START,
            json!({"input": {"operationId": "ok1", "kind": "TASK", "agentId": "inbox", "maxSteps": -1}}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let r = s
        .gql(
            Some(&token),
            "mutation { askHuman(id: \"nope\", leaseToken: \"lt_x\", card: {cardId: \"c\", title: \"t\", kind: \"confirm\"}) { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.gql(Some(&token), "{ events(first: 100000) { edges { cursor } } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    let after = head(s.gql(Some(&s.admin_token), "{ headPosition }", json!({})).await);
    assert_eq!(after, before, "the log is unchanged");
    s.stop();
}

async fn an_operation_runs_end_to_end_and_stays_private(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let d = s.data(Some(&alice), START, start_input("op-a")).await;
    assert_eq!(d["startOperation"]["operation"]["status"], "idle");
    let d = s.data(Some(&alice), CLAIM, json!({"id": "op-a"})).await;
    assert_eq!(d["claimOperation"]["operation"]["status"], "running");
    assert_eq!(d["claimOperation"]["lease"]["workerId"], "w1");
    let lt = d["claimOperation"]["lease"]["token"].as_str().unwrap().to_string();
    // cost and tokens stay absent until measured
    let d = s.data(Some(&alice), STEP, json!({"id": "op-a", "lt": lt})).await;
    assert_eq!(d["reportStep"]["operation"]["inputTokens"], Value::Null);
    let d = s.data(Some(&alice), STEP, json!({"id": "op-a", "lt": lt, "n": 120})).await;
    let step_position = d["reportStep"]["position"].as_i64().unwrap();
    assert_eq!(d["reportStep"]["operation"]["stepCount"], 2);
    assert_eq!(d["reportStep"]["operation"]["inputTokens"], 120);
    assert_eq!(d["reportStep"]["operation"]["costMicros"], Value::Null);
    let card = json!({"cardId": "c1", "title": "Ship it?", "kind": "confirm"});
    let d = s
        .data(
            Some(&alice),
            "mutation($c: JSON!, $lt: String!) { askHuman(id: \"op-a\", leaseToken: $lt, card: $c) { operation { status pendingCard } } }",
            json!({"c": card, "lt": lt}),
        )
        .await;
    assert_eq!(d["askHuman"]["operation"]["status"], "waiting_for_human");
    // an answer of the wrong kind is refused
    let r = s.gql(Some(&alice), "mutation { answerCard(id: \"op-a\", cardId: \"c1\", answer: {kind: \"input\", text: \"x\"}) { position } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let d = s.data(Some(&alice), "mutation { answerCard(id: \"op-a\", cardId: \"c1\", answer: {kind: \"confirm\", confirmed: true}) { operation { status } } }", json!({})).await;
    assert_eq!(d["answerCard"]["operation"]["status"], "running");
    // the answered run is claimed again: a new lease, a new token
    let lt = s.claim(&alice, "op-a", "w1").await;
    let d = s.data(Some(&alice), "mutation($lt: String!) { completeOperation(id: \"op-a\", leaseToken: $lt, result: \"shipped\") { operation { status completionReason } } }", json!({"lt": lt})).await;
    assert_eq!(d["completeOperation"]["operation"]["status"], "done");
    // it ends exactly once
    let r = s
        .gql(
            Some(&alice),
            "mutation($lt: String!) { failOperation(id: \"op-a\", leaseToken: $lt, message: \"late\") { position } }",
            json!({"lt": lt}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "{r}");

    // history and state as of a position
    let q = "query($p: Int!) { operation(id: \"op-a\") { status history { eventType streamVersion } stateAt(position: $p) { status stepCount inputTokens } } }";
    let d = s.data(Some(&alice), q, json!({"p": step_position})).await;
    let types: Vec<&str> =
        d["operation"]["history"].as_array().unwrap().iter().map(|e| e["eventType"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"operation.created"));
    assert!(types.contains(&"operation.human_answered") && types.last() == Some(&"operation.completed"), "{types:?}");
    assert_eq!(d["operation"]["stateAt"]["status"], "running");
    assert_eq!(d["operation"]["stateAt"]["stepCount"], 2);
    // the same history a page of 2 at a time, after the last stream version seen
    let all: Vec<Value> = d["operation"]["history"].as_array().unwrap().clone();
    let length = s.data(Some(&alice), "{ operation(id: \"op-a\") { historyLength } }", json!({})).await;
    assert_eq!(length["operation"]["historyLength"].as_u64(), Some(all.len() as u64), "{length}");
    let (mut paged, mut after) = (Vec::new(), 0);
    loop {
        let q = "query($a: Int) { operation(id: \"op-a\") { history(first: 2, afterVersion: $a) { eventType streamVersion } } }";
        let page =
            s.data(Some(&alice), q, json!({"a": after})).await["operation"]["history"].as_array().unwrap().clone();
        let Some(last) = page.last() else { break };
        after = last["streamVersion"].as_i64().unwrap();
        assert!(page.len() <= 2);
        paged.extend(page);
    }
    assert_eq!(paged, all);
    let r =
        s.gql(Some(&alice), "{ operation(id: \"op-a\") { history(afterVersion: -1) { eventType } } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");

    // the chain of the claim: one source and what it caused
    let all = s
        .data(
            Some(&alice),
            "{ events(first: 100) { edges { node { eventType rootSourceId parentNodeId userId } } } }",
            json!({}),
        )
        .await;
    let nodes: Vec<&Value> = all["events"]["edges"].as_array().unwrap().iter().map(|e| &e["node"]).collect();
    assert!(nodes.iter().all(|n| n["userId"] == "alice"));
    let root = nodes[0]["rootSourceId"].as_str().unwrap().to_string();
    let chain = s
        .data(
            Some(&alice),
            "query($r: UUID!) { chain(rootSourceId: $r) { eventType parentNodeId } }",
            json!({"r": root}),
        )
        .await;
    assert!(!chain["chain"].as_array().unwrap().is_empty());

    // bob sees none of it
    let r = s.gql(Some(&bob), "{ operation(id: \"op-a\") { status } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.gql(Some(&bob), CLAIM, json!({"id": "op-a"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let d = s.data(Some(&bob), "{ events(first: 100) { edges { node { userId } } } }", json!({})).await;
    assert!(d["events"]["edges"].as_array().unwrap().is_empty());
    let r = s.gql(Some(&bob), "{ events(filter: {userId: \"alice\"}) { edges { cursor } } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("FORBIDDEN"), "{r}");
    let r = s.gql(Some(&bob), "query($r: UUID!) { chain(rootSourceId: $r) { eventType } }", json!({"r": root})).await;
    assert!(r["data"]["chain"].as_array().unwrap().is_empty(), "{r}");
    // the admin sees everything (operation ids are per owner: it names the owner)
    let d = s
        .data(Some(&s.admin_token), "{ operation(id: \"op-a\", ownerId: \"alice\") { userId status } }", json!({}))
        .await;
    assert_eq!(d["operation"]["userId"], "alice");
    s.stop();
}

async fn cancel_cascades_to_every_unfinished_descendant(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("carol").await;
    s.data(Some(&t), START, start_input("root")).await;
    let root = s.claim(&t, "root", "w1").await;
    let spawn = "mutation($p: String!, $id: String!, $lt: String) { spawnSubagent(parentOperationId: $p, input: {operationId: $id, kind: SUBAGENT, agentId: \"inbox\"}, leaseToken: $lt) { operation { parentOperationId } } }";
    // a leased parent spawns only with its token
    let r = s.gql(Some(&t), spawn, json!({"p": "root", "id": "child"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "{r}");
    s.data(Some(&t), spawn, json!({"p": "root", "id": "child", "lt": root})).await;
    let child = s.claim(&t, "child", "w1").await;
    s.data(Some(&t), spawn, json!({"p": "child", "id": "grandchild", "lt": child})).await;
    let grandchild = s.claim(&t, "grandchild", "w1").await;
    s.data(Some(&t), spawn, json!({"p": "grandchild", "id": "great", "lt": grandchild})).await;
    let d = s
        .data(
            Some(&t),
            "mutation { cancelOperation(id: \"root\", reason: \"stop\") { operation { status } } }",
            json!({}),
        )
        .await;
    assert_eq!(d["cancelOperation"]["operation"]["status"], "cancelled");
    for id in ["child", "grandchild", "great"] {
        let d = s.data(Some(&t), "query($id: String!) { operation(id: $id) { status } }", json!({"id": id})).await;
        assert_eq!(d["operation"]["status"], "cancelled", "{id}");
    }
    s.stop();
}

/// A subscriber is cut off in the middle of a burst, reconnects from the last position it saw,
/// and receives every event exactly once.
async fn a_resumed_subscription_misses_nothing(db: Db, protocol: &str) {
    let s = Server::start(db).await;
    let t = s.user_token("dave").await;
    s.data(Some(&t), START, start_input("burst")).await;
    let lt = s.claim(&t, "burst", "w1").await;
    let sub = "subscription($from: Int) { events(fromPosition: $from, filter: {streamPrefix: \"operation@dave/burst\"}) { position eventType } }";
    let mut ws = Ws::connect(&s, &t, protocol).await;
    ws.subscribe("1", sub, json!({"from": 0})).await;
    let writer = {
        let base = s.base.clone();
        let t = t.clone();
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            // 60 steps: the subscriber is cut off after 40, while the writer is still going.
            for i in 0..60 {
                let body = json!({"query": STEP, "variables": {"id": "burst", "lt": lt, "n": i}});
                let r: Value = client
                    .post(format!("{base}/graphql"))
                    .bearer_auth(&t)
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                assert!(r.get("errors").is_none(), "{r}");
            }
        })
    };
    let mut seen: Vec<i64> = Vec::new();
    while seen.len() < 40 {
        let p = ws.next_data().await;
        seen.push(p["data"]["events"]["position"].as_i64().unwrap());
    }
    ws.cut().await; // cut off mid-burst
    let mut ws = Ws::connect(&s, &t, protocol).await;
    ws.subscribe("2", sub, json!({"from": seen.last().copied()})).await;
    writer.await.unwrap();
    let expected = s
        .data(
            Some(&t),
            "{ events(first: 500, filter: {streamPrefix: \"operation@dave/burst\"}) { edges { node { position } } } }",
            json!({}),
        )
        .await;
    let expected: Vec<i64> = expected["events"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["position"].as_i64().unwrap())
        .collect();
    while seen.len() < expected.len() {
        let p = ws.next_data().await;
        seen.push(p["data"]["events"]["position"].as_i64().unwrap());
    }
    assert_eq!(seen, expected, "every event exactly once, in order");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), seen.len());
    s.stop();
}

async fn transport_ws(db: Db) {
    a_resumed_subscription_misses_nothing(db, "graphql-transport-ws").await
}

async fn legacy_ws(db: Db) {
    a_resumed_subscription_misses_nothing(db, "graphql-ws").await
}

both!(
    health_ready_and_metrics as server_health_ready_metrics,
    steps_are_decided_on_the_instances_cached_run as server_steps_decided_on_cached_run,
    unauthenticated_and_hostile_requests_write_nothing as server_refuses_bad_requests,
    an_operation_runs_end_to_end_and_stays_private as server_operation_lifecycle_and_isolation,
    cancel_cascades_to_every_unfinished_descendant as server_cancel_cascades,
    transport_ws as server_subscription_resumes_graphql_transport_ws,
    legacy_ws as server_subscription_resumes_graphql_ws
);
