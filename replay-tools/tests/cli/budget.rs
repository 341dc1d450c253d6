//! `budget-spend` and `budget-crossings` on a generated log with a budget, its runs over two
//! days and a refusal added: spend per period against the limit, the runs whose steps crossed
//! the warning threshold and the limit, and the refusal that followed, with its chain.

use std::sync::Arc;

use agentlog_domain::{
    budgets::{Budget, BudgetCommand, BudgetPeriod, BudgetScopeKind, BudgetSpec},
    context::Context,
    envelope::Actor,
    operations::{CreateOperation, Operation, OperationCommand, OperationKind, Phase, StepReport, lease_token},
    refusals::{RecordRefusal, Refusal, RefusalCommand, RefusedFact, refusal_id},
    values::{AgentRef, Usage},
};
use agentlog_eventlog::CommandHandler;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::{Fixture, json_ok, replay};

const OWNER: &str = "ledger-owner";

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
}

fn ctx(t: DateTime<Utc>, actor: Actor) -> Context {
    owned_ctx(OWNER, t, actor)
}

fn owned_ctx(owner: &str, t: DateTime<Utc>, actor: Actor) -> Context {
    Context::new(t, Uuid::now_v7(), actor, owner)
}

/// Run `op` on the budget's agent and report steps of these costs at `t`.
async fn run(h: &CommandHandler, op: &str, t: &str, costs: &[u64]) {
    run_for(h, OWNER, op, t, costs).await;
}

/// [`run`] as `owner`'s run `op` (operation ids are per owner).
async fn run_for(h: &CommandHandler, owner: &str, op: &str, t: &str, costs: &[u64]) {
    let ctx = |t, actor| owned_ctx(owner, t, actor);
    let t = at(t);
    let agent = AgentRef { agent_id: "ledger-agent".into(), config_version: 1, model: None, provider: None };
    let create = OperationCommand::Create(CreateOperation::new(op, OperationKind::Task, agent));
    h.execute_of::<Operation>(owner, op, &create, &ctx(t, Actor::user(owner))).await.expect("create");
    let claim = ctx(t, Actor::worker("w1"));
    h.execute_of::<Operation>(owner, op, &OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 60 }, &claim)
        .await
        .expect("claim");
    for cost in costs {
        let step = OperationCommand::RecordStep(StepReport {
            phase: Phase::Acting,
            tool_calls: Vec::new(),
            usage: Usage { cost_micros: Some(*cost), total_tokens: Some(5), ..Usage::default() },
            budgets: Vec::new(),
        });
        let worker = ctx(t, Actor::worker("w1")).with_lease_token(Some(lease_token(&claim)));
        h.execute_of::<Operation>(owner, op, &step, &worker).await.expect("step");
    }
}

