//! The scheduler, the task lifecycle and the lease reaper.
//!
//! End to end over the real server: a heartbeat task runs three times (each run's hand-off
//! reaching the next run's prompt) and completes, with two server processes scheduling; a
//! failed run pauses its task and yields an urgent brief and a notification; a human-in-the-loop
//! round trip; a cron job's minute fires once with two server processes on the real clock. In process, with the clock driven by the test: cron slots
//! fire once across two instances and concurrent passes, missed slots once, in the job's time
//! zone, with executions counted down; expired leases interrupt their runs once and notify.

use crate::support;

use agentlog_api::{
    reactors::{Reactor, lease_reaper, scheduler, signal_bus, sources::Sources},
    server::open_app,
    state::{ApiLimits, AppState, Settings},
};
use agentlog_domain::{
    context::Context,
    cron_jobs::{CreateCronJob, CronCommand, CronJob, ExecutionConditions},
    envelope::{Actor, RecordedEvent},
    operations::{CreateOperation, Operation, OperationCommand, OperationKind},
    values::AgentRef,
};
use agentlog_eventlog::EventFilter;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use support::{Db, Server};
use uuid::Uuid;

const TASK: &str = "{ task(id: \"t1\") { status error totalTopics topics { edges { node { topicId operationId status trigger handoff } } } } }";

fn topics(d: &Value) -> Vec<Value> {
    d["task"]["topics"]["edges"].as_array().map(|e| e.iter().map(|n| n["node"].clone()).collect()).unwrap_or_default()
}

/// Act as the worker for the task's running topic: claim its operation and complete it with a
/// hand-off. Answers the operation id.
async fn work_the_running_topic(s: &Server, token: &str, n: usize) -> String {
    let d = s
        .eventually(token, TASK, |d| {
            topics(d).iter().filter(|t| t["status"] == "running").count() == 1 && topics(d).len() == n
        })
        .await;
    let topic = topics(&d).into_iter().find(|t| t["status"] == "running").expect("a running topic");
    let op = topic["operationId"].as_str().expect("operation id").to_string();
    assert_eq!(topic["trigger"], "heartbeat", "{d}");
    let lt = s.claim(token, &op, "w1").await;
    let handoff = json!({"title": format!("run {n}"), "summary": "did part of it", "keyFindings": [format!("finding {n}")], "nextAction": format!("do part {}", n + 1)});
    s.data(
        Some(token),
        "mutation($id: String!, $lt: String!, $h: HandoffInput) { completeOperation(id: $id, leaseToken: $lt, result: \"A substantive summary of the work.\", handoff: $h) { position } }",
        json!({"id": op, "lt": lt, "h": handoff}),
    )
    .await;
    op
}

async fn a_heartbeat_task_runs_three_times_and_completes(db: Db) {
    let s = Server::start(db).await;
    // A second server process on the same database runs its scheduler too: each tick still
    // starts one run (exactly three topics below).
    let other = s.sibling().await;
    let alice = s.user_token("alice").await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Write the report.",
        "automationMode": "heartbeat", "heartbeat": {"intervalSecs": 1}, "maxTopics": 3});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    // Scheduling a heartbeat task publishes its first tick, due now.
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t1\", status: \"scheduled\") { position } }", json!({}))
        .await;
    let mut ops = Vec::new();
    for n in 1..=3 {
        ops.push(work_the_running_topic(&s, &alice, n).await);
    }
    let d = s.eventually(&alice, TASK, |d| d["task"]["status"] == "completed").await;
    let done = topics(&d);
    assert_eq!(done.len(), 3, "{d}");
    assert!(done.iter().all(|t| t["status"] == "completed"), "{d}");
    for (i, t) in done.iter().enumerate() {
        assert_eq!(t["handoff"]["title"], format!("run {}", i + 1), "{d}");
    }
    // Each run after the first starts from the last one's hand-off.
    for (i, op) in ops.iter().enumerate() {
        let o = s
            .data(
                Some(&alice),
                "query($id: String!) { operation(id: $id) { kind trigger instruction } }",
                json!({"id": op}),
            )
            .await;
        assert_eq!(o["operation"]["trigger"], "task:heartbeat", "{o}");
        let instruction = o["operation"]["instruction"].as_str().unwrap_or_default();
        assert!(instruction.starts_with("Write the report."), "{o}");
        if i == 0 {
            assert!(!instruction.contains("Where the last run left off"), "{o}");
        } else {
            assert!(instruction.contains(&format!("Last run: run {i}")), "{o}");
            assert!(instruction.contains(&format!("Next action: do part {}", i + 1)), "{o}");
        }
    }
    // Completed: no fourth run, however long we wait for one.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let d = s.data(Some(&alice), TASK, json!({})).await;
    assert_eq!(topics(&d).len(), 3, "{d}");
    drop(other);
    s.stop();
}

