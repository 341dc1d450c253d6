//! Ids per owner: for a kind whose ids a client chooses per owner (cron jobs, groups, agents,
//! budgets, sources, briefs, topics, tasks, operations), creating
//! an id another user holds succeeds and makes the creator's own; neither user sees the other's;
//! an admin names the owner with `ownerId`; logs written before ids were per owner (global
//! streams `<kind>-<id>`) stay readable by their owner only.

use crate::support;

use agentlog_api::{
    reactors::{scheduler, signal_bus},
    server::open_app,
    state::{ApiLimits, Settings},
};
use agentlog_domain::{
    context::Context,
    cron_jobs::{CreateCronJob, CronCommand, CronJob, ExecutionConditions},
    envelope::Actor,
    groups::{Group, GroupCommand},
};
use agentlog_eventlog::EventFilter;
use chrono::{Duration, Utc};
use serde_json::{Value, json};
use support::{Db, Server};
use uuid::Uuid;

mod agents;
mod analytics;
mod briefs;
mod budgets;
mod operations;
mod sources;
mod tasks;
mod topics;

const CREATE_JOB: &str = "mutation($n: String!, $o: String) { createCronJob(input: {jobId: \"j1\", agentId: \"inbox\", \
    name: $n, pattern: \"0 9 * * *\", timezone: \"UTC\", content: \"c\", enabled: false}, ownerId: $o) \
    { cronJob { jobId userId name globalId } } }";
const JOB: &str = "query($o: String) { cronJob(id: \"j1\", ownerId: $o) { userId name globalId } }";
const CREATE_GROUP: &str = "mutation($t: String!, $o: String) { createGroup(id: \"g1\", title: $t, config: {}, \
    members: [{agentId: \"inbox\", role: \"participant\", enabled: true, order: 0}], ownerId: $o) \
    { group { id userId title globalId members { agentId } } } }";
const GROUP: &str = "query($o: String) { group(id: \"g1\", ownerId: $o) { userId title members { agentId } } }";

/// The error code and the message with `id` masked.
fn refusal(r: &Value, id: &str) -> (Option<String>, String) {
    (support::error_code(r), r["errors"][0]["message"].as_str().unwrap_or("").replace(id, "<id>"))
}

/// As `token`'s user, subscribe to `follow` on another owner's `theirs` (`ownerId: owner`) and
/// on the unknown id `unknown`: both first answers, which must refuse alike.
async fn subscription_refusals(
    s: &Server,
    token: &str,
    follow: &str,
    (theirs, owner): (&str, &str),
    unknown: &str,
) -> ((Option<String>, String), (Option<String>, String)) {
    let mut ws = support::Ws::connect(s, token, "graphql-transport-ws").await;
    ws.subscribe("1", follow, json!({"id": theirs, "o": owner})).await;
    ws.subscribe("2", follow, json!({"id": unknown})).await;
    let (mut first, mut second) = (Value::Null, Value::Null);
    while first.is_null() || second.is_null() {
        let v = ws.next_json().await.expect("an answer");
        match (v["id"].as_str(), v["type"].as_str()) {
            (Some("1"), Some("next")) => first = v,
            (Some("2"), Some("next")) => second = v,
            _ => {}
        }
    }
    ws.cut().await;
    (refusal(&first["payload"], theirs), refusal(&second["payload"], unknown))
}

