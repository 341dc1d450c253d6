//! A resent request (same `requestId`) over the real server: whether the command writes one
//! stream or several, the resend is answered with the first attempt's position and writes
//! nothing — what a client that lost its answer in a crash relies on. A `requestId` reused for
//! another target is refused; request ids are per user.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, error_code};

const START: &str = "mutation($i: StartOperationInput!, $r: String) { startOperation(input: $i, requestId: $r) { position operation { id status } } }";

async fn head(s: &Server) -> i64 {
    s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await["headPosition"].as_i64().unwrap_or(-1)
}

/// Send `query` twice; both answers are the same, and the second writes nothing.
async fn twice(s: &Server, token: &str, name: &str, query: &str, variables: Value) -> Value {
    let first = s.gql(Some(token), query, variables.clone()).await;
    assert!(first.get("errors").is_none(), "{name}, first attempt: {first}");
    // The first attempt's own consequences (a reactor cancelling the run of a task its brief
    // completed, …) land first: only the resend must write nothing.
    let mut before = head(s).await;
    for _ in 0..50 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let now = head(s).await;
        if now == before {
            break;
        }
        before = now;
    }
    let second = s.gql(Some(token), query, variables).await;
    assert!(second.get("errors").is_none(), "{name}, resent: {second}");
    assert_eq!(first["data"], second["data"], "{name}: the resend gets the first answer");
    assert_eq!(head(s).await, before, "{name}: the resend wrote nothing");
    first["data"].clone()
}

async fn setup(s: &Server, alice: &str) {
    for agent in ["a1", "sup"] {
        s.data(
            Some(alice),
            "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
            json!({"i": {"agentId": agent, "config": {"slug": agent, "title": agent, "model": "m1", "provider": "p1"}}}),
        )
        .await;
    }
    s.data(
        Some(alice),
        "mutation($c: JSON!, $m: JSON) { createGroup(id: \"g1\", title: \"team\", config: $c, members: $m) { position } }",
        json!({"c": {"maxRounds": 3}, "m": [{"agentId": "sup", "role": "supervisor", "enabled": true, "order": 0}]}),
    )
    .await;
    for brief in ["b1", "b2"] {
        s.data(
            Some(alice),
            "mutation($i: JSON!) { createBrief(input: $i) { position } }",
            json!({"i": {"briefId": brief, "type": "result", "title": "done", "summary": "all good", "taskId": "t1"}}),
        )
        .await;
    }
}

