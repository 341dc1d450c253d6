//! No existence oracle, no borrowed authority: another user's id answers exactly as an unknown
//! one; a websocket without a valid token is closed with 4401; reactors act as the owner of
//! what triggered them.

use crate::support;

use agentlog_api::{
    reactors::scheduler,
    server::open_app,
    state::{ApiLimits, Settings},
};
use agentlog_domain::{
    agents::{AgentCommand, RegisterAgent},
    context::Context,
    cron_jobs::{CreateCronJob, CronCommand, CronJob, ExecutionConditions},
    envelope::Actor,
};
use chrono::{Duration, Utc};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::{Db, Server};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};
use uuid::Uuid;

/// Mutations naming one id (`{ID}`), as bob calls them.
const BY_ID: &[&str] = &[
    "mutation { updateTask(id: \"{ID}\", patch: {name: \"x\"}) { position } }",
    "mutation { setTaskTopicQuota(id: \"{ID}\", maxTopics: 3) { position } }",
    "mutation { configureTask(id: \"{ID}\", config: {reviewEnabled: true}) { position } }",
    "mutation { configureTaskAutomation(id: \"{ID}\", mode: null) { position } }",
    "mutation { pinTaskDocument(id: \"{ID}\", documentId: \"d1\") { position } }",
    "mutation { unpinTaskDocument(id: \"{ID}\", documentId: \"d1\") { position } }",
    "mutation { addTaskComment(id: \"{ID}\", commentId: \"k1\", content: \"hi\") { position } }",
    "mutation { deleteTaskComment(id: \"{ID}\", commentId: \"k1\") { position } }",
    "mutation { removeTaskDependency(id: \"{ID}\", dependsOnId: \"x\") { position } }",
    "mutation { addTaskDependency(id: \"{ID}\", dependsOnId: \"bob-task\") { position } }",
    "mutation { addTaskDependency(id: \"bob-task\", dependsOnId: \"{ID}\") { position } }",
    "mutation { completeTaskTopic(id: \"{ID}\", outcome: {topicId: \"tp-a\", status: \"completed\"}) { position } }",
    "mutation { cancelTaskTopic(id: \"{ID}\", topicId: \"tp-a\") { position } }",
    "mutation { reviewTaskTopic(id: \"{ID}\", topicId: \"tp-a\", score: 50, passed: true) { position } }",
    "mutation { recordTaskHeartbeat(id: \"{ID}\") { position } }",
    "mutation { changeTaskStatus(id: \"{ID}\", status: \"canceled\") { position } }",
    "mutation { markBriefRead(id: \"{ID}\") { position } }",
    "mutation { resolveBrief(id: \"{ID}\", action: \"approve\") { position } }",
    "mutation { updateCronJob(id: \"{ID}\", patch: {name: \"x\"}) { position } }",
    "mutation { enableCronJob(id: \"{ID}\") { position } }",
    "mutation { resetCronJobExecutions(id: \"{ID}\") { position } }",
    "mutation { deleteCronJob(id: \"{ID}\") { position } }",
    "mutation { updateAgentConfig(id: \"{ID}\", patch: {title: \"x\"}) { position } }",
    "mutation { archiveAgent(id: \"{ID}\") { position } }",
    "mutation { updateGroupConfig(id: \"{ID}\", config: {maxRounds: 3}) { position } }",
    "mutation { addGroupMember(id: \"{ID}\", agentId: \"x\") { position } }",
    "mutation { removeGroupMember(id: \"{ID}\", agentId: \"ag-a\") { position } }",
    "mutation { deleteGroup(id: \"{ID}\") { position } }",
    "mutation { startGroupRun(groupId: \"{ID}\", operationId: \"bob-op-1\") { position } }",
    "mutation { claimOperation(id: \"{ID}\", workerId: \"w\") { position } }",
    "mutation { cancelOperation(id: \"{ID}\") { position } }",
    "mutation { spawnSubagent(parentOperationId: \"{ID}\", input: {operationId: \"bob-child\", kind: SUBAGENT, agentId: \"a\"}) { position } }",
    "mutation { appendMessage(topicId: \"{ID}\", message: {messageId: \"m1\", role: \"user\", content: \"hi\"}) { position } }",
];

