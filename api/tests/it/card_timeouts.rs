//! Human-in-the-loop cards with a deadline end their wait at the deadline, as the card says,
//! once, whatever the restarts and server instances.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const ASK: &str = "mutation($id: String!, $lt: String!, $c: JSON!) { askHuman(id: $id, leaseToken: $lt, card: $c) { operation { status } } }";
const OP: &str = "query($id: String!) { operation(id: $id) { status completionReason history { eventType } cards { cardId outcome closedAt deadline } } }";

async fn ask(s: &Server, token: &str, id: &str, on_timeout: Value) {
    s.data(Some(token), START, json!({"i": {"operationId": id, "kind": "TASK", "agentId": "inbox"}})).await;
    let lt = s.claim(token, id, "w1").await;
    let card = json!({"cardId": "c1", "title": "Deploy?", "kind": "confirm", "timeout": {"afterSecs": 1, "onTimeout": on_timeout}});
    let d = s.data(Some(token), ASK, json!({"id": id, "lt": lt, "c": card})).await;
    assert_eq!(d["askHuman"]["operation"]["status"], "waiting_for_human");
}

fn count(d: &Value, event_type: &str) -> usize {
    d["operation"]["history"].as_array().map_or(0, |h| h.iter().filter(|e| e["eventType"] == event_type).count())
}

/// A card still pending when its run ends is closed `abandoned`, one of `outcome`'s documented
/// values.
async fn a_card_left_by_its_run_is_abandoned(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), START, json!({"i": {"operationId": "left", "kind": "TASK", "agentId": "inbox"}})).await;
    let lt = s.claim(&alice, "left", "w1").await;
    let card = json!({"cardId": "c1", "title": "Deploy?", "kind": "confirm"});
    s.data(Some(&alice), ASK, json!({"id": "left", "lt": lt, "c": card})).await;
    s.data(
        Some(&alice),
        "mutation { cancelOperation(id: \"left\", reason: \"changed plans\") { position } }",
        json!({}),
    )
    .await;
    let query = "{ operation(id: \"left\") { status cards { outcome closedAt } } }";
    let d = s.eventually(&alice, query, |d| d["operation"]["cards"][0]["outcome"] != "pending").await;
    assert_eq!(d["operation"]["cards"][0]["outcome"], "abandoned", "{d}");
    assert!(d["operation"]["cards"][0]["closedAt"].is_string(), "{d}");
    s.stop();
}

both!(a_card_left_by_its_run_is_abandoned as a_card_left_by_its_run_is_abandoned);

async fn cards_time_out_at_their_deadline_once(db: Db) {
    let mut s = Server::start(db).await;
    let sibling = s.sibling().await;
    let alice = s.user_token("alice").await;
    ask(&s, &alice, "go-on", json!({"action": "continue"})).await;
    ask(&s, &alice, "default", json!({"action": "use_default", "answer": {"kind": "confirm", "confirmed": false}}))
        .await;
    ask(&s, &alice, "fails", json!({"action": "fail"})).await;
    ask(&s, &alice, "cancels", json!({"action": "cancel"})).await;
    let d = s.data(Some(&alice), "{ pendingCards { edges { node { operationId } } } }", json!({})).await;
    assert_eq!(d["pendingCards"]["edges"].as_array().map(Vec::len), Some(4), "{d}");
    // Restart one instance while the deadlines pass; the other runs on.
    s.restart().await;
    for (id, status) in [("go-on", "running"), ("default", "running"), ("fails", "error"), ("cancels", "cancelled")] {
        let query = format!("{{ operation(id: \"{id}\") {{ status cards {{ cardId outcome closedAt deadline }} }} }}");
        // Status from the run's stream, cards from the read model (which follows shortly).
        let d = s
            .eventually(&alice, &query, |d| {
                d["operation"]["status"] == status && d["operation"]["cards"][0]["outcome"] != "pending"
            })
            .await;
        assert_eq!(d["operation"]["cards"][0]["outcome"], "timed_out", "{id}: {d}");
        assert_eq!(
            d["operation"]["cards"][0]["closedAt"], d["operation"]["cards"][0]["deadline"],
            "{id}: ends at the deadline: {d}"
        );
    }
    let d = s
        .eventually(&alice, "{ pendingCards { edges { node { operationId } } } }", |d| {
            d["pendingCards"]["edges"] == json!([])
        })
        .await;
    assert_eq!(d["pendingCards"]["edges"], json!([]), "no card is pending any more: {d}");
    // A few more passes on both instances change nothing: each card timed out exactly once.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    for id in ["go-on", "default", "fails", "cancels"] {
        let d = sibling.data(Some(&alice), OP, json!({"id": id})).await;
        assert_eq!(count(&d, "operation.human_wait_timed_out"), 1, "{id}: {d}");
    }
    let d = s.data(Some(&alice), OP, json!({"id": "fails"})).await;
    assert_eq!(count(&d, "operation.failed"), 1, "{d}");
    // The resumed run is claimed again and goes on.
    let lt = s.claim(&alice, "go-on", "w2").await;
    s.data(
        Some(&alice),
        "mutation($lt: String!) { completeOperation(id: \"go-on\", leaseToken: $lt) { position } }",
        json!({"lt": lt}),
    )
    .await;
    sibling.stop();
    s.stop();
}

both!(cards_time_out_at_their_deadline_once as cards_time_out_at_their_deadline_once);
