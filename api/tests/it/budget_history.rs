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

/// A budget's standing counts every step of its scope in its period — steps reported before
/// the budget existed too — in every kind of scope, in a zone whose midnight is not on the hour,
/// and agrees with its history, which sums the steps themselves.
async fn a_standing_counts_every_step_of_its_scope(db: Db) {
    // The steps must land in one day of each zone used: near a zone's midnight, wait for it.
    for zone in [chrono_tz::UTC, chrono_tz::Asia::Kathmandu, chrono_tz::Australia::Eucla] {
        let local = chrono::Utc::now().with_timezone(&zone);
        let left = 86_400 - i64::from(chrono::Timelike::num_seconds_from_midnight(&local));
        if left < 90 {
            tokio::time::sleep(std::time::Duration::from_secs(left.unsigned_abs() + 1)).await;
        }
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();
    s.data(
        Some(&alice),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "a1"}}}),
    )
    .await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "x"});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    let runs = [
        (&alice, "op1", json!({"operationId": "op1", "kind": "TASK", "agentId": "a1"}), [30, 50]),
        (&alice, "op2", json!({"operationId": "op2", "kind": "TASK", "agentId": "task-agent", "taskId": "t1"}), [7, 0]),
        (&bob, "op3", json!({"operationId": "op3", "kind": "TASK", "agentId": "inbox"}), [100, 1]),
    ];
    for (token, id, input, costs) in &runs {
        s.data(
            Some(token),
            "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }",
            json!({"i": input}),
        )
        .await;
        let lease = s.claim(token, id, "w1").await;
        for cost in costs {
            s.data(Some(token), STEP, json!({"id": id, "l": lease, "c": cost})).await;
        }
    }
    // The budgets come after the steps.
    let budgets = [
        (&alice, json!({"id": "mine", "scope": "USER", "period": "TOTAL", "limitCostMicros": 1000})),
        (
            &alice,
            json!({"id": "a1", "scope": "AGENT", "scopeId": "a1", "period": "DAY", "timeZone": "Asia/Kathmandu", "limitCostMicros": 1000}),
        ),
        (
            &alice,
            json!({"id": "task", "scope": "TASK", "scopeId": "t1", "period": "MONTH", "timeZone": "Australia/Eucla", "limitCostMicros": 1000}),
        ),
        (&admin, json!({"id": "all", "scope": "GLOBAL", "period": "MONTH", "limitCostMicros": 1000})),
        (&bob, json!({"id": "bobs", "scope": "USER", "period": "DAY", "limitCostMicros": 1000})),
    ];
    for (token, b) in &budgets {
        s.data(Some(token), SET, json!({"i": b})).await;
    }
    let spent = |d: &Value| (d["budget"]["spent"]["costMicros"].clone(), d["budget"]["spent"]["tokens"].clone());
    let q = "query($id: String!) { budget(id: $id) { spent { costMicros tokens } } }";
    for (token, id, expected) in [
        (&alice, "mine", (87, 40)),
        (&alice, "a1", (80, 20)),
        (&alice, "task", (7, 20)),
        (&alice, "all", (188, 60)),
        (&bob, "bobs", (101, 20)),
    ] {
        let d = s.data(Some(token), q, json!({"id": id})).await;
        assert_eq!(spent(&d), (json!(expected.0), json!(expected.1)), "{id}: {d}");
    }
    // A total budget's history from a moment inside a quarter hour: the spend before it is
    // counted from the rollups and the steps of its quarter, its running total ends at `spent`.
    let now = chrono::Utc::now();
    let from = (now - chrono::Duration::milliseconds(1)).to_rfc3339();
    let vars = json!({"id": "mine", "from": from, "to": (now + chrono::Duration::minutes(1)).to_rfc3339()});
    let d = s.data(Some(&alice), HISTORY, vars).await;
    let last = d["budget"]["history"].as_array().and_then(|h| h.last().cloned());
    assert!(last.is_none_or(|l| l["counted"]["costMicros"] == 87), "{d}");
    let vars = json!({"id": "mine", "from": (now - chrono::Duration::days(1)).to_rfc3339()});
    let d = s.data(Some(&alice), HISTORY, vars).await;
    let total: i64 =
        d["budget"]["history"].as_array().into_iter().flatten().filter_map(|p| p["costMicros"].as_i64()).sum();
    assert_eq!(total, 87, "{d}");
    s.stop();
}

both!(spend_over_time_against_the_limit as spend_over_time_against_the_limit);
both!(a_standing_counts_every_step_of_its_scope as a_standing_counts_every_step_of_its_scope);