async fn cron_job_and_group_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    // The same ids, one each: bob's create succeeds as for an unknown id.
    let a = s.data(Some(&alice), CREATE_JOB, json!({"n": "alice's"})).await;
    let b = s.data(Some(&bob), CREATE_JOB, json!({"n": "bob's"})).await;
    assert_eq!(a["createCronJob"]["cronJob"]["userId"], "alice", "{a}");
    assert_eq!(b["createCronJob"]["cronJob"]["userId"], "bob", "{b}");
    assert_eq!(b["createCronJob"]["cronJob"]["name"], "bob's", "{b}");
    let ga = s.data(Some(&alice), CREATE_GROUP, json!({"t": "alice's"})).await;
    let gb = s.data(Some(&bob), CREATE_GROUP, json!({"t": "bob's"})).await;
    assert_eq!(ga["createGroup"]["group"]["userId"], "alice", "{ga}");
    assert_eq!(gb["createGroup"]["group"]["userId"], "bob", "{gb}");
    // An id its owner already holds is the domain's CONFLICT, as always.
    let again = s.gql(Some(&alice), CREATE_JOB, json!({"n": "twice"})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");
    let again = s.gql(Some(&bob), CREATE_GROUP, json!({"t": "twice"})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");

    // Each sees their own only.
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let job = s.data(Some(token), JOB, json!({})).await;
        assert_eq!(job["cronJob"]["name"], format!("{who}'s"), "{job}");
        let group = s.data(Some(token), GROUP, json!({})).await;
        assert_eq!(group["group"]["title"], format!("{who}'s"), "{group}");
        let jobs = s.data(Some(token), "{ cronJobs { edges { node { userId } } } }", json!({})).await;
        assert_eq!(jobs["cronJobs"]["edges"].as_array().map(Vec::len), Some(1), "{jobs}");
        let member_of = "{ groups(memberAgentId: \"inbox\") { edges { node { userId } } } }";
        let groups = s.data(Some(token), member_of, json!({})).await;
        assert_eq!(groups["groups"]["edges"].as_array().map(Vec::len), Some(1), "{groups}");
        assert_eq!(groups["groups"]["edges"][0]["node"]["userId"], who, "{groups}");
    }

    // Bob's changes are his; alice's job and group are untouched.
    let update = "mutation { updateCronJob(id: \"j1\", patch: {name: \"bob's new\"}) { cronJob { userId name } } }";
    let u = s.data(Some(&bob), update, json!({})).await;
    assert_eq!(u["updateCronJob"]["cronJob"]["userId"], "bob", "{u}");
    let add =
        "mutation { addGroupMember(id: \"g1\", agentId: \"task-agent\") { group { userId members { agentId } } } }";
    let m = s.data(Some(&bob), add, json!({})).await;
    assert_eq!(m["addGroupMember"]["group"]["members"].as_array().map(Vec::len), Some(2), "{m}");
    assert_eq!(s.data(Some(&alice), JOB, json!({})).await["cronJob"]["name"], "alice's");
    let ag = s.data(Some(&alice), GROUP, json!({})).await;
    assert_eq!(ag["group"]["members"].as_array().map(Vec::len), Some(1), "{ag}");

    // Naming another owner: a user finds nothing (as for an unknown id), an admin finds theirs.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let mutations = [
        ("cron job", "mutation($o: String) { enableCronJob(id: \"{ID}\", ownerId: $o) { position } }"),
        ("cron job", "mutation($o: String) { deleteCronJob(id: \"{ID}\", ownerId: $o) { position } }"),
        ("group", "mutation($o: String) { deleteGroup(id: \"{ID}\", ownerId: $o) { position } }"),
        (
            "group",
            "mutation($o: String) { removeGroupMember(id: \"{ID}\", agentId: \"inbox\", ownerId: $o) { position } }",
        ),
        ("group", "query($o: String) { group(id: \"{ID}\", ownerId: $o) { id } }"),
        ("cron job", "query($o: String) { cronJob(id: \"{ID}\", ownerId: $o) { jobId } }"),
    ];
    for (what, template) in mutations {
        let id = if what == "cron job" { "j1" } else { "g1" };
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", id), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, id), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        // An admin without `ownerId` acts in its own namespace, where there is none.
        let own = s.gql(Some(&admin), &template.replace("{ID}", id), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");
    let job = s.data(Some(&admin), JOB, json!({"o": "alice"})).await;
    assert_eq!(job["cronJob"]["name"], "alice's", "{job}");
    let upd = "mutation($o: String) { updateCronJob(id: \"j1\", patch: {name: \"by admin\"}, ownerId: $o) { cronJob { userId name } } }";
    let u = s.data(Some(&admin), upd, json!({"o": "alice"})).await;
    assert_eq!(u["updateCronJob"]["cronJob"], json!({"userId": "alice", "name": "by admin"}), "{u}");
    assert_eq!(s.data(Some(&bob), JOB, json!({})).await["cronJob"]["name"], "bob's new");
    let cfg = "mutation($o: String) { updateGroupConfig(id: \"g1\", config: {maxRounds: 4}, ownerId: $o) { group { userId } } }";
    let g = s.data(Some(&admin), cfg, json!({"o": "bob"})).await;
    assert_eq!(g["updateGroupConfig"]["group"]["userId"], "bob", "{g}");
    // An admin creates for a user with `ownerId`, beside that user's other ids.
    let made =
        s.data(Some(&admin), CREATE_GROUP.replace("g1", "g2").as_str(), json!({"t": "for carol", "o": "carol"})).await;
    assert_eq!(made["createGroup"]["group"]["userId"], "carol", "{made}");

    // Global ids name the owner: each resolves to its own object.
    for (node, want) in [(&a["createCronJob"]["cronJob"], "alice"), (&gb["createGroup"]["group"], "bob")] {
        let q = "query($id: ID!) { node(id: $id) { ... on CronJob { userId } ... on Group { userId } } }";
        let found = s.data(Some(&admin), q, json!({"id": node["globalId"]})).await;
        assert_eq!(found["node"]["userId"], want, "{found}");
        let hidden =
            s.data(Some(if want == "alice" { &bob } else { &alice }), q, json!({"id": node["globalId"]})).await;
        assert!(hidden["node"].is_null(), "{hidden}");
    }

    // Owned streams in the log, the client's id in the payload, the owner in the metadata.
    let db = s.stop();
    let log = support::read_log(&db).await;
    let created: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e.event_type == "cron.created" || e.event_type == "group.created")
        .map(|e| (e.stream_id.as_str(), e.user_id()))
        .collect();
    assert_eq!(
        created,
        [
            ("cron@alice/j1", "alice"),
            ("cron@bob/j1", "bob"),
            ("group@alice/g1", "alice"),
            ("group@bob/g1", "bob"),
            ("group@carol/g2", "carol")
        ]
    );
    support::verify_read_models(&db).await;
}

