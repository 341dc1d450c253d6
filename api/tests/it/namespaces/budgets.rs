//! Budget ids per owner; a global budget is its admin's and limits everyone.

use super::{
    agents::{REGISTER, agent_input},
    *,
};

const SET_BUDGET: &str = "mutation($i: BudgetInput!, $o: String) { setBudget(input: $i, ownerId: $o) \
    { position budget { id userId scopeId limitCostMicros } } }";
const BUDGET: &str = "query($o: String) { budget(id: \"b1\", ownerId: $o) { userId scope limitCostMicros } }";

fn user_budget(id: &str, limit: i64) -> Value {
    json!({"id": id, "scope": "USER", "period": "TOTAL", "limitCostMicros": limit})
}

/// Start operation `id` of the caller's agent `a1`, claim it and report one step costing
/// `cost`; answers the start's error code (`None`: started and stepped).
async fn spend(s: &Server, token: &str, id: &str, cost: i64) -> Option<String> {
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    let r = s.gql(Some(token), start, json!({"i": {"operationId": id, "kind": "TASK", "agentId": "a1"}})).await;
    if let Some(code) = support::error_code(&r) {
        return Some(code);
    }
    let lease = s.claim(token, id, "w1").await;
    let step = "mutation($id: String!, $l: String!, $c: Int!) { reportStep(id: $id, leaseToken: $l, phase: ACTING, \
        usage: {costMicros: $c, totalTokens: 1}) { position } }";
    s.data(Some(token), step, json!({"id": id, "l": lease, "c": cost})).await;
    None
}