/// The ids of alice's things each mutation above is tried with.
fn alice_id(query: &str) -> &'static str {
    if query.contains("Brief") {
        "b-a"
    } else if query.contains("Cron") {
        "j-a"
    } else if query.contains("Agent") {
        "ag-a"
    } else if query.contains("Group") {
        "g-a"
    } else if query.contains("Operation") || query.contains("spawnSubagent") {
        "op-a"
    } else if query.contains("appendMessage") {
        "c-a"
    } else {
        "t-a"
    }
}

async fn another_users_id_answers_as_an_unknown_one(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let setup = [
        "mutation { createTask(input: {taskId: \"t-a\", identifier: \"TA\", instruction: \"x\"}) { position } }",
        "mutation { runTask(id: \"t-a\", topicId: \"tp-a\", operationId: \"op-a\") { position } }",
        "mutation { createBrief(input: {briefId: \"b-a\", type: \"result\", title: \"t\", summary: \"s\", taskId: \"t-a\"}) { position } }",
        "mutation { registerAgent(input: {agentId: \"ag-a\", config: {slug: \"a\", title: \"A\"}}) { position } }",
        "mutation { createCronJob(input: {jobId: \"j-a\", agentId: \"ag-a\", pattern: \"0 9 * * *\", timezone: \"UTC\", content: \"c\", enabled: false}) { position } }",
        "mutation { createGroup(id: \"g-a\", title: \"G\", config: {}, members: [{agentId: \"ag-a\", role: \"supervisor\", enabled: true, order: 0}]) { position } }",
        "mutation { createConversation(topicId: \"c-a\") { position } }",
    ];
    for q in setup {
        s.data(Some(&alice), q, json!({})).await;
    }
    s.data(
        Some(&bob),
        "mutation { createTask(input: {taskId: \"bob-task\", identifier: \"TB\", instruction: \"x\"}) { position } }",
        json!({}),
    )
    .await;
    let head = || async { s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let mut differ = Vec::new();
    for template in BY_ID {
        let id = alice_id(template);
        let unknown = format!("zz{}", &id[1..]);
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", id), json!({})).await;
        let none = s.gql(Some(&bob), &template.replace("{ID}", &unknown), json!({})).await;
        let code = support::error_code(&theirs);
        let message = |r: &Value, id: &str| r["errors"][0]["message"].as_str().unwrap_or("").replace(id, "<id>");
        if code.as_deref() != Some("NOT_FOUND")
            || code != support::error_code(&none)
            || message(&theirs, id) != message(&none, &unknown)
        {
            differ.push(format!("{template}\n  alice's: {theirs}\n  unknown: {none}"));
        }
    }
    assert!(differ.is_empty(), "answered differently:\n{}", differ.join("\n"));
    assert_eq!(head().await, before, "bob wrote nothing");
    s.stop();
}

/// Open a websocket and send `connection_init` with `payload`; answers the close code.
async fn init_close_code(s: &Server, protocol: &str, payload: Value) -> Option<u16> {
    let url = s.base.replace("http://", "ws://") + "/graphql";
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_str(protocol).expect("header"));
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.expect("connect");
    socket.send(Message::text(json!({"type": "connection_init", "payload": payload}).to_string())).await.expect("init");
    loop {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next()).await.ok()??.ok()?;
        match msg {
            Message::Close(frame) => return frame.map(|f| u16::from(f.code)),
            Message::Text(t) => assert!(!t.as_str().contains("connection_ack"), "acknowledged: {t}"),
            _ => {}
        }
    }
}