async fn a_resent_request_gets_the_first_answer(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;

    // single stream: create a task (its brief's task), then its run spans task + operation
    let task = json!({"i": {"taskId": "t1", "identifier": "T-1", "instruction": "write", "assigneeAgentId": "a1"}, "r": "task-1"});
    twice(
        &s,
        &alice,
        "createTask",
        "mutation($i: JSON!, $r: String) { createTask(input: $i, requestId: $r) { position } }",
        task,
    )
    .await;
    setup(&s, &alice).await;

    // several streams each
    let op = json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "a1"}, "r": "start-1"});
    let started = twice(&s, &alice, "startOperation", START, op).await;
    assert_eq!(started["startOperation"]["operation"]["status"], "idle", "{started}");
    // a claim whose answer was lost: resent, the worker holds the lease (not CONFLICT), with the
    // same token
    let claimed = twice(
        &s,
        &alice,
        "claimOperation",
        "mutation($r: String) { claimOperation(id: \"op1\", workerId: \"w1\", leaseSecs: 3600, requestId: $r) { position operation { status } lease { token expiresAt } } }",
        json!({"r": "claim-1"}),
    )
    .await;
    let lt = claimed["claimOperation"]["lease"]["token"].as_str().unwrap().to_string();
    // The same requestId names that claim alone: another worker's claim with it, or another
    // mutation on the run with it, is refused (not answered with w1's lease) and writes nothing.
    let at = head(&s).await;
    for (query, what) in [
        (
            "mutation { claimOperation(id: \"op1\", workerId: \"w2\", leaseSecs: 3600, requestId: \"claim-1\") { position lease { token } } }",
            "w2's claim",
        ),
        (
            "mutation($lt: String!) { reportStep(id: \"op1\", leaseToken: $lt, phase: ACTING, requestId: \"claim-1\") { position } }",
            "a step",
        ),
    ] {
        let reused = s.gql(Some(&alice), query, json!({"lt": lt})).await;
        assert_eq!(error_code(&reused).as_deref(), Some("VALIDATION"), "{what}: {reused}");
        assert!(reused.to_string().contains("requestId"), "{what}: {reused}");
    }
    assert_eq!(head(&s).await, at, "the refused reuses wrote nothing");
    let sub = json!({"p": "op1", "i": {"operationId": "op1-sub", "kind": "SUBAGENT", "agentId": "a1"}, "r": "spawn-1", "lt": lt});
    twice(
        &s,
        &alice,
        "spawnSubagent",
        "mutation($p: String!, $i: StartOperationInput!, $r: String, $lt: String) { spawnSubagent(parentOperationId: $p, input: $i, leaseToken: $lt, requestId: $r) { position } }",
        sub,
    )
    .await;
    twice(
        &s,
        &alice,
        "runTask",
        "mutation($r: String) { runTask(id: \"t1\", topicId: \"tp1\", operationId: \"run1\", requestId: $r) { position } }",
        json!({"r": "run-1"}),
    )
    .await;
    twice(
        &s,
        &alice,
        "resolveBrief",
        "mutation($r: String) { resolveBrief(id: \"b1\", action: \"approve\", requestId: $r) { position brief { resolvedAction } } }",
        json!({"r": "resolve-1"}),
    )
    .await;
    twice(
        &s,
        &alice,
        "startGroupRun",
        "mutation($r: String) { startGroupRun(groupId: \"g1\", operationId: \"sup1\", requestId: $r) { position } }",
        json!({"r": "group-1"}),
    )
    .await;
    let cancelled = twice(
        &s,
        &alice,
        "cancelOperation",
        "mutation($r: String) { cancelOperation(id: \"op1\", reason: \"stop\", requestId: $r) { position operation { status } } }",
        json!({"r": "cancel-1"}),
    )
    .await;
    assert_eq!(cancelled["cancelOperation"]["operation"]["status"], "cancelled", "{cancelled}");

    // Without a requestId a second resolve is a new request, refused by the brief's rules.
    let again =
        s.gql(Some(&alice), "mutation { resolveBrief(id: \"b1\", action: \"approve\") { position } }", json!({})).await;
    assert!(error_code(&again).is_some(), "{again}");

    // The same requestId on another target is refused, and writes nothing.
    let before = head(&s).await;
    let reused = s
        .gql(
            Some(&alice),
            "mutation { resolveBrief(id: \"b2\", action: \"approve\", requestId: \"resolve-1\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&reused).as_deref(), Some("VALIDATION"), "{reused}");
    let reused = s
        .gql(Some(&alice), START, json!({"i": {"operationId": "op2", "kind": "TASK", "agentId": "a1"}, "r": "start-1"}))
        .await;
    assert_eq!(error_code(&reused).as_deref(), Some("VALIDATION"), "{reused}");
    // An operation command too: "claim-1" claimed op1, not its sub-agent run.
    let reused = s
        .gql(
            Some(&alice),
            "mutation { claimOperation(id: \"op1-sub\", workerId: \"w1\", requestId: \"claim-1\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&reused).as_deref(), Some("VALIDATION"), "{reused}");
    assert_eq!(head(&s).await, before, "refused reuses wrote nothing");
    // A budget too: "budget-1" set b1, so on b2 (existing, or new) it is refused.
    let set = "mutation($i: BudgetInput!, $r: String) { setBudget(input: $i, requestId: $r) { position } }";
    let budget = |id: &str, limit: i64| json!({"id": id, "scope": "USER", "period": "DAY", "limitTokens": limit});
    let before_budgets = head(&s).await;
    s.data(Some(&alice), set, json!({"i": budget("bud1", 10), "r": "budget-1"})).await;
    s.data(Some(&alice), set, json!({"i": budget("bud2", 10)})).await;
    let written = head(&s).await;
    assert!(written > before_budgets);
    for target in ["bud2", "bud3"] {
        let reused = s.gql(Some(&alice), set, json!({"i": budget(target, 99), "r": "budget-1"})).await;
        assert_eq!(error_code(&reused).as_deref(), Some("VALIDATION"), "{target}: {reused}");
    }
    assert_eq!(head(&s).await, written, "refused budget reuses wrote nothing");
    let bud2 = s.data(Some(&alice), "{ budget(id: \"bud2\") { limitTokens } }", json!({})).await;
    assert_eq!(bud2["budget"]["limitTokens"], 10, "bud2 untouched: {bud2}");
    let b2 = s.data(Some(&alice), "{ brief(id: \"b2\") { resolvedAction } }", json!({})).await;
    assert!(b2["brief"]["resolvedAction"].is_null(), "b2 untouched: {b2}");

    // Request ids are per user: bob's "start-1" is his own request.
    s.data(
        Some(&bob),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a-bob", "config": {"slug": "a-bob", "title": "a-bob"}}}),
    )
    .await;
    let his = s
        .data(
            Some(&bob),
            START,
            json!({"i": {"operationId": "op-bob", "kind": "TASK", "agentId": "a-bob"}, "r": "start-1"}),
        )
        .await;
    assert_eq!(his["startOperation"]["operation"]["id"], "op-bob", "{his}");
    s.stop();
}

both!(a_resent_request_gets_the_first_answer as a_resent_request_gets_the_first_answer);