/// Budget ids are per owner: bob sets alice's `b1` as his own, and each limits its owner's runs
/// only; another user's `b1` answers as an unknown id. A global budget is its admin's and still
/// limits every user's runs, summed over all of them.
async fn budget_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();
    for token in [&alice, &bob] {
        s.data(Some(token), REGISTER, json!({"i": agent_input("a1", "worker")})).await;
    }

    let a = s.data(Some(&alice), SET_BUDGET, json!({"i": user_budget("b1", 1000)})).await;
    let b = s.data(Some(&bob), SET_BUDGET, json!({"i": user_budget("b1", 50)})).await;
    assert_eq!(a["setBudget"]["budget"]["userId"], "alice", "{a}");
    assert_eq!(b["setBudget"]["budget"], json!({"id": "b1", "userId": "bob", "scopeId": "bob", "limitCostMicros": 50}));
    // The same terms again are the owner's own budget unchanged.
    let again = s.data(Some(&alice), SET_BUDGET, json!({"i": user_budget("b1", 1000)})).await;
    assert_eq!(again["setBudget"]["position"], 0, "{again}");
    for (token, who, limit) in [(&alice, "alice", 1000), (&bob, "bob", 50)] {
        let mine = s.data(Some(token), BUDGET, json!({})).await;
        assert_eq!(mine["budget"], json!({"userId": who, "scope": "USER", "limitCostMicros": limit}), "{mine}");
        let list = s.data(Some(token), "{ budgets { edges { node { userId } } } }", json!({})).await;
        assert_eq!(list["budgets"]["edges"], json!([{"node": {"userId": who}}]), "{list}");
    }

    // Naming another owner: a user finds nothing (as for an unknown id); an admin without
    // `ownerId` finds nothing of its own there.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    for template in [
        "mutation($o: String) { removeBudget(id: \"{ID}\", ownerId: $o) { position } }",
        "query($o: String) { budget(id: \"{ID}\", ownerId: $o) { id } }",
    ] {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "b1"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "b1"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        let own = s.gql(Some(&admin), &template.replace("{ID}", "b1"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");

    // Bob's `b1` limits bob's runs, not alice's.
    assert_eq!(spend(&s, &bob, "bob-1", 60).await, None);
    assert_eq!(spend(&s, &bob, "bob-2", 1).await.as_deref(), Some("LIMIT"));
    assert_eq!(spend(&s, &alice, "alice-1", 60).await, None);
    // An admin names alice to change hers; bob's stays.
    let raised = s.data(Some(&admin), SET_BUDGET, json!({"i": user_budget("b1", 2000), "o": "alice"})).await;
    assert_eq!(raised["setBudget"]["budget"]["userId"], "alice", "{raised}");
    let q = "query($o: String) { budget(id: \"b1\", ownerId: $o) { limitCostMicros } }";
    assert_eq!(s.data(Some(&admin), q, json!({"o": "alice"})).await["budget"]["limitCostMicros"], 2000);
    assert_eq!(s.data(Some(&bob), q, json!({})).await["budget"]["limitCostMicros"], 50);
    let remove = "mutation($o: String) { removeBudget(id: \"b1\", ownerId: $o) { budget { id } } }";
    let removed = s.data(Some(&admin), remove, json!({"o": "bob"})).await;
    assert_eq!(removed["removeBudget"]["budget"], Value::Null, "{removed}");
    assert_eq!(spend(&s, &bob, "bob-3", 1).await, None, "bob's limit is gone");

    // A global budget is the admin's; it limits everyone's runs, summed: 60 + 60 + 1 of 150.
    let global = json!({"id": "g1", "scope": "GLOBAL", "period": "TOTAL", "limitCostMicros": 150});
    let g = s.data(Some(&admin), SET_BUDGET, json!({"i": global})).await;
    let admin_id = g["setBudget"]["budget"]["userId"].as_str().unwrap_or_default().to_string();
    let seen = s.data(Some(&bob), "{ budget(id: \"g1\") { userId scope } }", json!({})).await;
    assert_eq!(seen["budget"], json!({"userId": admin_id, "scope": "GLOBAL"}), "everyone sees it: {seen}");
    assert_eq!(spend(&s, &alice, "alice-2", 40).await, None);
    assert_eq!(spend(&s, &bob, "bob-4", 1).await.as_deref(), Some("LIMIT"), "alice's spend counts for bob too");
    assert_eq!(spend(&s, &alice, "alice-3", 1).await.as_deref(), Some("LIMIT"));
    // Bob's own `g1` is his; the global one still limits him.
    let mine = json!({"id": "g1", "scope": "USER", "period": "TOTAL", "limitCostMicros": 100000});
    let made = s.data(Some(&bob), SET_BUDGET, json!({"i": mine})).await;
    assert_eq!(made["setBudget"]["budget"]["userId"], "bob", "{made}");
    let seen = s.data(Some(&bob), "{ budget(id: \"g1\") { userId scope } }", json!({})).await;
    assert_eq!(seen["budget"], json!({"userId": "bob", "scope": "USER"}), "his own first: {seen}");
    assert_eq!(spend(&s, &bob, "bob-5", 1).await.as_deref(), Some("LIMIT"));

    let db = s.stop();
    let log = support::read_log(&db).await;
    let set: Vec<(&str, &str)> =
        log.iter().filter(|e| e.event_type == "budget.set").map(|e| (e.stream_id.as_str(), e.user_id())).collect();
    let global_stream = format!("budget@{admin_id}/g1");
    assert_eq!(
        set,
        [
            ("budget@alice/b1", "alice"),
            ("budget@bob/b1", "bob"),
            ("budget@alice/b1", "alice"),
            (global_stream.as_str(), admin_id.as_str()),
            ("budget@bob/g1", "bob")
        ]
    );
    support::verify_read_models(&db).await;
}

/// A log written before budget ids were per owner: alice's budget in the global stream
/// `budget-old` stays hers (read, changed and removed there); bob sets his own `old`.
async fn legacy_global_budget_stream_stays_its_owners(db: Db) {
    use agentlog_domain::budgets::{Budget, BudgetCommand, BudgetSpec};
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let set = BudgetCommand::Set {
            spec: BudgetSpec::user("old", "alice", Some(100), None),
            scope_owner: Some("alice".into()),
        };
        state.handler.execute_stream::<Budget>("budget-old", &set, &ctx).await.expect("legacy budget");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ budget(id: \"old\") { userId limitCostMicros } }";
    assert_eq!(s.data(Some(&alice), q, json!({})).await["budget"], json!({"userId": "alice", "limitCostMicros": 100}));
    s.data(Some(&alice), SET_BUDGET, json!({"i": user_budget("old", 200)})).await;
    let r = s.gql(Some(&bob), q, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let remove = "mutation { removeBudget(id: \"old\") { position } }";
    let r = s.gql(Some(&bob), remove, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let b = s.data(Some(&bob), SET_BUDGET, json!({"i": user_budget("old", 7)})).await;
    assert_eq!(b["setBudget"]["budget"]["userId"], "bob", "{b}");
    assert_eq!(s.data(Some(&alice), q, json!({})).await["budget"]["limitCostMicros"], 200);
    s.data(Some(&alice), remove, json!({})).await;
    assert_eq!(s.data(Some(&bob), q, json!({})).await["budget"]["limitCostMicros"], 7, "bob's stays");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("budget.set"), ["budget-old", "budget-old", "budget@bob/old"]);
    assert_eq!(streams("budget.removed"), ["budget-old"]);
    support::verify_read_models(&db).await;
}

both!(
    budget_ids_are_per_owner as budget_ids_per_owner,
    legacy_global_budget_stream_stays_its_owners as legacy_budget_stream_stays_its_owners
);