async fn a_websocket_without_a_valid_token_is_closed_with_4401(db: Db) {
    let s = Server::start(db).await;
    let code =
        init_close_code(&s, "graphql-transport-ws", json!({"authorization": "Bearer al_not_a_real_token"})).await;
    assert_eq!(code, Some(4401));
    assert_eq!(init_close_code(&s, "graphql-transport-ws", json!({})).await, Some(4401), "no token at all");
    let token = s.user_token("alice").await;
    // A valid token is acknowledged (`connect` asserts the ack).
    support::Ws::connect(&s, &token, "graphql-transport-ws").await.cut().await;
    s.stop();
}

async fn a_users_cron_job_cannot_start_another_users_agent(db: Db) {
    let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
    let t = Utc::now() - Duration::minutes(10);
    let ctx = |user: &str| Context::new(t, Uuid::now_v7(), Actor::user(user), user);
    let register: RegisterAgent =
        serde_json::from_value(json!({"agentId": "alice-agent", "config": {"slug": "a", "title": "A"}}))
            .expect("agent");
    state
        .handler
        .execute_of::<agentlog_domain::agents::Agent>(
            "alice",
            "alice-agent",
            &AgentCommand::Register(register),
            &ctx("alice"),
        )
        .await
        .expect("register");
    for (job, owner) in [("bob-job", "bob"), ("alice-job", "alice")] {
        let create = CreateCronJob {
            job_id: job.into(),
            agent_id: "alice-agent".into(),
            group_id: None,
            name: None,
            pattern: "* * * * *".into(),
            timezone: "UTC".into(),
            content: "go".into(),
            enabled: true,
            max_executions: None,
            conditions: ExecutionConditions::default(),
        };
        // Written in the global form, as before job ids were per owner.
        let stream = agentlog_domain::streams::StreamKind::Cron.stream_id(job);
        state
            .handler
            .execute_stream::<CronJob>(&stream, &CronCommand::Create(create), &ctx(owner))
            .await
            .expect("create job");
    }
    state.runner.catch_up().await.expect("catch up");
    let report = scheduler::pass(&state, Utc::now()).await.expect("pass");
    assert_eq!(report.cron_fired.len(), 1, "{report:?}");
    assert!(report.cron_fired[0].starts_with("alice-job@"), "{report:?}");
    assert!(report.skipped.iter().any(|(job, why)| job == "bob-job" && why.contains("not found")), "{report:?}");
}

both!(
    another_users_id_answers_as_an_unknown_one as another_users_id_is_not_found,
    a_websocket_without_a_valid_token_is_closed_with_4401 as websocket_bad_token_closed_4401,
    a_users_cron_job_cannot_start_another_users_agent as cron_job_acts_as_its_owner
);

