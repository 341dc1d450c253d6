//! No silent drops: a command a reactor issues that the domain refuses is recorded
//! (`reactor.command_refused`, in the fact's chain), counted in `/metrics` and told to the
//! run's owner, once, however often the reactor meets it again.

use crate::{orchestration, support};

use agentlog_eventlog::{StoreOptions, open_store};
use agentlog_projections::ReadDb;
use serde_json::{Value, json};
use support::{Db, Server};

const REFUSALS: &str = "{ events(filter: {eventTypes: [\"reactor.command_refused\"]}) { edges { node { streamId payload parentNodeId rootSourceId userId } } } }";
const STEPS: &str =
    "{ events(filter: {eventTypes: [\"operation.step_recorded\"]}) { edges { node { eventId rootSourceId } } } }";
const INBOX: &str = "{ notifications(first: 100) { edges { node { type dedupeKey body } } } }";

fn nodes(d: &Value, field: &str) -> Vec<Value> {
    d[field]["edges"].as_array().map(|e| e.iter().map(|n| n["node"].clone()).collect()).unwrap_or_default()
}

fn refused_count(metrics: &str) -> Option<u64> {
    metrics
        .lines()
        .find(|l| l.starts_with("agentlog_reactor_refusals_total{reactor=\"orchestration\",code=\"NOT_FOUND\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
}

async fn a_refused_orchestration_step_is_recorded_counted_and_told(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    orchestration::setup(&s, &alice).await;
    s.data(
        Some(&alice),
        "mutation { startGroupRun(groupId: \"g1\", operationId: \"sup1\", instruction: \"Plan\") { position } }",
        json!({}),
    )
    .await;
    // The group goes away under its running supervisor: its next decision cannot be recorded.
    s.data(Some(&alice), "mutation { deleteGroup(id: \"g1\") { position } }", json!({})).await;
    orchestration::decide(&s, &alice, "sup1", 1, "speak", json!({"agentId": "m1", "instruction": "go"})).await;

    let d = s.eventually(&alice, REFUSALS, |d| !nodes(d, "events").is_empty()).await;
    let refusals = nodes(&d, "events");
    assert_eq!(refusals.len(), 1, "{d}");
    let r = &refusals[0];
    let p = &r["payload"];
    assert_eq!(p["reactor"], "orchestration", "{r}");
    assert_eq!(p["command"], "group.advance_orchestration", "{r}");
    assert_eq!(p["targetStreamId"], "group@alice/g1", "{r}");
    assert_eq!(p["code"], "NOT_FOUND", "{r}");
    assert_eq!(p["operationId"], "sup1", "{r}");
    assert_eq!(p["userId"], "alice", "{r}");
    assert_eq!(r["userId"], "alice", "the owner sees it in the log: {r}");
    let refusal_id = p["refusalId"].as_str().expect("a refusal id").to_string();
    assert!(refusal_id.starts_with('~'), "agentlog's own id: {refusal_id}");
    assert_eq!(r["streamId"], format!("refusal-{refusal_id}"), "{r}");
    // In the chain of the step it answered.
    let steps = nodes(&s.data(Some(&alice), STEPS, json!({})).await, "events");
    let step = steps.iter().find(|e| e["eventId"] == p["fact"]["eventId"]).expect("the refused fact is the step");
    assert_eq!(r["parentNodeId"], step["eventId"], "{r}");
    assert_eq!(r["rootSourceId"], step["rootSourceId"], "{r}");
    assert_eq!(p["fact"]["eventType"], "operation.step_recorded", "{r}");

    // The owner is told.
    let d =
        s.eventually(&alice, INBOX, |d| nodes(d, "notifications").iter().any(|n| n["type"] == "reactor_refused")).await;
    let told: Vec<Value> = nodes(&d, "notifications").into_iter().filter(|n| n["type"] == "reactor_refused").collect();
    assert_eq!(told.len(), 1, "{d}");
    assert_eq!(told[0]["dedupeKey"], format!("refused:{refusal_id}"), "{d}");
    assert!(told[0]["body"].as_str().is_some_and(|b| b.contains("NOT_FOUND")), "{d}");
    // Nobody else is.
    let bob = s.user_token("bob").await;
    assert!(nodes(&s.data(Some(&bob), REFUSALS, json!({})).await, "events").is_empty(), "another user's refusal");

    // Counted by reactor and code.
    let (status, metrics) = s.metrics_text().await;
    assert_eq!(status, 200);
    assert_eq!(refused_count(&metrics), Some(1), "{metrics}");

    // The reactor meets it again from the start of the log (its checkpoint forgotten, a restart):
    // nothing new is recorded, told or counted.
    let dir = s.data_dir.clone();
    let db = s.stop();
    let store = open_store(&db.url(), StoreOptions::default()).await.expect("open the log");
    let read = ReadDb::from(store.database());
    read.execute("DELETE FROM reactor_checkpoints WHERE name = 'orchestration'", &[]).await.expect("forget");
    store.close().await;
    let s = Server::start_in(db, dir).await;
    let fact_position = p["fact"]["position"].as_i64().expect("the fact's position");
    let store = open_store(&s.db.url(), StoreOptions::default()).await.expect("open the log");
    let read = ReadDb::from(store.database());
    let mut reacted_again = false;
    for _ in 0..200 {
        let rows = read
            .fetch("SELECT position FROM reactor_checkpoints WHERE name = 'orchestration'", &[])
            .await
            .expect("checkpoint");
        if rows.first().and_then(|r| r.i64(0)).is_some_and(|at| at >= fact_position) {
            reacted_again = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    store.close().await;
    // The reactor's own checkpoint says it reacted to the step again.
    assert!(reacted_again, "the orchestration reactor did not get past the step again");
    assert_eq!(nodes(&s.data(Some(&alice), REFUSALS, json!({})).await, "events").len(), 1, "recorded once");
    let d = s.data(Some(&alice), INBOX, json!({})).await;
    assert_eq!(nodes(&d, "notifications").iter().filter(|n| n["type"] == "reactor_refused").count(), 1, "told once");
    let (_, metrics) = s.metrics_text().await;
    assert_eq!(refused_count(&metrics), None, "counted by the instance that wrote it, once: {metrics}");
    s.stop();
}

both!(a_refused_orchestration_step_is_recorded_counted_and_told as refused_orchestration_step_recorded_counted_told);

/// A clock pass's refused command is recorded too. A cron job whose agent does not exist (or
/// was archived) cannot fire: each slot's refusal is recorded once however many passes, on
/// however many instances, meet it — in the job's chain, counted, and told to its owner.
async fn a_cron_slot_that_cannot_fire_is_recorded_once(db: Db) {
    use agentlog_api::{metrics::Gauges, reactors::scheduler};
    use agentlog_domain::{
        context::Context,
        cron_jobs::{CronCommand, CronJob},
        envelope::Actor,
    };
    use agentlog_eventlog::EventFilter;

    use crate::scheduling::{app, at, caught_up};

    let (a, b) = (app(&db).await, app(&db).await);
    let create = every_five_minutes("j-ghost", "ghost");
    let ctx = Context::new(at("2026-11-30T10:00:30Z"), uuid::Uuid::now_v7(), Actor::user("alice"), "alice");
    a.handler.execute_stream::<CronJob>("cron-j-ghost", &CronCommand::Create(create), &ctx).await.expect("create job");
    caught_up(&[&a, &b]).await;
    let refusals =
        || async { a.store.read_all(0, &EventFilter::types(["reactor.command_refused"]), 100).await.expect("read") };
    for (state, now) in [(&a, "2026-11-30T10:05:10Z"), (&b, "2026-11-30T10:05:20Z"), (&a, "2026-11-30T10:06:00Z")] {
        let report = scheduler::pass(state, at(now)).await.expect("pass");
        assert!(report.cron_fired.is_empty(), "a job without its agent does not fire");
    }
    let found = refusals().await;
    assert_eq!(found.len(), 1, "one refusal for the slot, whatever the passes: {found:?}");
    let p = &found[0].payload;
    assert_eq!(
        (p["reactor"].as_str(), p["command"].as_str(), p["code"].as_str()),
        (Some("scheduler"), Some("cron.fire"), Some("NOT_FOUND"))
    );
    assert_eq!(p["targetStreamId"], "cron-j-ghost");
    assert_eq!(found[0].metadata.user_id, "alice");
    let job = a.store.read_stream("cron-j-ghost", 1, 1).await.expect("read");
    assert_eq!(found[0].chain().root_source_id, job[0].chain().root_source_id, "in the job's chain");
    let told = a.store.read_all(0, &EventFilter::types(["notification.created"]), 100).await.expect("read");
    let told: Vec<_> = told.iter().filter(|e| e.payload["type"] == "reactor_refused").collect();
    assert_eq!(told.len(), 1, "the owner is told once");
    assert_eq!(told[0].stream_id, "notification-alice");

    // The next slot is a refusal of its own.
    scheduler::pass(&b, at("2026-11-30T10:10:10Z")).await.expect("pass");
    scheduler::pass(&a, at("2026-11-30T10:10:40Z")).await.expect("pass");
    assert_eq!(refusals().await.len(), 2);
    let counted = |state: &agentlog_api::state::AppState| {
        let text = state.metrics.render(Gauges::default());
        text.lines()
            .find(|l| l.starts_with("agentlog_reactor_refusals_total{reactor=\"scheduler\",code=\"NOT_FOUND\"}"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert_eq!(counted(&a) + counted(&b), 2, "counted once each, by the instance that wrote it");
}

both!(a_cron_slot_that_cannot_fire_is_recorded_once as a_cron_slot_that_cannot_fire_is_recorded_once);

/// A job the log cannot fire (its content, written before content was bounded, leaves no room
/// in the run it would start) is that job's refusal, recorded once per slot; it holds back no
/// other user's job, and the pass goes on.
async fn a_job_too_large_to_fire_holds_back_no_one(db: Db) {
    use agentlog_api::reactors::scheduler;
    use agentlog_domain::{
        context::Context,
        cron_jobs::{CronCommand, CronJob},
        envelope::{Actor, EventMetadata, NewEvent},
    };
    use agentlog_eventlog::{EventFilter, ExpectedVersion};

    use crate::scheduling::{app, at, caught_up};

    let a = app(&db).await;
    let job = |id: &str| every_five_minutes(id, "inbox");
    for (owner, id) in [("alice", "j-big"), ("bob", "j-bob")] {
        let ctx = Context::new(at("2026-11-30T10:00:30Z"), uuid::Uuid::now_v7(), Actor::user(owner), owner);
        let stream = format!("cron@{owner}/{id}");
        a.handler.execute_stream::<CronJob>(&stream, &CronCommand::Create(job(id)), &ctx).await.expect("create job");
    }
    // alice's content grown past what a run can carry, as an older server allowed.
    let id = uuid::Uuid::now_v7();
    let big = "x".repeat(1_048_576 - 100);
    let updated = NewEvent::new(
        id,
        "cron.updated",
        json!({"changes": {"content": big}, "lastExecutedReset": false}),
        EventMetadata::source(id, Actor::user("alice"), "alice", "user:alice"),
    );
    a.store.append("cron@alice/j-big", ExpectedVersion::Exact(1), vec![updated]).await.expect("append");
    caught_up(&[&a]).await;
    for now in ["2026-11-30T10:05:10Z", "2026-11-30T10:05:40Z"] {
        let report = scheduler::pass(&a, at(now)).await.expect("the pass goes on");
        assert!(report.skipped.iter().any(|(job, _)| job == "j-big"), "{report:?}");
    }
    let fired = a.store.read_all(0, &EventFilter::types(["cron.fired"]), 100).await.expect("read");
    let jobs: Vec<&str> = fired.iter().map(|e| e.stream_id.as_str()).collect();
    assert_eq!(jobs, ["cron@bob/j-bob"], "bob's job fired once, alice's did not");
    let refusals = a.store.read_all(0, &EventFilter::types(["reactor.command_refused"]), 100).await.expect("read");
    assert_eq!(refusals.len(), 1, "one refusal for the slot: {refusals:?}");
    assert_eq!(refusals[0].payload["targetStreamId"], "cron@alice/j-big");
    assert_eq!(refusals[0].metadata.user_id, "alice");
}

both!(a_job_too_large_to_fire_holds_back_no_one as a_job_too_large_to_fire_holds_back_no_one);

/// A cron job `id` starting `agent` every five minutes in UTC, telling it "run".
fn every_five_minutes(id: &str, agent: &str) -> agentlog_domain::cron_jobs::CreateCronJob {
    agentlog_domain::cron_jobs::CreateCronJob {
        job_id: id.into(),
        agent_id: agent.into(),
        group_id: None,
        name: None,
        pattern: "*/5 * * * *".into(),
        timezone: "UTC".into(),
        content: "run".into(),
        enabled: true,
        max_executions: None,
        conditions: agentlog_domain::cron_jobs::ExecutionConditions::default(),
    }
}

/// A write the log refuses is the refusing user's alone: a cron job whose 128-character id
/// makes its bridged source's name too long, and a failed-run source whose action would pass
/// the payload bound, stop neither the signal bus nor the source reactor for anyone. The long
/// name is hashed (the source is written); the oversized action is recorded as a refusal and
/// told; bob's brief is still told and his source still runs through.
async fn a_write_the_log_refuses_stops_no_reactor(db: Db) {
    use agentlog_api::reactors::scheduler;
    use agentlog_domain::{context::Context, cron_jobs::CronJob, envelope::Actor};

    use crate::scheduling::{app, at, caught_up};

    let long = format!("j{}", "x".repeat(127));
    {
        let a = app(&db).await;
        let ctx = Context::new(at("2026-11-30T10:00:30Z"), uuid::Uuid::now_v7(), Actor::user("alice"), "alice");
        let create = agentlog_domain::cron_jobs::CronCommand::Create(every_five_minutes(&long, "inbox"));
        a.handler.execute_stream::<CronJob>(&format!("cron@alice/{long}"), &create, &ctx).await.expect("create job");
        caught_up(&[&a]).await;
        let report = scheduler::pass(&a, at("2026-11-30T10:05:10Z")).await.expect("pass");
        assert_eq!(report.cron_fired.len(), 1, "{report:?}");
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let emit = "mutation($id: String!, $t: String!, $p: JSON!) { emitSourceEvent(sourceId: $id, sourceType: $t, payload: $p, timestampMs: 1700000000000) { accepted } }";
    let huge = json!({"operationId": "o".repeat(400_000), "error": {"message": "m".repeat(300_000)}});
    s.data(Some(&alice), emit, json!({"id": "huge", "t": "agent.execution.failed", "p": huge})).await;
    let failed = json!({"operationId": "op-b", "error": {"message": "boom"}});
    s.data(Some(&bob), emit, json!({"id": "src-b", "t": "agent.execution.failed", "p": failed})).await;
    s.data(
        Some(&bob),
        "mutation { createBrief(input: {briefId: \"b1\", type: \"decision\", title: \"Pick\", summary: \"A or B\"}) { position } }",
        json!({}),
    )
    .await;

    let types = |d: &Value| {
        nodes(d, "notifications").iter().map(|n| n["type"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (mut bobs, mut alices) = (Vec::new(), Vec::new());
    while std::time::Instant::now() < deadline {
        bobs = types(&s.data(Some(&bob), INBOX, json!({})).await);
        alices = nodes(&s.data(Some(&alice), REFUSALS, json!({})).await, "events");
        if bobs.len() >= 2 && !alices.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(bobs.len() >= 2, "bob is told of his brief and of his failed run: {bobs:?}");
    assert_eq!(alices.len(), 1, "alice's oversized action, refused once: {alices:?}");
    assert_eq!(alices[0]["payload"]["code"], "VALIDATION", "{alices:?}");
    let sources =
        "{ events(filter: {eventTypes: [\"signal.source_received\"]}) { edges { node { streamId payload } } } }";
    let received = nodes(&s.data(Some(&alice), sources, json!({})).await, "events");
    assert!(
        received.iter().any(|e| e["payload"]["sourceId"].as_str().is_some_and(|id| id.starts_with("~h"))),
        "the cron fire's source, under a hashed name: {received:?}"
    );
    s.stop();
}

both!(a_write_the_log_refuses_stops_no_reactor as a_write_the_log_refuses_stops_no_reactor);