async fn a_failed_run_pauses_its_task_with_an_urgent_brief_and_a_notification(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Deploy."});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    s.data(
        Some(&alice),
        "mutation { runTask(id: \"t1\", topicId: \"tp1\", operationId: \"run1\") { position } }",
        json!({}),
    )
    .await;
    let lt = s.claim(&alice, "run1", "w1").await;
    s.data(
        Some(&alice),
        "mutation($lt: String!) { failOperation(id: \"run1\", leaseToken: $lt, message: \"the cluster refused the deploy\", code: \"DEPLOY_REFUSED\") { position } }",
        json!({"lt": lt}),
    )
    .await;
    let d = s.eventually(&alice, TASK, |d| d["task"]["status"] == "paused").await;
    assert_eq!(d["task"]["error"], "the cluster refused the deploy", "{d}");
    assert_eq!(topics(&d)[0]["status"], "failed", "{d}");
    let briefs = s
        .eventually(
            &alice,
            "{ briefs(filter: {type: \"error\"}) { edges { node { priority taskId summary } } } }",
            |d| d["briefs"]["edges"].as_array().is_some_and(|e| e.iter().any(|b| b["node"]["taskId"] == "t1")),
        )
        .await;
    let brief = briefs["briefs"]["edges"].as_array().unwrap().iter().find(|b| b["node"]["taskId"] == "t1").unwrap();
    assert_eq!(brief["node"]["priority"], "urgent", "{briefs}");
    s.eventually(&alice, "{ notifications { edges { node { dedupeKey } } } }", |d| {
        d["notifications"]["edges"].as_array().is_some_and(|e| !e.is_empty())
    })
    .await;
    s.stop();
}

async fn a_human_in_the_loop_round_trip(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Deploy."});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    s.data(
        Some(&alice),
        "mutation { runTask(id: \"t1\", topicId: \"tp1\", operationId: \"run1\") { position } }",
        json!({}),
    )
    .await;
    let lt = s.claim(&alice, "run1", "w1").await;
    let card = json!({"cardId": "c1", "title": "Deploy to production?", "kind": "confirm"});
    s.data(
        Some(&alice),
        "mutation($c: JSON!, $lt: String!) { askHuman(id: \"run1\", leaseToken: $lt, card: $c) { position } }",
        json!({"c": card, "lt": lt}),
    )
    .await;
    // The owner is asked (a decision notification); the run waits, and its topic goes on.
    let inbox = s
        .eventually(&alice, "{ notifications { edges { node { type dedupeKey title } } } }", |d| {
            d["notifications"]["edges"]
                .as_array()
                .is_some_and(|e| e.iter().any(|n| n["node"]["type"] == "decision_required"))
        })
        .await;
    let asked = inbox["notifications"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"]["type"] == "decision_required")
        .unwrap();
    assert_eq!(asked["node"]["dedupeKey"], "hitl:run1:c1", "{inbox}");
    assert_eq!(asked["node"]["title"], "Deploy to production?");
    let d = s.data(Some(&alice), TASK, json!({})).await;
    assert_eq!(topics(&d)[0]["status"], "running", "a pause is not an end: {d}");
    // The human answers; the worker goes on and finishes with a hand-off.
    let d = s
        .data(
            Some(&alice),
            "mutation { answerCard(id: \"run1\", cardId: \"c1\", answer: {kind: \"confirm\", confirmed: true}) { operation { status } } }",
            json!({}),
        )
        .await;
    assert_eq!(d["answerCard"]["operation"]["status"], "running", "{d}");
    let lt = s.claim(&alice, "run1", "w1").await;
    s.data(
        Some(&alice),
        "mutation($lt: String!) { completeOperation(id: \"run1\", leaseToken: $lt, result: \"Deployed version 42 to production.\", handoff: {title: \"deployed\"}) { position } }",
        json!({"lt": lt}),
    )
    .await;
    // A manual task pauses for its human after a run (pauseAfterTopic defaults to true).
    let d = s.eventually(&alice, TASK, |d| topics(d).first().is_some_and(|t| t["status"] == "completed")).await;
    assert_eq!(topics(&d)[0]["handoff"]["title"], "deployed", "{d}");
    let d = s.eventually(&alice, TASK, |d| d["task"]["status"] == "paused").await;
    assert_eq!(d["task"]["status"], "paused");
    s.stop();
}