async fn tokens_are_listed_and_revoked_at_once(db: Db) {
    let s = Server::start(db).await;
    let admin = s.admin_token.clone();
    let create = "mutation($u: String!, $n: String) { createToken(userId: $u, name: $n) { tokenId secret } }";
    let made = s.data(Some(&admin), create, json!({"u": "alice", "n": "laptop"})).await;
    let (id, secret) = (
        made["createToken"]["tokenId"].as_str().unwrap().to_string(),
        made["createToken"]["secret"].as_str().unwrap().to_string(),
    );
    let other = s.data(Some(&admin), create, json!({"u": "alice", "n": "phone"})).await["createToken"]["secret"]
        .as_str()
        .unwrap()
        .to_string();
    let bobs = s.data(Some(&admin), create, json!({"u": "bob", "n": "bob's"})).await;
    let bob_id = bobs["createToken"]["tokenId"].as_str().unwrap().to_string();
    let bob = bobs["createToken"]["secret"].as_str().unwrap().to_string();
    s.data(Some(&secret), "{ headPosition }", json!({})).await;
    // A user lists their own tokens, without secrets; an admin lists all.
    let list = "{ tokens { tokenId name userId role createdAt lastUsedAt revokedAt } }";
    let mine = s.data(Some(&secret), list, json!({})).await;
    let rows = mine["tokens"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{mine}");
    assert!(rows.iter().all(|t| t["userId"] == "alice" && t["role"] == "user"), "{mine}");
    let laptop = rows.iter().find(|t| t["tokenId"] == id.as_str()).expect("listed by id");
    assert_eq!(laptop["name"], "laptop");
    assert!(laptop["lastUsedAt"].is_string(), "its use is recorded: {mine}");
    assert!(!mine.to_string().contains(&secret), "no secret in the list");
    let all = s.data(Some(&admin), list, json!({})).await;
    assert!(all["tokens"].as_array().unwrap().len() >= 4, "{all}");
    // Another user's token id is NOT_FOUND, like an unknown one.
    let revoke = "mutation($id: String!) { revokeToken(tokenId: $id) }";
    for other_id in [bob_id.as_str(), "no-such-token"] {
        let r = s.gql(Some(&secret), revoke, json!({"id": other_id})).await;
        assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    }
    assert!(s.gql(Some(&bob), "{ headPosition }", json!({})).await.get("errors").is_none(), "bob's token still works");

    // An open websocket on the token, then the token revoked (by its owner, from another).
    let mut ws = support::Ws::connect(&s, &secret, "graphql-transport-ws").await;
    ws.subscribe("1", "subscription { taskChanged(id: \"t1\") { eventType } }", json!({})).await;
    let d = s.data(Some(&other), revoke, json!({"id": id})).await;
    assert_eq!(d["revokeToken"], true);
    let r = s.gql(Some(&secret), "{ headPosition }", json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{r}");
    let closed = ws.close_code().await;
    assert_eq!(closed, Some(4401), "the open websocket is closed");
    let r = s.gql(Some(&secret), revoke, json!({"id": id})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{r}");
    s.stop();
}

both!(tokens_are_listed_and_revoked_at_once as tokens_listed_and_revoked);

/// An origin's path of causes shows only its owner's events: an event of bob's that names one
/// of alice's as its parent (no command writes one; appended here directly) answers a path
/// that stops at bob's own events.
async fn an_origin_path_shows_only_its_owners_events(db: Db) {
    use agentlog_domain::envelope::NewEvent;
    use agentlog_eventlog::{EventFilter, ExpectedVersion, StoreOptions, open_store};

    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    s.data(
        Some(&alice),
        "mutation { createTask(input: {taskId: \"ta\", identifier: \"TA\", instruction: \"secret plan\"}) { position } }",
        json!({}),
    )
    .await;
    let store = open_store(&s.db.url(), StoreOptions::default()).await.expect("open the log");
    let created = store.read_all(0, &EventFilter::types(["task.created"]), 10).await.expect("read");
    let hers = created.iter().find(|e| e.metadata.user_id == "alice").expect("alice's task").clone();
    let mut metadata = hers.metadata.caused_by(hers.event_id, Actor::user("bob"));
    metadata.user_id = "bob".into();
    let mut payload = hers.payload.clone();
    payload["taskId"] = json!("tb");
    payload["identifier"] = json!("TB");
    payload["instruction"] = json!("mine");
    payload["userId"] = json!("bob");
    let event = NewEvent::new(Uuid::now_v7(), "task.created", payload, metadata);
    store.append("task@bob/tb", ExpectedVersion::NoStream, vec![event]).await.expect("append");
    store.close().await;

    let q = "{ task(id: \"tb\") { origin { event { userId } path { userId eventType } } } }";
    let mut d = Value::Null;
    for _ in 0..100 {
        d = s.gql(Some(&bob), q, json!({})).await;
        if d["data"]["task"]["origin"].is_object() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let d = d["data"].clone();
    let path = d["task"]["origin"]["path"].as_array().expect("a path").clone();
    assert!(!path.is_empty(), "{d}");
    assert!(path.iter().all(|e| e["userId"] == "bob"), "only bob's events: {d}");
    s.stop();
}

both!(an_origin_path_shows_only_its_owners_events as an_origin_path_shows_only_its_owners_events);