fn job(id: &str, agent: &str) -> CronCommand {
    CronCommand::Create(CreateCronJob {
        job_id: id.into(),
        agent_id: agent.into(),
        group_id: None,
        name: Some(format!("{id} job")),
        pattern: "* * * * *".into(),
        timezone: "UTC".into(),
        content: "go".into(),
        enabled: true,
        max_executions: None,
        conditions: ExecutionConditions::default(),
    })
}

/// A log written before ids were per owner: alice's job and group in the global streams
/// `cron-old` and `group-old`. Through the server, alice still reads and changes them (in those
/// streams); bob sees nothing there and creates his own `old`.
async fn legacy_global_streams_stay_their_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        state.handler.execute_stream::<CronJob>("cron-old", &job("old", "inbox"), &ctx).await.expect("legacy job");
        let create = GroupCommand::Create {
            group_id: "old".into(),
            title: "legacy".into(),
            config: serde_json::from_value(json!({})).expect("config"),
            members: Vec::new(),
        };
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        state.handler.execute_stream::<Group>("group-old", &create, &ctx).await.expect("legacy group");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ cronJob(id: \"old\") { userId name } group(id: \"old\") { userId title } }";
    let mine = s.data(Some(&alice), q, json!({})).await;
    assert_eq!(mine["cronJob"], json!({"userId": "alice", "name": "old job"}), "{mine}");
    assert_eq!(mine["group"], json!({"userId": "alice", "title": "legacy"}), "{mine}");
    s.data(Some(&alice), "mutation { disableCronJob(id: \"old\") { position } }", json!({})).await;
    s.data(Some(&alice), "mutation { addGroupMember(id: \"old\", agentId: \"inbox\") { position } }", json!({})).await;
    // Bob: alice's global streams are not his; his own `old` is created beside them.
    for field in ["cronJob(id: \"old\") { userId }", "group(id: \"old\") { userId }"] {
        let r = s.gql(Some(&bob), &format!("{{ {field} }}"), json!({})).await;
        assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    }
    let r = s.gql(Some(&bob), "mutation { enableCronJob(id: \"old\") { position } }", json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let create = "mutation { createCronJob(input: {jobId: \"old\", agentId: \"inbox\", pattern: \"0 9 * * *\", \
        timezone: \"UTC\", content: \"c\", enabled: false}) { cronJob { userId } } }";
    assert_eq!(s.data(Some(&bob), create, json!({})).await["createCronJob"]["cronJob"]["userId"], "bob");
    let create = "mutation { createGroup(id: \"old\", title: \"bob's\", config: {}) { group { userId title } } }";
    assert_eq!(s.data(Some(&bob), create, json!({})).await["createGroup"]["group"]["title"], "bob's");
    let theirs = s.data(Some(&alice), q, json!({})).await;
    assert_eq!(theirs["group"]["title"], "legacy", "alice's is still hers: {theirs}");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("cron.disabled"), ["cron-old"], "alice's change lands in her global stream");
    assert_eq!(streams("group.member_added"), ["group-old"]);
    assert_eq!(streams("cron.created"), ["cron-old", "cron@bob/old"]);
    assert_eq!(streams("group.created"), ["group-old", "group@bob/old"]);
    support::verify_read_models(&db).await;
}