/// Two server processes on one database, each running its scheduler against the real clock: a
/// cron job's next minute fires once, and starts one run.
async fn cron_fires_once_across_two_server_processes(db: Db) {
    let s = Server::start(db).await;
    let other = s.sibling().await;
    let alice = s.user_token("alice").await;
    let job = json!({"jobId": "j1", "agentId": "inbox", "pattern": "* * * * *", "timezone": "UTC", "content": "tick", "enabled": true});
    s.data(Some(&alice), "mutation($i: JSON!) { createCronJob(input: $i) { position } }", json!({"i": job})).await;
    let fired = "{ events(first: 100, filter: {eventTypes: [\"cron.fired\"]}) { edges { node { payload } } } }";
    let d = s
        .eventually_for(&alice, fired, std::time::Duration::from_secs(75), |d| {
            d["events"]["edges"].as_array().is_some_and(|e| !e.is_empty())
        })
        .await;
    let slot = d["events"]["edges"][0]["node"]["payload"]["localTime"].clone();
    // Both schedulers have passed that minute several times by now.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let d = s.data(Some(&alice), fired, json!({})).await;
    let slots: Vec<&Value> =
        d["events"]["edges"].as_array().unwrap().iter().map(|e| &e["node"]["payload"]["localTime"]).collect();
    assert_eq!(slots.iter().filter(|t| ***t == slot).count(), 1, "{d}");
    let runs = s
        .data(Some(&alice), "{ operations(first: 100) { edges { node { id trigger instruction } } } }", json!({}))
        .await;
    let cron_runs: Vec<&Value> =
        runs["operations"]["edges"].as_array().unwrap().iter().filter(|e| e["node"]["trigger"] == "cron:j1").collect();
    assert_eq!(cron_runs.len(), slots.len(), "one run per fire: {runs}");
    assert_eq!(cron_runs[0]["node"]["instruction"], "tick");
    drop(other);
    s.stop();
}

// ---- in process, the clock driven by the test ----------------------------------------------

pub(crate) async fn app(db: &Db) -> AppState {
    open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app")
}

pub(crate) fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
}

fn ctx(now: DateTime<Utc>, user: &str) -> Context {
    Context::new(now, Uuid::now_v7(), Actor::user(user), user)
}

pub(crate) async fn create_job(
    state: &AppState,
    id: &str,
    pattern: &str,
    tz: &str,
    max: Option<u32>,
    now: DateTime<Utc>,
) {
    let create = CreateCronJob {
        job_id: id.into(),
        agent_id: "inbox".into(),
        group_id: None,
        name: None,
        pattern: pattern.into(),
        timezone: tz.into(),
        content: format!("run {id}"),
        enabled: true,
        max_executions: max,
        conditions: ExecutionConditions::default(),
    };
    // Written in the global form, as before job ids were per owner (the scheduler reads both).
    let stream = agentlog_domain::streams::StreamKind::Cron.stream_id(id);
    state
        .handler
        .execute_stream::<CronJob>(&stream, &CronCommand::Create(create), &ctx(now, "alice"))
        .await
        .expect("create job");
}

pub(crate) async fn fired(state: &AppState, job: &str) -> Vec<Value> {
    let events = state.store.read_stream(&format!("cron-{job}"), 1, 10_000).await.expect("read");
    events.into_iter().filter(|e| e.event_type == "cron.fired").map(|e| e.payload).collect()
}

pub(crate) async fn caught_up(states: &[&AppState]) {
    for s in states {
        s.runner.catch_up().await.expect("catch up");
    }
}

/// What the signal bus and the source reactor append in answer to `fact`, each instance reacting
/// to everything (as two servers would), until nothing new appears. Answers the source events.
async fn through_the_bus(states: &[&AppState], fact: &RecordedEvent) -> Vec<RecordedEvent> {
    for s in states {
        signal_bus::react(s, fact).await.expect("bus");
    }
    let mut seen = 0;
    loop {
        let filter = EventFilter::all().with_stream_prefix("source");
        let events = states[0].store.read_all(0, &filter, 10_000).await.expect("read");
        if events.len() == seen {
            return events;
        }
        seen = events.len();
        for e in &events {
            for s in states {
                Sources::react(s, e).await.expect("sources");
            }
        }
    }
}

