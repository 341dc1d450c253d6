//! `reportBatch`: a worker's reports on its run in one request, decided in order against the
//! evolving run and appended in one atomic write; a refused item (anywhere in the batch), a bad
//! lease token or a batch past the limit writes nothing; a resent batch answers what the first
//! wrote.

use crate::support;

use agentlog_eventlog::{StoreOptions, open_store};
use agentlog_projections::ReadDb;
use serde_json::{Value, json};
use support::{Db, Server, error_code, read_log};

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const BATCH: &str = "mutation($id: String!, $lt: String!, $items: [BatchItemInput!]!, $r: String) { reportBatch(operationId: $id, leaseToken: $lt, items: $items, requestId: $r) { position events operation { status stepCount totalTokens costMicros } } }";

async fn setup(s: &Server, token: &str, max_steps: Option<i64>) -> String {
    let input = json!({"agentId": "a1", "config": {"slug": "a1", "title": "Helper", "model": "m1", "provider": "p1"}});
    s.data(Some(token), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": input})).await;
    s.data(Some(token), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let mut start = json!({"operationId": "op1", "kind": "CONVERSATION", "agentId": "a1", "topicId": "c1"});
    if let Some(n) = max_steps {
        start["maxSteps"] = json!(n);
    }
    s.data(Some(token), START, json!({"i": start})).await;
    s.claim(token, "op1", "w1").await
}

fn step(input: i64, cost: i64) -> Value {
    json!({"step": {"phase": "ACTING", "usage": {"inputTokens": input, "totalTokens": input, "costMicros": cost},
        "toolCalls": [{"id": format!("call-{input}"), "name": "search", "status": "ok"}]}})
}

fn message(id: &str, role: &str, parent: Option<&str>) -> Value {
    json!({"message": {"messageId": id, "role": role, "content": format!("{id} text"), "operationId": "op1", "parentId": parent}})
}

async fn log_len(s: &Server) -> usize {
    read_log(&s.db).await.len()
}

async fn message_count(s: &Server, token: &str) -> i64 {
    let d = s.data(Some(token), "{ conversation(topicId: \"c1\") { messageCount } }", json!({})).await;
    d["conversation"]["messageCount"].as_i64().unwrap()
}

async fn a_batch_is_decided_in_order_and_appended_at_once(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let lease = setup(&s, &alice, None).await;
    let before = log_len(&s).await;
    let items = json!([
        {"phase": "RESPONDING"},
        step(3, 10),
        message("m1", "assistant", None),
        message("m2", "tool", Some("m1")),
        {"plan": {"explanation": "two steps", "steps": [{"text": "look", "status": "in_progress"}]}},
        {"todos": [{"id": "t1", "text": "read", "status": "completed"}]},
        {"artifact": {"artifactId": "a1", "title": "report", "kind": "document", "contentRef": "doc-1"}},
        step(4, 5),
    ]);
    let vars = json!({"id": "op1", "lt": lease, "items": items, "r": "batch-1"});
    let d = s.data(Some(&alice), BATCH, vars.clone()).await;
    let out = &d["reportBatch"];
    assert_eq!(out["events"], 8, "{out}");
    assert_eq!(out["operation"]["stepCount"], 2, "{out}");
    assert_eq!(out["operation"]["totalTokens"], 7, "usage summed in order: {out}");
    assert_eq!(out["operation"]["costMicros"], 15, "{out}");
    let log = read_log(&s.db).await;
    assert_eq!(log.len(), before + 8);
    // One append: consecutive positions, the run's events in item order, then its messages.
    let batch: Vec<_> = log[before..].iter().collect();
    assert!(batch.windows(2).all(|w| w[1].position == w[0].position + 1));
    assert_eq!(batch.last().unwrap().position, out["position"].as_i64().unwrap());
    let types: Vec<&str> = batch.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "operation.phase_changed",
            "operation.step_recorded",
            "operation.plan_updated",
            "operation.todos_updated",
            "operation.artifact_recorded",
            "operation.step_recorded",
            "conversation.message_appended",
            "conversation.message_appended",
        ],
    );
    assert!(batch.iter().all(|e| e.metadata.actor.id == "w1"), "recorded as the lease's worker");
    let d = s.data(Some(&alice), "{ operation(id: \"op1\") { phase plan todos artifacts } }", json!({})).await;
    assert_eq!(d["operation"]["plan"]["steps"][0]["text"], "look", "{d}");
    assert_eq!(d["operation"]["todos"][0]["id"], "t1", "{d}");
    assert_eq!(d["operation"]["artifacts"][0]["artifactId"], "a1", "{d}");
    assert_eq!(message_count(&s, &alice).await, 2);

    // Resent (its answer lost): the same answer, nothing written again.
    let again = s.data(Some(&alice), BATCH, vars).await;
    assert_eq!(again["reportBatch"]["position"], out["position"], "{again}");
    assert_eq!(again["reportBatch"]["events"], 0, "{again}");
    assert_eq!(log_len(&s).await, before + 8);
    s.stop();
}

