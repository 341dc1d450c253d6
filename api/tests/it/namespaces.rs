//! Ids per owner: for a kind whose ids a client chooses per owner (cron jobs, groups), creating
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
    agents::{Agent, AgentCommand, RegisterAgent},
    context::Context,
    cron_jobs::{CreateCronJob, CronCommand, CronJob, ExecutionConditions},
    envelope::Actor,
    groups::{Group, GroupCommand},
    signal::{Source, SourceCommand},
};
use agentlog_eventlog::EventFilter;
use chrono::{Duration, Utc};
use serde_json::{Value, json};
use support::{Db, Server};
use uuid::Uuid;

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

const REGISTER: &str = "mutation($i: JSON!, $o: String) { registerAgent(input: $i, ownerId: $o) \
    { agent { id userId title globalId } } }";
const AGENT: &str = "query($o: String) { agent(id: \"a1\", ownerId: $o) { userId title \
    versions { edges { node { config } } } } }";

fn agent_input(id: &str, title: &str) -> Value {
    json!({"agentId": id, "config": {"slug": id, "title": title}})
}

/// Agent ids are per owner: bob registers alice's `a1` as his own; each sees, changes and runs
/// under their own; another user's `a1` answers as an unknown id; the built-ins stay everyone's.
async fn agent_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    let a = s.data(Some(&alice), REGISTER, json!({"i": agent_input("a1", "alice's")})).await;
    let b = s.data(Some(&bob), REGISTER, json!({"i": agent_input("a1", "bob's")})).await;
    assert_eq!(a["registerAgent"]["agent"]["userId"], "alice", "{a}");
    assert_eq!(b["registerAgent"]["agent"]["userId"], "bob", "{b}");
    assert_eq!(b["registerAgent"]["agent"]["title"], "bob's", "{b}");
    let again = s.gql(Some(&alice), REGISTER, json!({"i": agent_input("a1", "twice")})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");
    // A built-in id stays reserved: it is everyone's, not an unknown id.
    let reserved = s.gql(Some(&bob), REGISTER, json!({"i": agent_input("inbox", "mine")})).await;
    assert_eq!(support::error_code(&reserved).as_deref(), Some("CONFLICT"), "{reserved}");

    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let agent = s.data(Some(token), AGENT, json!({})).await;
        assert_eq!(agent["agent"]["title"], format!("{who}'s"), "{agent}");
        let versions = agent["agent"]["versions"]["edges"].as_array().cloned().unwrap_or_default();
        assert_eq!(versions.len(), 1, "{agent}");
        assert_eq!(versions[0]["node"]["config"]["title"], format!("{who}'s"), "{agent}");
        let list = s.data(Some(token), "{ agents(builtin: false) { edges { node { userId } } } }", json!({})).await;
        assert_eq!(list["agents"]["edges"], json!([{"node": {"userId": who}}]), "{list}");
        let inbox = s.data(Some(token), "{ agent(id: \"inbox\") { userId builtin } }", json!({})).await;
        assert_eq!(inbox["agent"], json!({"userId": "system", "builtin": true}), "{inbox}");
    }

    // Bob's change is his; a run names `a1` in its owner's namespace.
    let update = "mutation { updateAgentConfig(id: \"a1\", patch: {model: \"m-bob\"}) { agent { userId title } } }";
    let u = s.data(Some(&bob), update, json!({})).await;
    assert_eq!(u["updateAgentConfig"]["agent"], json!({"userId": "bob", "title": "bob's"}), "{u}");
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let topic = format!("c-{who}");
        let create = format!("mutation {{ createConversation(topicId: \"{topic}\") {{ position }} }}");
        s.data(Some(token), &create, json!({})).await;
        let input =
            json!({"operationId": format!("op-{who}"), "kind": "CONVERSATION", "agentId": "a1", "topicId": topic});
        s.data(Some(token), start, json!({"i": input})).await;
        let q = format!("{{ operation(id: \"op-{who}\") {{ agentConfigVersion agentConfig }} }}");
        let op = s.data(Some(token), &q, json!({})).await;
        assert_eq!(op["operation"]["agentConfig"]["title"], format!("{who}'s"), "{op}");
        let version = if who == "bob" { 2 } else { 1 };
        assert_eq!(op["operation"]["agentConfigVersion"], version, "{op}");
    }

    // Naming another owner: a user finds nothing (as for an unknown id), an admin finds theirs.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let templates = [
        "mutation($o: String) { updateAgentConfig(id: \"{ID}\", patch: {model: \"x\"}, ownerId: $o) { position } }",
        "mutation($o: String) { archiveAgent(id: \"{ID}\", ownerId: $o) { position } }",
        "query($o: String) { agent(id: \"{ID}\", ownerId: $o) { id } }",
    ];
    for template in templates {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "a1"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "a1"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        let own = s.gql(Some(&admin), &template.replace("{ID}", "a1"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");

    let by_admin = "mutation($o: String) { archiveAgent(id: \"a1\", ownerId: $o) { agent { userId archived } } }";
    let arch = s.data(Some(&admin), by_admin, json!({"o": "alice"})).await;
    assert_eq!(arch["archiveAgent"]["agent"], json!({"userId": "alice", "archived": true}), "{arch}");
    let q = "query($o: String) { agent(id: \"a1\", ownerId: $o) { archived } }";
    assert_eq!(s.data(Some(&bob), q, json!({})).await["agent"]["archived"], false, "bob's is live");
    let made = s.data(Some(&admin), REGISTER, json!({"i": agent_input("a1", "carol's"), "o": "carol"})).await;
    assert_eq!(made["registerAgent"]["agent"]["userId"], "carol", "{made}");

    // Global ids name the owner.
    let node = "query($id: ID!) { node(id: $id) { ... on Agent { userId title } } }";
    let gid = &b["registerAgent"]["agent"]["globalId"];
    assert_eq!(s.data(Some(&admin), node, json!({"id": gid})).await["node"]["title"], "bob's");
    assert!(s.data(Some(&alice), node, json!({"id": gid})).await["node"].is_null());

    let db = s.stop();
    let log = support::read_log(&db).await;
    let registered: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e.event_type == "agent.registered" && e.user_id() != "system")
        .map(|e| (e.stream_id.as_str(), e.user_id()))
        .collect();
    assert_eq!(registered, [("agent@alice/a1", "alice"), ("agent@bob/a1", "bob"), ("agent@carol/a1", "carol")]);
    assert!(log.iter().any(|e| e.stream_id == "agent-inbox"), "the built-ins keep their global streams");
    support::verify_read_models(&db).await;
}

/// A log written before agent ids were per owner: alice's agent in the global stream
/// `agent-old` stays hers (read, changed and run there); bob registers his own `old`.
async fn legacy_global_agent_stream_stays_its_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let register: RegisterAgent = serde_json::from_value(agent_input("old", "legacy")).expect("register");
        state
            .handler
            .execute_stream::<Agent>("agent-old", &AgentCommand::Register(register), &ctx)
            .await
            .expect("legacy agent");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ agent(id: \"old\") { userId title } }";
    assert_eq!(s.data(Some(&alice), q, json!({})).await["agent"], json!({"userId": "alice", "title": "legacy"}));
    let update = "mutation { updateAgentConfig(id: \"old\", patch: {model: \"m2\"}) { position } }";
    s.data(Some(&alice), update, json!({})).await;
    let r = s.gql(Some(&bob), q, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.gql(Some(&bob), update, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let b = s.data(Some(&bob), REGISTER, json!({"i": agent_input("old", "bob's")})).await;
    assert_eq!(b["registerAgent"]["agent"]["userId"], "bob", "{b}");
    assert_eq!(s.data(Some(&alice), q, json!({})).await["agent"]["title"], "legacy");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("agent.config_updated"), ["agent-old"], "alice's change lands in her global stream");
    let mut mine: Vec<String> = streams("agent.registered").into_iter().filter(|s| s.ends_with("old")).collect();
    mine.sort();
    assert_eq!(mine, ["agent-old", "agent@bob/old"]);
    support::verify_read_models(&db).await;
}

both!(
    agent_ids_are_per_owner as agent_ids_per_owner,
    legacy_global_agent_stream_stays_its_owners as legacy_agent_stream_stays_its_owners
);

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

const EMIT: &str = "mutation($id: String!) { emitSourceEvent(sourceId: $id, sourceType: \"agent.execution.completed\", \
    payload: {n: 1}, timestampMs: 1700000000000) { accepted position scopeKey } }";

/// Source ids are per owner: bob's report with alice's `sourceId` is received as for an unknown
/// id (his own source, its own chain), alice's id again is still her one source, and a global
/// source stream written before ids were per owner stays its owner's.
async fn source_ids_are_per_owner(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let receive = SourceCommand::Receive {
            source_id: "old".into(),
            source_type: "agent.execution.completed".into(),
            payload: json!({"n": 0}),
            scope_key: None,
            timestamp_ms: 1_700_000_000_000,
        };
        state.handler.execute_stream::<Source>("source-old", &receive, &ctx).await.expect("legacy source");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let a = s.data(Some(&alice), EMIT, json!({"id": "s1"})).await;
    let b = s.data(Some(&bob), EMIT, json!({"id": "s1"})).await;
    let unknown = s.data(Some(&bob), EMIT, json!({"id": "s2"})).await;
    assert_eq!(a["emitSourceEvent"]["accepted"], true, "{a}");
    assert_eq!(b["emitSourceEvent"]["accepted"], true, "{b}");
    assert_eq!(b["emitSourceEvent"]["scopeKey"], unknown["emitSourceEvent"]["scopeKey"], "as for an unknown id");
    let again = s.data(Some(&alice), EMIT, json!({"id": "s1"})).await;
    assert_eq!(again["emitSourceEvent"]["accepted"], false, "her own id again is one source: {again}");
    // The global stream of before: alice's id again is that source; bob's is his own.
    let old = s.data(Some(&alice), EMIT, json!({"id": "old"})).await;
    assert_eq!(old["emitSourceEvent"]["accepted"], false, "{old}");
    let old = s.data(Some(&bob), EMIT, json!({"id": "old"})).await;
    assert_eq!(old["emitSourceEvent"]["accepted"], true, "{old}");
    // Each sees only the sources of their own.
    let q = "{ events(filter: {eventTypes: [\"signal.source_received\"]}) { edges { node { streamId userId } } } }";
    for (token, who, want) in [
        (&alice, "alice", vec!["source-old", "source@alice/s1"]),
        (&bob, "bob", vec!["source@bob/s1", "source@bob/s2", "source@bob/old"]),
    ] {
        let d = s.data(Some(token), q, json!({})).await;
        let mut streams: Vec<String> = d["events"]["edges"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .inspect(|e| assert_eq!(e["node"]["userId"], who, "{d}"))
            .filter_map(|e| e["node"]["streamId"].as_str().map(str::to_string))
            .collect();
        streams.sort();
        let mut want: Vec<String> = want.into_iter().map(str::to_string).collect();
        want.sort();
        assert_eq!(streams, want, "{d}");
    }
    let db = s.stop();
    support::verify_read_models(&db).await;
}

both!(source_ids_are_per_owner as source_ids_per_owner);