async fn budget_reports(f: Fixture) {
    let h = CommandHandler::new(Arc::clone(&f.log.store));
    let mut spec = BudgetSpec::user("ledger", OWNER, Some(100), None);
    spec.scope = BudgetScopeKind::Agent;
    spec.scope_id = Some("ledger-agent".into());
    spec.period = BudgetPeriod::Day;
    let set = BudgetCommand::Set { spec, scope_owner: Some(OWNER.into()) };
    h.execute_of::<Budget>(OWNER, "ledger", &set, &ctx(at("2031-05-01T08:00:00Z"), Actor::user(OWNER)))
        .await
        .expect("budget");
    // Day one: r1 crosses the warning (90 of 100), r2 the limit (120).
    run(&h, "ledger-r1", "2031-05-01T09:00:00Z", &[50, 40]).await;
    run(&h, "ledger-r2", "2031-05-01T10:00:00Z", &[30]).await;
    // Then a cron fire is refused.
    let command = Uuid::now_v7();
    let refusal = RecordRefusal {
        refusal_id: refusal_id(command),
        reactor: "scheduler".into(),
        command: "cron.fire".into(),
        target_stream_id: "cron-ledger-job".into(),
        code: "LIMIT".into(),
        message: "budget ledger on this agent is at its limit".into(),
        fact: RefusedFact {
            event_id: Uuid::now_v7().to_string(),
            event_type: "cron.created".into(),
            stream_id: "cron-ledger-job".into(),
            position: 1,
        },
        operation_id: None,
        task_id: None,
        user_id: OWNER.into(),
    };
    let refused = Context::new(at("2031-05-01T11:00:00Z"), command, Actor::system("scheduler"), OWNER);
    h.execute::<Refusal>(&refusal.refusal_id.clone(), &RefusalCommand::Record(refusal), &refused)
        .await
        .expect("refusal");
    // Day two: a new period, under the threshold.
    run(&h, "ledger-r3", "2031-05-02T09:00:00Z", &[20]).await;

    let spend = json_ok(&replay(&f.url, &["--json", "budget-spend", "--budget", "ledger"]));
    let rows = spend.as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 2, "{spend}");
    assert_eq!(rows[0]["start"], "2031-05-01T00:00:00Z", "{spend}");
    assert_eq!(rows[0]["spent"], json!({"costMicros": 120, "tokens": 15}), "{spend}");
    assert_eq!((rows[0]["warned"].clone(), rows[0]["reached"].clone()), (json!(true), json!(true)), "{spend}");
    assert_eq!(rows[1]["spent"]["costMicros"], 20, "{spend}");
    assert_eq!(rows[1]["reached"], false, "a new period: {spend}");

    let c = json_ok(&replay(&f.url, &["--json", "budget-crossings", "ledger"]));
    let crossings = c["crossings"].as_array().cloned().unwrap_or_default();
    assert_eq!(crossings.len(), 2, "{c}");
    assert_eq!(
        (crossings[0]["what"].as_str(), crossings[0]["operationId"].as_str()),
        (Some("warning"), Some("ledger-r1"))
    );
    assert_eq!(crossings[0]["stepIndex"], 2, "{c}");
    assert_eq!(
        (crossings[1]["what"].as_str(), crossings[1]["operationId"].as_str()),
        (Some("limit"), Some("ledger-r2"))
    );
    assert_eq!(crossings[1]["before"]["costMicros"], 90, "{c}");
    assert_eq!(crossings[1]["after"]["costMicros"], 120, "{c}");
    assert_eq!(
        crossings[1]["runs"],
        json!([["ledger-r1", {"costMicros": 90, "tokens": 10}], ["ledger-r2", {"costMicros": 30, "tokens": 5}]]),
        "{c}"
    );
    let refusals = c["refusals"].as_array().cloned().unwrap_or_default();
    assert_eq!(refusals.len(), 1, "{c}");
    assert_eq!(refusals[0]["command"], "cron.fire", "{c}");
    assert!(refusals[0]["chainId"].as_str().is_some_and(|s| !s.is_empty()), "{c}");

    // The tables print too; an unknown budget is an error.
    let out = replay(&f.url, &["budget-crossings", "ledger"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ledger-r2") && text.contains("cron.fire"), "{text}");
    assert!(!replay(&f.url, &["budget-spend", "--budget", "nope"]).status.success());

    // Operation ids are per owner: another user's `ledger-r1` (of an agent by that name) counts
    // nothing against the owner's budget, and a timeline of the id names its owner.
    run_for(&h, "someone-else", "ledger-r1", "2031-05-01T11:00:00Z", &[500]).await;
    let again = json_ok(&replay(&f.url, &["--json", "budget-spend", "--budget", "ledger"]));
    assert_eq!(again, spend, "the other owner's run is not the budget's");
    assert!(!replay(&f.url, &["run", "ledger-r1"]).status.success(), "two owners hold ledger-r1");
    for owner in [OWNER, "someone-else"] {
        let v = json_ok(&replay(&f.url, &["--json", "run", "ledger-r1", "--owner", owner]));
        let entries = v["entries"].as_array().cloned().unwrap_or_default();
        let runs: Vec<&Value> = entries.iter().filter(|e| e["role"] == "run").collect();
        assert!(!runs.is_empty(), "{v}");
        let stream = format!("operation@{owner}/ledger-r1");
        assert!(runs.iter().all(|e| e["event"]["streamId"] == stream.as_str()), "{v}");
    }
    let v = json_ok(&replay(&f.url, &["--json", "run", "ledger-r3"]));
    assert_eq!(v["entries"][0]["event"]["streamId"], format!("operation@{OWNER}/ledger-r3"), "one owner: found");

    // Budget ids are per owner too: another user's `ledger` is listed beside the owner's, and
    // naming the id alone is refused until its owner is named.
    let theirs = BudgetSpec::user("ledger", "someone-else", Some(7), None);
    let set = BudgetCommand::Set { spec: theirs, scope_owner: Some("someone-else".into()) };
    h.execute_of::<Budget>(
        "someone-else",
        "ledger",
        &set,
        &owned_ctx("someone-else", at("2031-05-01T08:30:00Z"), Actor::user("someone-else")),
    )
    .await
    .expect("their budget");
    let every = json_ok(&replay(&f.url, &["--json", "budget-spend"]));
    let owners: std::collections::BTreeSet<&str> =
        every.as_array().into_iter().flatten().filter_map(|r| r["owner"].as_str()).collect();
    assert_eq!(owners, [OWNER, "someone-else"].into_iter().collect(), "{every}");
    for args in [&["budget-spend", "--budget", "ledger"][..], &["budget-crossings", "ledger"][..]] {
        let out = replay(&f.url, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--owner"), "{args:?} says what to do");
    }
    let mine = json_ok(&replay(&f.url, &["--json", "budget-spend", "--budget", "ledger", "--owner", OWNER]));
    assert_eq!(mine, spend, "the owner's budget, as before");
    let c = json_ok(&replay(&f.url, &["--json", "budget-crossings", "ledger", "--owner", OWNER]));
    assert_eq!(c["crossings"].as_array().map(Vec::len), Some(2), "{c}");
    assert_eq!(c["owner"], OWNER, "{c}");
}

crate::both!(budget_reports as budget_reports);
