//! Agent ids per owner in analytics: two users' `a1` are two buckets of an admin's report by
//! agent (each naming its owner), whichever rollup table the report reads; a report past
//! `--max-analytics-cells` is refused with LIMIT.

use super::*;

const START: &str = "mutation($id: String!, $m: String!) { startOperation(input: {operationId: $id, kind: TASK, \
    agentId: \"a1\", model: $m, provider: \"p1\"}) { position } }";
const STEP: &str = "mutation($id: String!, $lt: String!, $n: Int!) { reportStep(id: $id, leaseToken: $lt, \
    phase: ACTING, usage: {inputTokens: $n, costMicros: 1}) { position } }";
const COMPLETE: &str =
    "mutation($id: String!, $lt: String!) { completeOperation(id: $id, leaseToken: $lt, result: \"ok\") { position } }";
const REPORT: &str = "query($i: AnalyticsInput) { analytics(input: $i) { total { runs inputTokens } \
    buckets { agentId userId model status figures { runs inputTokens completionReasons } } } }";

/// Run `id` of `token`'s user with agent `a1` and `model` to its end: completed after one step
/// of `tokens` input tokens, or cancelled before any step.
async fn run(s: &Server, token: &str, id: &str, model: &str, tokens: Option<i64>) {
    s.data(Some(token), START, json!({"id": id, "m": model})).await;
    match tokens {
        Some(n) => {
            let lt = s.claim(token, id, "w1").await;
            s.data(Some(token), STEP, json!({"id": id, "lt": lt, "n": n})).await;
            s.data(Some(token), COMPLETE, json!({"id": id, "lt": lt})).await;
        }
        None => {
            s.data(Some(token), "mutation($id: String!) { cancelOperation(id: $id) { position } }", json!({"id": id}))
                .await;
        }
    }
}

/// The buckets of a report as (agentId, userId, model, status, runs, inputTokens).
fn cells(report: &Value) -> Vec<(Value, Value, Value, Value, Value, Value)> {
    report["analytics"]["buckets"]
        .as_array()
        .map(|b| {
            b.iter()
                .map(|b| {
                    let f = &b["figures"];
                    let v = |k: &str| b[k].clone();
                    (v("agentId"), v("userId"), v("model"), v("status"), f["runs"].clone(), f["inputTokens"].clone())
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn agent_ids_stay_apart_in_analytics(db: Db) {
    let s = Server::start_with(db, &["--max-analytics-cells", "3"]).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();
    let register = "mutation($i: JSON!) { registerAgent(input: $i) { agent { id } } }";
    for token in [&alice, &bob] {
        s.data(Some(token), register, json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "A1"}}})).await;
    }
    run(&s, &alice, "op1", "m1", Some(10)).await;
    run(&s, &alice, "op2", "m2", None).await;
    run(&s, &bob, "op1", "m1", Some(20)).await;
    let day = |group_by: Value, extra: Value| {
        let mut i = json!({"granularity": "DAY", "groupBy": group_by});
        if let (Some(i), Some(extra)) = (i.as_object_mut(), extra.as_object()) {
            i.extend(extra.clone());
        }
        json!({"i": i})
    };
    s.eventually(&admin, REPORT, |d| d["analytics"]["total"]["runs"] == 3).await;
    let ask = |token: &str, v: Value| {
        let (s, token) = (&s, token.to_string());
        async move { s.data(Some(&token), REPORT, v).await }
    };
    let (n, m1, m2, a1) = (Value::Null, json!("m1"), json!("m2"), json!("a1"));
    let (alice_id, bob_id) = (json!("alice"), json!("bob"));

    // By agent (the agent rollups), by agent and status (the per-owner rollups): one bucket per
    // owner's a1, each naming its owner, the admin's total theirs together.
    let by_agent = ask(&admin, day(json!(["AGENT"]), json!({}))).await;
    assert_eq!(
        cells(&by_agent),
        vec![
            (a1.clone(), alice_id.clone(), n.clone(), n.clone(), json!(2), json!(10)),
            (a1.clone(), bob_id.clone(), n.clone(), n.clone(), json!(1), json!(20)),
        ],
        "{by_agent}"
    );
    assert_eq!(by_agent["analytics"]["total"], json!({"runs": 3, "inputTokens": 30}), "{by_agent}");
    let by_status = ask(&admin, day(json!(["AGENT", "STATUS"]), json!({}))).await;
    assert_eq!(
        cells(&by_status),
        vec![
            (a1.clone(), alice_id.clone(), n.clone(), json!("cancelled"), json!(1), n.clone()),
            (a1.clone(), alice_id.clone(), n.clone(), json!("done"), json!(1), json!(10)),
            (a1.clone(), bob_id.clone(), n.clone(), json!("done"), json!(1), json!(20)),
        ],
        "{by_status}"
    );
    // By model (the fleet rollups, no agents): every owner's runs of a model together.
    let by_model = ask(&admin, day(json!(["MODEL"]), json!({}))).await;
    assert_eq!(
        cells(&by_model),
        vec![
            (n.clone(), n.clone(), m1.clone(), n.clone(), json!(2), json!(30)),
            (n.clone(), n.clone(), m2.clone(), n.clone(), json!(1), n.clone()),
        ],
        "{by_model}"
    );
    // Naming agent a1: every owner's a1.
    let named = ask(&admin, day(json!([]), json!({"agentId": "a1", "model": "m1"}))).await;
    assert_eq!(named["analytics"]["total"], json!({"runs": 2, "inputTokens": 30}), "{named}");
    // Each user sees their own a1 only.
    for (token, who, runs, tokens) in [(&alice, &alice_id, 2, 10), (&bob, &bob_id, 1, 20)] {
        let mine = ask(token, day(json!(["AGENT"]), json!({}))).await;
        assert_eq!(
            cells(&mine),
            vec![(a1.clone(), who.clone(), n.clone(), n.clone(), json!(runs), json!(tokens))],
            "{mine}"
        );
    }

    // Past the bound: with bob's a1 on m2 too, the admin's report by agent reads 4 cells, more
    // than 3; naming a model reads 2.
    run(&s, &bob, "op2", "m2", Some(5)).await;
    s.eventually(&admin, REPORT, |d| d["analytics"]["total"]["runs"] == 4).await;
    let big = s.gql(Some(&admin), REPORT, day(json!(["AGENT"]), json!({}))).await;
    assert_eq!(support::error_code(&big).as_deref(), Some("LIMIT"), "{big}");
    let narrowed = ask(&admin, day(json!(["AGENT"]), json!({"model": "m1"}))).await;
    assert_eq!(cells(&narrowed).len(), 2, "{narrowed}");
    s.stop();
}

both!(agent_ids_stay_apart_in_analytics as agent_ids_stay_apart_in_analytics);