/// Two users' jobs `j1` fire apart, each as its owner, with sources of their own.
async fn same_named_jobs_of_two_users_fire_apart(db: Db) {
    let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
    let t = Utc::now() - Duration::minutes(10);
    for owner in ["alice", "bob"] {
        let ctx = Context::new(t, Uuid::now_v7(), Actor::user(owner), owner);
        state.handler.execute_of::<CronJob>(owner, "j1", &job("j1", "inbox"), &ctx).await.expect("create job");
    }
    state.runner.catch_up().await.expect("catch up");
    let report = scheduler::pass(&state, Utc::now()).await.expect("pass");
    let mut fired = report.cron_fired.clone();
    fired.sort();
    assert_eq!(fired.len(), 2, "{report:?}");
    assert!(fired[0].starts_with("cron@alice/j1@") && fired[1].starts_with("cron@bob/j1@"), "{fired:?}");
    let facts = state.store.read_all(0, &EventFilter::types(["cron.fired"]), 100).await.expect("read");
    assert_eq!(facts.len(), 2);
    for fact in &facts {
        signal_bus::react(&state, fact).await.expect("bus");
    }
    let sources = state.store.read_all(0, &EventFilter::types(["signal.source_received"]), 100).await.expect("read");
    let mut owners: Vec<&str> = sources.iter().map(|e| e.user_id()).collect();
    owners.sort_unstable();
    assert_eq!(owners, ["alice", "bob"], "one source each: {sources:?}");
    let runs = state.store.read_all(0, &EventFilter::types(["operation.created"]), 100).await.expect("read");
    let mut run_owners: Vec<&str> = runs.iter().map(|e| e.user_id()).collect();
    run_owners.sort_unstable();
    assert_eq!(run_owners, ["alice", "bob"], "each job runs as its owner");
}

both!(
    cron_job_and_group_ids_are_per_owner as cron_job_and_group_ids_per_owner,
    legacy_global_streams_stay_their_owners as legacy_streams_stay_their_owners,
    same_named_jobs_of_two_users_fire_apart as same_named_jobs_fire_apart
);