async fn a_refused_item_writes_nothing(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let lease = setup(&s, &alice, Some(3)).await;
    s.data(Some(&alice), BATCH, json!({"id": "op1", "lt": lease, "items": [step(1, 1)]})).await;
    let before = log_len(&s).await;
    let refused = |items: Value, lt: &str| json!({"id": "op1", "lt": lt, "items": items});
    let cases = [
        // the domain refuses an item in the middle: every item before it is dropped too
        (
            "duplicate todo ids",
            refused(
                json!([step(2, 1), {"todos": [{"id": "t", "text": "a", "status": "pending"}, {"id": "t", "text": "b", "status": "pending"}]}, step(3, 1)]),
                &lease,
            ),
            "VALIDATION",
            Some("items[1].todos"),
        ),
        (
            "a user's message",
            refused(json!([message("m1", "assistant", None), message("m2", "user", Some("m1"))]), &lease),
            "VALIDATION",
            Some("items[1].message"),
        ),
        (
            "two fields in one item",
            refused(json!([step(2, 1), {"phase": "ACTING", "plan": {"steps": []}}]), &lease),
            "VALIDATION",
            Some("items[1]"),
        ),
        (
            "a negative usage",
            refused(json!([step(2, 1), step(-1, 1)]), &lease),
            "VALIDATION",
            Some("items[1].step.usage.inputTokens"),
        ),
        (
            "an unreadable artifact",
            refused(json!([step(2, 1), {"artifact": {"title": 3}}]), &lease),
            "VALIDATION",
            Some("items[1].artifact"),
        ),
        // maxSteps 3: the third step ends the run, the fourth is refused on the ended run
        ("a step after the run ended", refused(json!([step(2, 1), step(3, 1), step(4, 1)]), &lease), "CONFLICT", None),
        ("a wrong lease token", refused(json!([step(2, 1)]), "lt_guess"), "CONFLICT", None),
        ("no items", refused(json!([]), &lease), "VALIDATION", Some("items")),
    ];
    for (name, vars, code, field) in cases {
        let r = s.gql(Some(&alice), BATCH, vars).await;
        assert_eq!(error_code(&r).as_deref(), Some(code), "{name}: {r}");
        if let Some(field) = field {
            let message = r["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(message.contains(field), "{name}: the error names {field}: {r}");
        }
        assert_eq!(log_len(&s).await, before, "{name}: nothing written");
    }
    assert_eq!(message_count(&s, &alice).await, 0);
    let d = s.data(Some(&alice), "{ operation(id: \"op1\") { status stepCount } }", json!({})).await;
    assert_eq!(d["operation"]["stepCount"], 1, "{d}");
    // the same steps, within maxSteps, are accepted: the third ends the run (max_steps)
    let d = s.data(Some(&alice), BATCH, refused(json!([step(2, 1), step(3, 1)]), &lease)).await;
    assert_eq!(d["reportBatch"]["operation"]["status"], "done", "{d}");
    s.stop();
}

async fn a_batch_past_the_limit_is_refused_before_it_runs(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let lease = setup(&s, &alice, None).await;
    let before = log_len(&s).await;
    // 501 items, the default limit being 500; an unknown run: refused on its size before it is read
    let items: Vec<Value> = (0..501).map(|_| json!({"step": {"phase": "ACTING"}})).collect();
    for id in ["op1", "no-such-run"] {
        let r = s.gql(Some(&alice), BATCH, json!({"id": id, "lt": lease, "items": items})).await;
        assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
        assert!(r["errors"][0]["message"].as_str().unwrap_or_default().contains("1 to 500"), "{r}");
    }
    assert_eq!(log_len(&s).await, before);
    // 500 are accepted
    let d = s.data(Some(&alice), BATCH, json!({"id": "op1", "lt": lease, "items": items[..500]})).await;
    assert_eq!(d["reportBatch"]["events"], 500, "{d}");
    s.stop();
}

/// A follower handles a burst of facts (a batch's steps: the orchestration reactor's) and then
/// saves its checkpoint once, at the burst's last fact: the checkpoint reaches it, it does not
/// stay at an earlier fact.
async fn a_followers_checkpoint_reaches_the_last_fact_of_a_burst(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let lease = setup(&s, &alice, None).await;
    let items: Vec<Value> = (1..=40).map(|i| step(i, 1)).collect();
    let d = s.data(Some(&alice), BATCH, json!({"id": "op1", "lt": lease, "items": items})).await;
    let last = d["reportBatch"]["position"].as_i64().expect("the batch's last position");
    let store = open_store(&s.db.url(), StoreOptions::default()).await.expect("open the log");
    let read = ReadDb::from(store.database());
    let mut at = 0;
    for _ in 0..200 {
        let rows = read
            .fetch("SELECT position FROM reactor_checkpoints WHERE name = 'orchestration'", &[])
            .await
            .expect("checkpoint");
        at = rows.first().and_then(|r| r.i64(0)).unwrap_or(0);
        if at >= last {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    store.close().await;
    assert_eq!(at, last, "the orchestration follower's checkpoint stopped short of the burst's last step");
    s.stop();
}

both!(
    a_batch_is_decided_in_order_and_appended_at_once as a_batch_is_decided_in_order_and_appended_at_once,
    a_refused_item_writes_nothing as a_refused_item_writes_nothing,
    a_batch_past_the_limit_is_refused_before_it_runs as a_batch_past_the_limit_is_refused_before_it_runs,
    a_followers_checkpoint_reaches_the_last_fact_of_a_burst as a_followers_checkpoint_reaches_the_last_fact_of_a_burst
);
