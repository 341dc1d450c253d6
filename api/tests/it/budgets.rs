//! Budgets through the real server: set, changed and removed as events, validated (writing
//! nothing), owned; spend folded from the steps' usage; new runs refused with LIMIT at the
//! limit; `interrupt` and a run's own `maxSteps` / `costLimitMicros` ending it; concurrent
//! workers overspending by at most one step each.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, error_code, verify_read_models};

const SET: &str = "mutation($i: BudgetInput!, $o: String) { setBudget(input: $i, ownerId: $o) { position budget { id scope scopeId } } }";
const REMOVE: &str = "mutation($id: String!) { removeBudget(id: $id) { position budget { id } } }";
const BUDGET: &str = "query($id: String!) { budget(id: $id) { id userId scope scopeId period timeZone limitCostMicros limitTokens warnPercent action periodStart resetsAt spent { costMicros tokens remainingCostMicros remainingTokens warned reached } } }";
const BUDGET_EVENTS: &str =
    "{ events(filter: {eventTypes: [\"budget.set\", \"budget.removed\"]}) { edges { node { eventType payload } } } }";
const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const STEP: &str = "mutation($id: String!, $l: String!, $c: Int!) { reportStep(id: $id, leaseToken: $l, phase: ACTING, usage: {costMicros: $c, totalTokens: 10}) { operation { status completionReason stepCount } } }";

async fn register_agent(s: &Server, token: &str, id: &str) {
    s.data(
        Some(token),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": id, "config": {"slug": id, "title": id, "model": "m1", "provider": "p1"}}}),
    )
    .await;
}

fn start_input(id: &str, agent: &str) -> Value {
    json!({"operationId": id, "kind": "TASK", "agentId": agent})
}

/// Start `id` on `agent`, claim it: its lease token.
async fn running(s: &Server, token: &str, id: &str, agent: &str) -> String {
    s.data(Some(token), START, json!({"i": start_input(id, agent)})).await;
    s.claim(token, id, "w1").await
}

async fn step(s: &Server, token: &str, id: &str, lease: &str, cost: i64) -> Value {
    s.data(Some(token), STEP, json!({"id": id, "l": lease, "c": cost})).await["reportStep"]["operation"].clone()
}

async fn budget_events(s: &Server, token: &str) -> usize {
    s.data(Some(token), BUDGET_EVENTS, json!({})).await["events"]["edges"].as_array().map_or(0, Vec::len)
}

