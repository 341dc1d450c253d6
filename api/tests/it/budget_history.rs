//! A budget's spend over time against its limit, through the real server: `budget(id) {
//! history(from, to) }` buckets the steps its scope's runs reported into the budget's periods
//! (a total budget: days with the running total), owner-scoped like the budget itself.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, error_code};

const SET: &str = "mutation($i: BudgetInput!) { setBudget(input: $i) { position } }";
const HISTORY: &str = "query($id: String!, $from: DateTime!, $to: DateTime, $o: String) { budget(id: $id, ownerId: $o) { history(from: $from, to: $to) { start end costMicros tokens counted { costMicros remainingCostMicros warned reached } } } }";
const STEP: &str = "mutation($id: String!, $l: String!, $c: Int!) { reportStep(id: $id, leaseToken: $l, phase: ACTING, usage: {costMicros: $c, totalTokens: 10}) { operation { status } } }";

async fn spend_over_time_against_the_limit(db: Db) {
    // The spend below must land on one UTC day: a run that would straddle midnight waits for it.
    let now = chrono::Utc::now();
    let midnight = (now.date_naive() + chrono::Duration::days(1)).and_time(chrono::NaiveTime::MIN).and_utc();
    if midnight - now < chrono::Duration::seconds(60) {
        tokio::time::sleep((midnight - now).to_std().unwrap_or_default() + std::time::Duration::from_secs(1)).await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    s.data(
        Some(&alice),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "a1", "model": "m1", "provider": "p1"}}}),
    )
    .await;
    for (id, period) in [("daily", "DAY"), ("ever", "TOTAL")] {
        let b = json!({"id": id, "scope": "AGENT", "scopeId": "a1", "period": period, "limitCostMicros": 100});
        s.data(Some(&alice), SET, json!({"i": b})).await;
    }
    s.data(
        Some(&alice),
        "mutation { startOperation(input: {operationId: \"op1\", kind: TASK, agentId: \"a1\"}) { position } }",
        json!({}),
    )
    .await;
    let lease = s.claim(&alice, "op1", "w1").await;
    for cost in [30, 50] {
        s.data(Some(&alice), STEP, json!({"id": "op1", "l": lease, "c": cost})).await;
    }
    let now = chrono::Utc::now();
    let from = (now - chrono::Duration::days(2)).to_rfc3339();
    let vars = |id: &str| json!({"id": id, "from": from, "to": (now + chrono::Duration::minutes(1)).to_rfc3339()});
    let d = s.data(Some(&alice), HISTORY, vars("daily")).await;
    let history = d["budget"]["history"].as_array().cloned().unwrap_or_default();
    assert_eq!(history.len(), 1, "one day with spend: {d}");
    let day = &history[0];
    assert_eq!((day["costMicros"].clone(), day["tokens"].clone()), (json!(80), json!(20)), "{d}");
    assert_eq!(
        day["counted"],
        json!({"costMicros": 80, "remainingCostMicros": 20, "warned": true, "reached": false}),
        "{d}"
    );
    let start = chrono::DateTime::parse_from_rfc3339(day["start"].as_str().unwrap_or_default()).expect("start");
    let end = chrono::DateTime::parse_from_rfc3339(day["end"].as_str().unwrap_or_default()).expect("end");
    assert!(start <= now && now < end && (end - start).num_hours() == 24, "{d}");

    // A total budget: its days, each counting everything up to then.
    let d = s.data(Some(&alice), HISTORY, vars("ever")).await;
    assert_eq!(d["budget"]["history"][0]["counted"]["costMicros"], 80, "{d}");
    // Nothing before the range; a range the wrong way round is VALIDATION.
    let empty = json!({"id": "daily", "from": (now - chrono::Duration::days(9)).to_rfc3339(), "to": from});
    assert_eq!(s.data(Some(&alice), HISTORY, empty).await["budget"]["history"], json!([]));
    let backwards = json!({"id": "daily", "from": now.to_rfc3339(), "to": from});
    let r = s.gql(Some(&alice), HISTORY, backwards).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    // Someone else's budget has no history to show.
    let r = s.gql(Some(&bob), HISTORY, vars("daily")).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    // An admin sees every budget's, naming its owner (budget ids are per owner).
    let admin = s.admin_token.clone();
    let mut theirs = vars("daily");
    theirs["o"] = json!("alice");
    let d: Value = s.data(Some(&admin), HISTORY, theirs).await;
    assert_eq!(d["budget"]["history"][0]["costMicros"], 80, "{d}");
    s.stop();
}

both!(spend_over_time_against_the_limit as spend_over_time_against_the_limit);