async fn notifications(state: &AppState, user: &str) -> Vec<RecordedEvent> {
    let inbox = state.store.read_stream(&format!("notification-{user}"), 1, 100).await.expect("read");
    inbox.into_iter().filter(|e| e.event_type == "notification.created").collect()
}

async fn cron_slots_fire_once(db: Db) {
    let one = app(&db).await;
    let two = app(&db).await;
    let t0 = at("2026-11-30T08:00:30Z");
    create_job(&one, "j1", "*/5 * * * *", "Europe/Berlin", None, t0).await;
    create_job(&one, "j2", "0 9 * * *", "America/New_York", Some(2), t0).await;
    caught_up(&[&one, &two]).await;

    // Not due yet: the first slot after creation is 08:05.
    let r = scheduler::pass(&one, at("2026-11-30T08:04:59Z")).await.expect("pass");
    assert!(r.cron_fired.is_empty(), "{r:?}");

    // Ten minutes on, both instances pass: the latest slot (09:10 Berlin) fires once, the
    // missed 09:05 not at all.
    let now = at("2026-11-30T08:10:20Z");
    let r1 = scheduler::pass(&one, now).await.expect("pass");
    let r2 = scheduler::pass(&two, now).await.expect("pass");
    assert_eq!(r1.cron_fired, ["j1@2026-11-30T09:10"], "{r1:?}");
    assert!(r2.cron_fired.is_empty(), "the second instance fires nothing: {r2:?}");
    let f = fired(&one, "j1").await;
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["localTime"], "2026-11-30T09:10:00+01:00");

    // Concurrent passes on a new slot: still once.
    caught_up(&[&one, &two]).await;
    let now = at("2026-11-30T08:15:01Z");
    let (a, b) = tokio::join!(scheduler::pass(&one, now), scheduler::pass(&two, now));
    let total = a.expect("pass").cron_fired.len() + b.expect("pass").cron_fired.len();
    assert!(total <= 2, "each instance reports at most its own fire");
    assert_eq!(fired(&one, "j1").await.len(), 2, "one event for the 09:15 slot");

    // Three days down: each job fires once on the way back up, not once per missed slot.
    caught_up(&[&one, &two]).await;
    let later = at("2026-12-03T15:00:00Z");
    scheduler::pass(&one, later).await.expect("pass");
    scheduler::pass(&two, later).await.expect("pass");
    assert_eq!(fired(&one, "j1").await.len(), 3);
    // j2: 09:00 New York is 14:00 UTC in December.
    let f2 = fired(&one, "j2").await;
    assert_eq!(f2.len(), 1, "{f2:?}");
    assert_eq!(f2[0]["localTime"], "2026-12-03T09:00:00-05:00");
    assert_eq!(f2[0]["remainingExecutions"], 1);

    // Each fire started a run of the job's agent, told the job's content.
    let runs = one.store.read_all(0, &EventFilter::types(["operation.created"]), 10_000).await.expect("read");
    let for_j2: Vec<_> = runs.iter().filter(|e| e.payload["trigger"] == "cron:j2").collect();
    assert_eq!(for_j2.len(), 1);
    assert_eq!(for_j2[0].payload["instruction"], "run j2");
    assert_eq!(runs.len(), 4, "one run per fire");

    // j2's second and last execution disables it; a day later nothing fires.
    caught_up(&[&one]).await;
    scheduler::pass(&one, at("2026-12-04T14:00:30Z")).await.expect("pass");
    caught_up(&[&one]).await;
    scheduler::pass(&one, at("2026-12-05T14:00:30Z")).await.expect("pass");
    assert_eq!(fired(&one, "j2").await.len(), 2);
    let job = one.handler.load_stream::<CronJob>("cron-j2").await.expect("load").state;
    assert!(!job.enabled);
    assert_eq!(job.remaining_executions, Some(0));

    // agentlog's own sources: each fire is recorded on the bus, and running out of executions
    // tells the owner — once, with two instances reacting.
    let j2 = one.store.read_stream("cron-j2", 1, 100).await.expect("read");
    for fact in j2.iter().filter(|e| e.event_type == "cron.fired" || e.event_type == "cron.auto_disabled") {
        through_the_bus(&[&one, &two], fact).await;
    }
    let trail = through_the_bus(&[&one, &two], &j2[0]).await;
    let types = |t: &str| trail.iter().filter(|e| e.event_type == t).count();
    let received: Vec<&str> = trail
        .iter()
        .filter(|e| e.event_type == "signal.source_received")
        .map(|e| e.payload["sourceType"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(received, ["agentlog.cron.fired", "agentlog.cron.fired", "agentlog.cron.exhausted"]);
    assert_eq!(
        (types("signal.emitted"), types("signal.action_dispatched"), types("signal.action_completed")),
        (3, 3, 3)
    );
    let owner = &j2[0].metadata.user_id;
    let exhausted: Vec<_> =
        notifications(&one, owner).await.into_iter().filter(|n| n.payload["type"] == "cron_exhausted").collect();
    assert_eq!(exhausted.len(), 1, "{exhausted:?}");
    assert_eq!(exhausted[0].payload["actionUrl"], "/cron/j2");
    // In the chain of the fact that caused it.
    let disabled = j2.iter().find(|e| e.event_type == "cron.auto_disabled").expect("auto-disabled");
    assert_eq!(exhausted[0].metadata.chain.root_source_id, disabled.metadata.chain.root_source_id);
}

async fn expired_leases_interrupt_once_and_notify(db: Db) {
    let one = app(&db).await;
    let two = app(&db).await;
    let t = Utc::now();
    let agent = AgentRef { agent_id: "a1".into(), config_version: 1, model: None, provider: None };
    let create = CreateOperation::new("op1", OperationKind::Conversation, agent);
    one.handler
        .execute_of::<Operation>("alice", "op1", &OperationCommand::Create(create), &ctx(t, "alice"))
        .await
        .expect("create");
    let claim = OperationCommand::Claim { worker_id: "w1".into(), lease_secs: 60 };
    let worker = Context::new(t, Uuid::now_v7(), Actor::worker("w1"), "alice");
    one.handler.execute_of::<Operation>("alice", "op1", &claim, &worker).await.expect("claim");
    caught_up(&[&one, &two]).await;

    assert!(lease_reaper::pass(&one, t + Duration::seconds(30)).await.expect("pass").is_empty());
    let later = t + Duration::seconds(61);
    let (a, b) = tokio::join!(lease_reaper::pass(&one, later), lease_reaper::pass(&two, later));
    let interrupted = a.expect("pass").len() + b.expect("pass").len();
    assert!(interrupted >= 1);
    let op = one.handler.load_of::<Operation>("alice", "op1").await.expect("load").state;
    assert_eq!(op.status.as_str(), "interrupted");
    let events = one.store.read_stream("operation@alice/op1", 1, 100).await.expect("read");
    let expired: Vec<_> = events.iter().filter(|e| e.event_type == "operation.lease_expired").collect();
    assert_eq!(expired.len(), 1, "expired once across two instances");
    // The signal bus brings it in as agentlog's own source, whose processors tell the owner
    // (once, however often either instance reacts), every step in the expiry's chain.
    let trail = through_the_bus(&[&one, &two], expired[0]).await;
    let steps: Vec<&str> = trail.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        steps,
        ["signal.source_received", "signal.emitted", "signal.action_dispatched", "signal.action_completed"]
    );
    assert_eq!(trail[0].payload["sourceType"], "agentlog.operation.lease_expired");
    assert_eq!(trail[3].payload["status"], "applied", "{:?}", trail[3].payload);
    let created = notifications(&one, "alice").await;
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0].payload["type"], "run_interrupted");
    assert_eq!(created[0].payload["actionUrl"], "/operations/op1");
    for e in trail.iter().chain(&created) {
        assert_eq!(e.metadata.chain.root_source_id, expired[0].metadata.chain.root_source_id, "{}", e.event_type);
    }
    // A pass after the interruption finds nothing to do.
    caught_up(&[&one]).await;
    assert!(lease_reaper::pass(&one, later + Duration::seconds(5)).await.expect("pass").is_empty());
}

both!(
    a_heartbeat_task_runs_three_times_and_completes as scheduled_task_runs_three_times_and_completes,
    a_failed_run_pauses_its_task_with_an_urgent_brief_and_a_notification as failed_task_run_pauses_with_brief,
    a_human_in_the_loop_round_trip as human_in_the_loop_round_trip,
    cron_fires_once_across_two_server_processes as scheduler_cron_fires_once_across_two_processes,
    cron_slots_fire_once as scheduler_cron_slots_fire_once,
    expired_leases_interrupt_once_and_notify as lease_reaper_interrupts_once_and_notifies
);