async fn budgets_are_events_validated_and_owned(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    register_agent(&s, &alice, "a1").await;
    register_agent(&s, &bob, "b1").await;

    let terms =
        json!({"id": "daily", "scope": "USER", "period": "DAY", "timeZone": "Europe/Berlin", "limitCostMicros": 1000});
    let d = s.data(Some(&alice), SET, json!({"i": terms})).await;
    assert!(d["setBudget"]["position"].as_i64().is_some_and(|p| p > 0), "{d}");
    assert_eq!(d["setBudget"]["budget"]["scopeId"], "alice", "a user budget limits its owner: {d}");
    let b = s.data(Some(&alice), BUDGET, json!({"id": "daily"})).await["budget"].clone();
    assert_eq!(b["warnPercent"], 80, "the default threshold: {b}");
    assert_eq!(b["action"], "REFUSE", "{b}");
    assert_eq!(b["spent"]["costMicros"], 0, "{b}");
    assert_eq!(b["spent"]["remainingCostMicros"], 1000, "{b}");
    assert_eq!(b["spent"]["remainingTokens"], Value::Null, "no token limit: {b}");
    // The day is Berlin's: it starts at local midnight (22:00 or 23:00 UTC) and lasts a day.
    let start = chrono::DateTime::parse_from_rfc3339(b["periodStart"].as_str().expect("a period start")).unwrap();
    let reset = chrono::DateTime::parse_from_rfc3339(b["resetsAt"].as_str().expect("a reset time")).unwrap();
    let berlin = start.with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!((berlin.format("%H:%M").to_string(), (reset - start).num_hours()), ("00:00".into(), 24), "{b}");
    assert!(start <= chrono::Utc::now() && chrono::Utc::now() < reset, "{b}");

    // The same terms again write nothing; a change is an event.
    let d = s.data(Some(&alice), SET, json!({"i": terms})).await;
    assert_eq!(d["setBudget"]["position"], 0, "{d}");
    let mut changed = terms.clone();
    changed["limitTokens"] = json!(500);
    changed["action"] = json!("INTERRUPT");
    s.data(Some(&alice), SET, json!({"i": changed})).await;
    let b = s.data(Some(&alice), BUDGET, json!({"id": "daily"})).await["budget"].clone();
    assert_eq!((b["limitTokens"].clone(), b["action"].clone()), (json!(500), json!("INTERRUPT")), "{b}");
    assert_eq!(budget_events(&s, &alice).await, 2);

    // Bad terms: a coded error, nothing written.
    let bad = |patch: Value| {
        let mut t = terms.clone();
        t["id"] = json!("bad");
        for (k, v) in patch.as_object().expect("a patch") {
            t[k] = v.clone();
        }
        t
    };
    for (input, code) in [
        (bad(json!({"limitCostMicros": null})), "VALIDATION"),
        (bad(json!({"limitCostMicros": 0})), "VALIDATION"),
        (bad(json!({"limitCostMicros": -5})), "VALIDATION"),
        (bad(json!({"warnPercent": 0})), "VALIDATION"),
        (bad(json!({"warnPercent": 101})), "VALIDATION"),
        (bad(json!({"timeZone": "Mars/Olympus"})), "VALIDATION"),
        (bad(json!({"id": "has space"})), "VALIDATION"),
        (bad(json!({"scopeId": "bob"})), "VALIDATION"),
        (bad(json!({"scope": "GLOBAL", "scopeId": null})), "FORBIDDEN"),
        (bad(json!({"scope": "AGENT", "scopeId": "b1"})), "NOT_FOUND"),
        (bad(json!({"scope": "TASK", "scopeId": "nope"})), "NOT_FOUND"),
        (bad(json!({"scope": "GROUP", "scopeId": "nope"})), "NOT_FOUND"),
        (bad(json!({"scope": "AGENT", "scopeId": null})), "VALIDATION"),
    ] {
        let r = s.gql(Some(&alice), SET, json!({"i": input})).await;
        assert_eq!(error_code(&r).as_deref(), Some(code), "{input}: {r}");
    }
    assert_eq!(budget_events(&s, &alice).await, 2, "a refused setBudget writes nothing");
    // An agent budget on one's own agent is fine.
    s.data(Some(&alice), SET, json!({"i": bad(json!({"id": "agent", "scope": "AGENT", "scopeId": "a1"}))})).await;

    // Another user's budget is unknown to bob (its id is his to use too: see namespaces.rs).
    let r = s.gql(Some(&bob), BUDGET, json!({"id": "daily"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.gql(Some(&bob), REMOVE, json!({"id": "daily"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let listed = s.data(Some(&bob), "{ budgets { edges { node { id } } } }", json!({})).await;
    assert_eq!(listed["budgets"]["edges"], json!([]), "{listed}");

    // An admin sets a global budget (everyone sees it) and one for alice.
    let admin = s.admin_token.clone();
    let global = json!({"id": "all", "scope": "GLOBAL", "period": "MONTH", "limitTokens": 1000000});
    s.data(Some(&admin), SET, json!({"i": global})).await;
    let for_alice = json!({"id": "by-admin", "scope": "USER", "period": "TOTAL", "limitCostMicros": 5});
    let d = s.data(Some(&admin), SET, json!({"i": for_alice, "o": "alice"})).await;
    assert_eq!(d["setBudget"]["budget"]["scopeId"], "alice", "{d}");
    let listed = s.data(Some(&bob), "{ budgets { edges { node { id scope } } } }", json!({})).await;
    assert_eq!(listed["budgets"]["edges"], json!([{"node": {"id": "all", "scope": "GLOBAL"}}]), "{listed}");
    let r = s.gql(Some(&bob), REMOVE, json!({"id": "all"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "only its owner removes it: {r}");
    let listed = s.data(Some(&alice), "{ budgets(scope: USER) { edges { node { id } } } }", json!({})).await;
    let ids: Vec<&str> =
        listed["budgets"]["edges"].as_array().unwrap().iter().filter_map(|e| e["node"]["id"].as_str()).collect();
    assert_eq!(ids, ["daily", "by-admin"], "{listed}");

    // Removed: an event, and gone.
    let d = s.data(Some(&alice), REMOVE, json!({"id": "daily"})).await;
    assert_eq!(d["removeBudget"]["budget"], Value::Null, "{d}");
    let r = s.gql(Some(&alice), BUDGET, json!({"id": "daily"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.gql(Some(&alice), REMOVE, json!({"id": "daily"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    s.stop();
}

both!(budgets_are_events_validated_and_owned as budgets_are_events_validated_and_owned);

/// Spend is the steps' usage summed per scope; at the limit every way of starting a run of the
/// scope answers LIMIT and writes nothing, while a running run under a `refuse` budget goes on;
/// the read model equals a rebuild.
async fn spend_is_folded_and_new_runs_are_refused_at_the_limit(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice, "a1").await;
    register_agent(&s, &alice, "a2").await;
    let budget =
        json!({"id": "a1-total", "scope": "AGENT", "scopeId": "a1", "period": "TOTAL", "limitCostMicros": 100});
    s.data(Some(&alice), SET, json!({"i": budget})).await;
    let tokens = json!({"id": "tokens", "scope": "USER", "period": "MONTH", "limitTokens": 1000});
    s.data(Some(&alice), SET, json!({"i": tokens})).await;

    let lease = running(&s, &alice, "op1", "a1").await;
    let other = running(&s, &alice, "op2", "a2").await;
    step(&s, &alice, "op1", &lease, 30).await;
    step(&s, &alice, "op1", &lease, 40).await;
    step(&s, &alice, "op2", &other, 500).await; // another agent: not this budget's
    let b = s.data(Some(&alice), BUDGET, json!({"id": "a1-total"})).await["budget"].clone();
    assert_eq!(
        b["spent"],
        json!({"costMicros": 70, "tokens": 20, "remainingCostMicros": 30, "remainingTokens": null, "warned": false, "reached": false}),
        "{b}"
    );
    assert_eq!(
        (b["periodStart"].clone(), b["resetsAt"].clone()),
        (Value::Null, Value::Null),
        "a total never resets: {b}"
    );
    let t = s.data(Some(&alice), BUDGET, json!({"id": "tokens"})).await["budget"].clone();
    assert_eq!(t["spent"]["tokens"], 30, "the user's runs on every agent: {t}");
    assert_eq!(t["spent"]["remainingTokens"], 970, "{t}");

    step(&s, &alice, "op1", &lease, 10).await;
    let b = s.data(Some(&alice), BUDGET, json!({"id": "a1-total"})).await["budget"].clone();
    assert_eq!(
        (b["spent"]["warned"].clone(), b["spent"]["reached"].clone()),
        (json!(true), json!(false)),
        "80 of 100: {b}"
    );
    // Below the limit a run still starts.
    s.data(Some(&alice), START, json!({"i": start_input("op3", "a1")})).await;
    let op = step(&s, &alice, "op1", &lease, 25).await;
    assert_eq!(op["status"], "running", "a refuse budget lets a running run go on: {op}");
    let b = s.data(Some(&alice), BUDGET, json!({"id": "a1-total"})).await["budget"].clone();
    assert_eq!(b["spent"]["costMicros"], 105, "{b}");
    assert_eq!(b["spent"]["remainingCostMicros"], 0, "{b}");
    assert_eq!(b["spent"]["reached"], true, "{b}");

    // At the limit: startOperation and spawnSubagent of a1 are LIMIT and write nothing.
    let ops = "{ operations(first: 50) { edges { node { id } } } }";
    let before = s.data(Some(&alice), ops, json!({})).await;
    let r = s.gql(Some(&alice), START, json!({"i": start_input("op4", "a1")})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("a1-total")), "names the budget: {r}");
    let spawn = "mutation($p: String!, $i: StartOperationInput!, $l: String) { spawnSubagent(parentOperationId: $p, input: $i, leaseToken: $l) { position } }";
    let r = s.gql(Some(&alice), spawn, json!({"p": "op1", "i": start_input("child", "a1"), "l": lease})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    assert_eq!(s.data(Some(&alice), ops, json!({})).await, before, "a refused start writes nothing");
    // Another agent's runs are not limited by it.
    s.data(Some(&alice), START, json!({"i": start_input("op5", "a2")})).await;

    // Raising the limit lets runs start again; removing it too.
    let mut raised = budget.clone();
    raised["limitCostMicros"] = json!(1000);
    s.data(Some(&alice), SET, json!({"i": raised})).await;
    s.data(Some(&alice), START, json!({"i": start_input("op6", "a1")})).await;
    verify_read_models(&s.stop()).await;
}

both!(spend_is_folded_and_new_runs_are_refused_at_the_limit as spend_is_folded_and_new_runs_are_refused_at_the_limit);

/// A user budget covers task runs too: `runTask` is refused with LIMIT once it is reached.
async fn a_task_run_is_refused_at_the_limit(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice, "a1").await;
    let budget = json!({"id": "mine", "scope": "USER", "period": "DAY", "limitCostMicros": 50});
    s.data(Some(&alice), SET, json!({"i": budget})).await;
    s.data(
        Some(&alice),
        "mutation { createTask(input: {taskId: \"t1\", identifier: \"T-1\", instruction: \"x\"}) { position } }",
        json!({}),
    )
    .await;
    s.data(
        Some(&alice),
        "mutation { runTask(id: \"t1\", topicId: \"tp1\", operationId: \"run1\") { position } }",
        json!({}),
    )
    .await;
    let lease = s.claim(&alice, "run1", "w1").await;
    step(&s, &alice, "run1", &lease, 60).await;
    s.data(
        Some(&alice),
        "mutation { createTask(input: {taskId: \"t2\", identifier: \"T-2\", instruction: \"y\"}) { position } }",
        json!({}),
    )
    .await;
    let r = s
        .gql(
            Some(&alice),
            "mutation { runTask(id: \"t2\", topicId: \"tp2\", operationId: \"run2\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    let r = s.gql(Some(&alice), "{ operation(id: \"run2\") { id } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "nothing written: {r}");
    s.stop();
}

both!(a_task_run_is_refused_at_the_limit as a_task_run_is_refused_at_the_limit);

/// `interrupt` ends a running run whose step reaches the limit (`cost_limit`, in the step's
/// answer); a run's own `maxSteps` and `costLimitMicros` end it the same way.
async fn limits_end_a_running_run(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice, "a1").await;
    register_agent(&s, &alice, "a2").await;
    let budget = json!({"id": "stop", "scope": "AGENT", "scopeId": "a1", "period": "TOTAL", "limitCostMicros": 100, "action": "INTERRUPT"});
    s.data(Some(&alice), SET, json!({"i": budget})).await;
    let lease = running(&s, &alice, "op1", "a1").await;
    let op = step(&s, &alice, "op1", &lease, 60).await;
    assert_eq!(op["status"], "running", "{op}");
    let op = step(&s, &alice, "op1", &lease, 60).await;
    assert_eq!((op["status"].clone(), op["completionReason"].clone()), (json!("done"), json!("cost_limit")), "{op}");
    let r = s.gql(Some(&alice), STEP, json!({"id": "op1", "l": lease, "c": 1})).await;
    assert!(r.get("errors").is_some(), "the run has ended: {r}");

    // The run's own limits, set at start.
    let mut input = start_input("steps", "a2");
    input["maxSteps"] = json!(2);
    s.data(Some(&alice), START, json!({"i": input})).await;
    let l = s.claim(&alice, "steps", "w1").await;
    assert_eq!(step(&s, &alice, "steps", &l, 1).await["status"], "running");
    let op = step(&s, &alice, "steps", &l, 1).await;
    assert_eq!((op["status"].clone(), op["completionReason"].clone()), (json!("done"), json!("max_steps")), "{op}");
    let mut input = start_input("cost", "a2");
    input["costLimitMicros"] = json!(50);
    s.data(Some(&alice), START, json!({"i": input})).await;
    let l = s.claim(&alice, "cost", "w1").await;
    assert_eq!(step(&s, &alice, "cost", &l, 30).await["status"], "running");
    let op = step(&s, &alice, "cost", &l, 30).await;
    assert_eq!((op["status"].clone(), op["completionReason"].clone()), (json!("done"), json!("cost_limit")), "{op}");
    s.stop();
}

both!(limits_end_a_running_run as limits_end_a_running_run);

const WORKERS: usize = 16;
const RACE_STEP: i64 = 10;
const RACE_LIMIT: i64 = 400;

/// 16 workers, half through a second instance, report steps into 16 runs of one `interrupt`
/// budget at once: every run ends with `cost_limit`, and the budget is overspent by less than
/// one step per worker (each check sees every step committed before it began; only the steps in
/// flight beside it are unseen). Without the check they would spend 16 × 60 steps.
async fn racing_workers_overspend_by_at_most_one_step_each(db: Db) {
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let alice = a.user_token("alice").await;
    register_agent(&a, &alice, "a1").await;
    let budget = json!({"id": "race", "scope": "AGENT", "scopeId": "a1", "period": "TOTAL", "limitCostMicros": RACE_LIMIT, "action": "INTERRUPT"});
    a.data(Some(&alice), SET, json!({"i": budget})).await;
    let mut runs = Vec::new();
    for i in 0..WORKERS {
        let id = format!("race-{i}");
        runs.push((id.clone(), running(&a, &alice, &id, "a1").await));
    }
    let servers = [&a, &b];
    let workers = runs.iter().enumerate().map(|(i, (id, lease))| {
        let (s, alice) = (servers[i % 2], alice.clone());
        async move {
            for n in 0..60 {
                let op = step(s, &alice, id, lease, RACE_STEP).await;
                if op["status"] != "running" {
                    return (n + 1, op);
                }
            }
            (60, Value::Null)
        }
    });
    let ended = futures_util::future::join_all(workers).await;
    for (steps, op) in &ended {
        assert_eq!(op["completionReason"], "cost_limit", "after {steps} steps: {op}");
    }
    let steps: i64 = ended.iter().map(|(n, _)| *n as i64).sum();
    let spent = a.data(Some(&alice), BUDGET, json!({"id": "race"})).await["budget"]["spent"]["costMicros"].clone();
    assert_eq!(spent, json!(steps * RACE_STEP), "the budget counts every step reported");
    let spent = steps * RACE_STEP;
    eprintln!("{WORKERS} workers: {steps} steps, spent {spent} of {RACE_LIMIT}");
    assert!(spent >= RACE_LIMIT, "ended before the limit: {spent}");
    assert!(spent < RACE_LIMIT + WORKERS as i64 * RACE_STEP, "overspent by more than one step per worker: {spent}");
    drop(b);
    verify_read_models(&a.stop()).await;
}

both!(racing_workers_overspend_by_at_most_one_step_each as racing_workers_overspend_by_at_most_one_step_each);

/// Crossing the warning threshold tells the owner once per budget and period: one brief and its
/// one notification, however many steps of however many runs, on two
/// instances, cross it together, and none below it.
async fn the_warning_is_told_once(db: Db) {
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let alice = a.user_token("alice").await;
    register_agent(&a, &alice, "a1").await;
    let budget = json!({"id": "warned", "scope": "AGENT", "scopeId": "a1", "period": "MONTH", "timeZone": "America/New_York", "limitCostMicros": 1000, "warnPercent": 50});
    a.data(Some(&alice), SET, json!({"i": budget})).await;
    let mut runs = Vec::new();
    for i in 0..8 {
        let id = format!("w-{i}");
        runs.push((id.clone(), running(&a, &alice, &id, "a1").await));
    }
    let told = "{ notifications(first: 100) { edges { node { type dedupeKey title } } } briefs(first: 100) { edges { node { briefId type title } } } }";
    // 8 runs × 6 steps of 10 = 480: below 50%.
    let servers = [&a, &b];
    let report = |steps: usize| {
        let alice = alice.clone();
        let runs = runs.clone();
        async move {
            let all = runs.iter().enumerate().map(|(i, (id, lease))| {
                let (s, alice) = (servers[i % 2], alice.clone());
                async move {
                    for _ in 0..steps {
                        step(s, &alice, id, lease, 10).await;
                    }
                }
            });
            futures_util::future::join_all(all).await;
        }
    };
    report(6).await;
    let d = a.data(Some(&alice), told, json!({})).await;
    assert_eq!(d["notifications"]["edges"], json!([]), "below the threshold: {d}");
    assert_eq!(d["briefs"]["edges"], json!([]), "{d}");
    // Then every run crosses it at once, and goes on past it.
    report(4).await;
    // The brief's notification comes from the brief (a reactor), a moment later.
    let d = a.eventually(&alice, told, |d| d["notifications"]["edges"].as_array().is_some_and(|e| !e.is_empty())).await;
    let notes = d["notifications"]["edges"].as_array().cloned().unwrap_or_default();
    assert_eq!(notes.len(), 1, "one notification: {d}");
    let note = &notes[0]["node"];
    let briefs = d["briefs"]["edges"].as_array().cloned().unwrap_or_default();
    assert_eq!(briefs.len(), 1, "one brief: {d}");
    assert_eq!(
        note["dedupeKey"],
        format!("brief:{}", briefs[0]["node"]["briefId"].as_str().unwrap_or_default()),
        "{d}"
    );
    assert!(briefs[0]["node"]["briefId"].as_str().is_some_and(|id| id.starts_with('~')), "{d}");
    assert_eq!(briefs[0]["node"]["type"], "insight", "{d}");
    drop(b);
    verify_read_models(&a.stop()).await;
}

both!(the_warning_is_told_once as the_warning_is_told_once);

/// A cron slot of an agent at its budget's limit does not fire: the scheduler records the
/// refusal (LIMIT) in the job's chain, once per slot across passes and instances, and tells the
/// owner once for the budget's period; without the budget the same slot fires.
async fn a_cron_fire_at_the_limit_is_refused_and_recorded_once(db: Db) {
    use agentlog_api::reactors::scheduler;
    use agentlog_eventlog::EventFilter;

    use crate::scheduling::{app, at, caught_up};

    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice, "a1").await;
    let budget = json!({"id": "capped", "scope": "AGENT", "scopeId": "a1", "period": "TOTAL", "limitCostMicros": 10});
    s.data(Some(&alice), SET, json!({"i": budget})).await;
    let lease = running(&s, &alice, "op1", "a1").await;
    step(&s, &alice, "op1", &lease, 20).await;
    // Once, on a day the server's own clock does not reach.
    let job = json!({"jobId": "j1", "agentId": "a1", "pattern": "0 3 29 2 *", "timezone": "UTC", "content": "run", "enabled": true});
    s.data(Some(&alice), "mutation($i: JSON!) { createCronJob(input: $i) { position } }", json!({"i": job})).await;
    let db = s.stop();

    let (a, b) = (app(&db).await, app(&db).await);
    caught_up(&[&a, &b]).await;
    for (state, now) in [(&a, "2028-02-29T03:00:10Z"), (&b, "2028-02-29T03:00:20Z"), (&a, "2028-02-29T03:01:00Z")] {
        let report = scheduler::pass(state, at(now)).await.expect("pass");
        assert!(report.cron_fired.is_empty(), "the slot does not fire at the limit: {:?}", report.cron_fired);
    }
    let refusals = a.store.read_all(0, &EventFilter::types(["reactor.command_refused"]), 100).await.expect("read");
    assert_eq!(refusals.len(), 1, "one refusal for the slot: {refusals:?}");
    let p = &refusals[0].payload;
    assert_eq!((p["command"].as_str(), p["code"].as_str()), (Some("cron.fire"), Some("LIMIT")), "{p}");
    assert!(p["message"].as_str().is_some_and(|m| m.contains("capped")), "{p}");
    let told = a.store.read_all(0, &EventFilter::types(["notification.created"]), 100).await.expect("read");
    assert_eq!(told.iter().filter(|e| e.payload["type"] == "budget_limit").count(), 1, "told once");

    // The budget removed, the next year's slot fires.
    let owner = agentlog_api::auth::Caller { user_id: "alice".into(), admin: false };
    agentlog_api::commands::Commands::new(&a, &owner).remove_budget("capped", None).await.expect("remove");
    caught_up(&[&a, &b]).await;
    let report = scheduler::pass(&b, at("2032-02-29T03:00:10Z")).await.expect("pass");
    assert_eq!(report.cron_fired.len(), 1, "{:?}", report.skipped);
}

both!(a_cron_fire_at_the_limit_is_refused_and_recorded_once as a_cron_fire_at_the_limit_is_refused_and_recorded_once);

/// A group's member dispatch of an agent at its budget's limit is refused: the orchestration
/// records the refusal (LIMIT) in the step's chain and tells the owner; no member run starts.
async fn a_group_dispatch_at_the_limit_is_refused_and_recorded(db: Db) {
    use crate::orchestration;

    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    orchestration::setup(&s, &alice).await;
    let budget = json!({"id": "m1-cap", "scope": "AGENT", "scopeId": "m1", "period": "TOTAL", "limitCostMicros": 10});
    s.data(Some(&alice), SET, json!({"i": budget})).await;
    let lease = running(&s, &alice, "pre", "m1").await;
    step(&s, &alice, "pre", &lease, 20).await;
    s.data(
        Some(&alice),
        "mutation { startGroupRun(groupId: \"g1\", operationId: \"sup1\", instruction: \"Plan\") { position } }",
        json!({}),
    )
    .await;
    orchestration::decide(&s, &alice, "sup1", 1, "speak", json!({"agentId": "m1", "instruction": "go"})).await;
    let refusals = "{ events(filter: {eventTypes: [\"reactor.command_refused\"]}) { edges { node { payload } } } }";
    let d = s.eventually(&alice, refusals, |d| d["events"]["edges"].as_array().is_some_and(|e| !e.is_empty())).await;
    let p = &d["events"]["edges"][0]["node"]["payload"];
    assert_eq!((p["command"].as_str(), p["code"].as_str()), (Some("operation.dispatch_members"), Some("LIMIT")), "{d}");
    assert_eq!(p["operationId"], "sup1", "{d}");
    let ops = s.data(Some(&alice), "{ operations(first: 50) { edges { node { id agentId } } } }", json!({})).await;
    let m1_runs: Vec<&Value> =
        ops["operations"]["edges"].as_array().unwrap().iter().filter(|e| e["node"]["agentId"] == "m1").collect();
    assert_eq!(m1_runs.len(), 1, "only the run before the limit: {ops}");
    // With alice herself at a limit, a new group run is refused too, and nothing is written.
    let mine = json!({"id": "alice-cap", "scope": "USER", "period": "TOTAL", "limitCostMicros": 10});
    s.data(Some(&alice), SET, json!({"i": mine})).await;
    let start =
        "mutation { startGroupRun(groupId: \"g1\", operationId: \"sup2\", instruction: \"Again\") { position } }";
    let r = s.gql(Some(&alice), start, json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    let r = s.gql(Some(&alice), "{ operation(id: \"sup2\") { id } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "nothing written: {r}");
    s.stop();
}

both!(a_group_dispatch_at_the_limit_is_refused_and_recorded as a_group_dispatch_at_the_limit_is_refused_and_recorded);

/// A heartbeat tick of a task whose owner is at the limit starts no run: the scheduler records
/// the refusal (LIMIT) in the task's chain and tells the owner, once per tick.
async fn a_heartbeat_tick_at_the_limit_is_refused_and_recorded(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice, "a1").await;
    let budget = json!({"id": "mine", "scope": "USER", "period": "DAY", "limitCostMicros": 10});
    s.data(Some(&alice), SET, json!({"i": budget})).await;
    let lease = running(&s, &alice, "pre", "a1").await;
    step(&s, &alice, "pre", &lease, 20).await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Write the report.",
        "automationMode": "heartbeat", "heartbeat": {"intervalSecs": 1}, "maxTopics": 3});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t1\", status: \"scheduled\") { position } }", json!({}))
        .await;
    let refusals = "{ events(filter: {eventTypes: [\"reactor.command_refused\"]}) { edges { node { payload } } } }";
    let d = s.eventually(&alice, refusals, |d| d["events"]["edges"].as_array().is_some_and(|e| !e.is_empty())).await;
    let p = &d["events"]["edges"][0]["node"]["payload"];
    assert_eq!((p["command"].as_str(), p["code"].as_str()), (Some("task.start_run"), Some("LIMIT")), "{d}");
    assert_eq!(p["taskId"], "t1", "{d}");
    let t = s.data(Some(&alice), "{ task(id: \"t1\") { totalTopics } }", json!({})).await;
    assert_eq!(t["task"]["totalTopics"], 0, "no run started: {t}");
    s.stop();
}

both!(a_heartbeat_tick_at_the_limit_is_refused_and_recorded as a_heartbeat_tick_at_the_limit_is_refused_and_recorded);
