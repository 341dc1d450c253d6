//! A budget at its limit tells its owner once per period: however many cron slots (or heartbeat
//! ticks, or group dispatches) it refuses, on however many instances, every refusal is recorded
//! on its chain and one notification comes per budget and period; the next period brings a new
//! one. The server is set up over GraphQL; the scheduler's clock is then driven by the test.

use agentlog_api::{reactors::scheduler, state::AppState};
use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
    operations::{CreateOperation, Operation, OperationCommand, OperationKind, Phase, StepReport, lease_token},
    values::{AgentRef, Usage},
};
use agentlog_eventlog::EventFilter;
use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use crate::scheduling::{app, at, caught_up};
use crate::support::{Db, Server};

/// Run `op` on agent `agent` for alice and report one step costing `cost` at `t`: spend in the
/// period `t` falls in.
async fn spend(state: &AppState, op: &str, agent: &str, cost: u64, t: DateTime<Utc>) {
    let agent = AgentRef { agent_id: agent.into(), config_version: 1, model: None, provider: None };
    let create = OperationCommand::Create(CreateOperation::new(op, OperationKind::Conversation, agent));
    let user = Context::new(t, Uuid::now_v7(), Actor::user("alice"), "alice");
    state.handler.execute_of::<Operation>("alice", op, &create, &user).await.expect("create");
    let claim = Context::new(t, Uuid::now_v7(), Actor::worker("w1"), "alice");
    let lease = OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 60 };
    state.handler.execute_of::<Operation>("alice", op, &lease, &claim).await.expect("claim");
    let step = OperationCommand::RecordStep(StepReport {
        phase: Phase::Acting,
        tool_calls: Vec::new(),
        usage: Usage { cost_micros: Some(cost), ..Usage::default() },
        budgets: Vec::new(),
    });
    let worker =
        Context::new(t, Uuid::now_v7(), Actor::worker("w1"), "alice").with_lease_token(Some(lease_token(&claim)));
    state.handler.execute_of::<Operation>("alice", op, &step, &worker).await.expect("step");
}

async fn of_type(state: &AppState, event_type: &str) -> Vec<RecordedEvent> {
    state.store.read_all(0, &EventFilter::types([event_type]), 1_000).await.expect("read")
}

async fn told(state: &AppState) -> Vec<RecordedEvent> {
    of_type(state, "notification.created").await.into_iter().filter(|e| e.payload["type"] == "budget_limit").collect()
}

async fn refused_slots(states: [&AppState; 2], passes: &[&str]) {
    caught_up(&states).await;
    for (i, now) in passes.iter().enumerate() {
        let report = scheduler::pass(states[i % 2], at(now)).await.expect("pass");
        assert!(report.cron_fired.is_empty(), "at the limit nothing fires: {report:?}");
    }
}

async fn a_budget_refusal_is_told_once_per_period(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(
        Some(&alice),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "a1", "model": "m1", "provider": "p1"}}}),
    )
    .await;
    let budget = json!({"id": "daily", "scope": "AGENT", "scopeId": "a1", "period": "DAY", "timeZone": "UTC", "limitCostMicros": 10});
    s.data(Some(&alice), "mutation($i: BudgetInput!) { setBudget(input: $i) { position } }", json!({"i": budget}))
        .await;
    let job = json!({"jobId": "j1", "agentId": "a1", "pattern": "* * * * *", "timezone": "UTC", "content": "run", "enabled": true});
    s.data(Some(&alice), "mutation($i: JSON!) { createCronJob(input: $i) { position } }", json!({"i": job})).await;
    let db = s.stop();

    let (a, b) = (app(&db).await, app(&db).await);
    // Day one: the agent is past its limit; three slots are refused, the last one twice.
    spend(&a, "day1", "a1", 20, at("2030-01-10T02:00:00Z")).await;
    refused_slots(
        [&a, &b],
        &["2030-01-10T03:00:10Z", "2030-01-10T03:01:10Z", "2030-01-10T03:02:10Z", "2030-01-10T03:02:40Z"],
    )
    .await;
    let refusals = of_type(&a, "reactor.command_refused").await;
    assert_eq!(refusals.len(), 3, "each refused slot recorded once: {refusals:?}");
    assert!(refusals.iter().all(|r| r.payload["code"] == "LIMIT" && r.payload["command"] == "cron.fire"));
    assert!(refusals.iter().all(|r| r.payload["fact"]["streamId"] == "cron@alice/j1"), "on the job's chain");
    let notes = told(&a).await;
    assert_eq!(notes.len(), 1, "one notification for the period: {notes:?}");
    assert_eq!(notes[0].payload["metadata"]["budgetId"], "daily");
    assert_eq!(notes[0].payload["metadata"]["period"], "2030-01-10T00:00:00Z");
    assert!(
        of_type(&a, "notification.created").await.iter().all(|n| n.payload["type"] != "reactor_refused"),
        "a budget refusal is told only by the period's notification"
    );

    // Day two, past the limit again: a new period, a new notification, still once.
    spend(&b, "day2", "a1", 20, at("2030-01-11T01:00:00Z")).await;
    refused_slots([&b, &a], &["2030-01-11T03:00:10Z", "2030-01-11T03:01:10Z"]).await;
    assert_eq!(of_type(&a, "reactor.command_refused").await.len(), 5, "every refusal recorded");
    let notes = told(&a).await;
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[1].payload["metadata"]["period"], "2030-01-11T00:00:00Z");
}

both!(a_budget_refusal_is_told_once_per_period as a_budget_refusal_is_told_once_per_period);
