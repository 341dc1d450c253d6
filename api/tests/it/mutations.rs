//! Every mutation and subscription of the SDL is called through GraphQL by some test here or
//! elsewhere in `tests/it/`, with its documented arguments and an assertion on what it did;
//! `every_mutation_and_subscription_is_called` fails when a new one has no call.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Db, Server, Ws, error_code};

/// The fields of `type <name> { … }` in the SDL.
fn sdl_fields(sdl: &str, name: &str) -> Vec<String> {
    let start = sdl.find(&format!("\ntype {name} {{")).unwrap_or_else(|| panic!("no type {name} in the SDL"));
    let body = &sdl[start..];
    let body = &body[..body.find("\n}").expect("the type's end")];
    let mut fields = Vec::new();
    let (mut in_doc, mut depth) = (false, 0i32);
    for line in body.lines().skip(1) {
        let l = line.trim();
        if l.starts_with("\"\"\"") {
            // A one-line doc string opens and closes on the same line.
            if !(l.len() > 3 && l.ends_with("\"\"\"")) {
                in_doc = !in_doc;
            }
            continue;
        }
        if in_doc || l.is_empty() || l.starts_with('"') {
            continue;
        }
        if depth == 0 {
            let name: String = l.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                fields.push(name);
            }
        }
        depth += l.matches('(').count() as i32 - l.matches(')').count() as i32;
    }
    fields
}

/// Every test source in `tests/it/` except this check's own.
fn test_sources() -> String {
    let mut all = String::new();
    let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("tests/it").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                all.push_str(&std::fs::read_to_string(&path).expect("a test file"));
            }
        }
    }
    all
}

/// Does `sources` call field `name` in a GraphQL document (`name(` or `name {`)?
fn called(sources: &str, name: &str) -> bool {
    sources.match_indices(name).any(|(i, _)| {
        let before = sources[..i].chars().next_back();
        let after = sources[i + name.len()..].trim_start_matches(' ').chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') && matches!(after, Some('(') | Some('{'))
    })
}

#[test]
fn every_mutation_and_subscription_is_called() {
    let sdl = include_str!("../../schema.graphql");
    let sources = test_sources();
    for root in ["Mutation", "Subscription"] {
        let fields = sdl_fields(sdl, root);
        assert!(fields.len() > 5, "{root}: {fields:?}");
        let missing: Vec<&String> = fields.iter().filter(|f| !called(&sources, f)).collect();
        assert!(missing.is_empty(), "{root} fields no test in tests/it calls through GraphQL: {missing:?}");
    }
}

#[test]
fn the_coverage_check_sees_what_it_should() {
    let sdl = include_str!("../../schema.graphql");
    let mutations = sdl_fields(sdl, "Mutation");
    assert!(mutations.iter().any(|f| f == "claimOperation") && mutations.iter().any(|f| f == "revokeToken"));
    assert!(!mutations.iter().any(|f| f == "leaseToken" || f == "id"), "arguments are not fields: {mutations:?}");
    assert!(called("x { reportStep(id: 1) }", "reportStep"));
    assert!(called("subscription { briefCreated { position } }", "briefCreated"));
    assert!(!called("fn report_step() { reportSteps(id) }", "reportStep"));
}

async fn task_commands_change_the_task(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("alice").await;
    let task = |q: &'static str, v: Value| {
        let s = &s;
        let t = t.clone();
        async move { s.data(Some(&t), q, v).await }
    };
    for id in ["t1", "t2"] {
        task(
            "mutation($i: JSON!) { createTask(input: $i) { position } }",
            json!({"i": {"taskId": id, "identifier": id.to_uppercase(), "instruction": "write it"}}),
        )
        .await;
    }
    let d = task(
        "mutation($p: JSON!) { updateTask(id: \"t1\", patch: $p) { task { name priority } } }",
        json!({"p": {"name": "Report", "priority": 1}}),
    )
    .await;
    assert_eq!(d["updateTask"]["task"]["name"], "Report");
    assert_eq!(d["updateTask"]["task"]["priority"], 1);
    let d = task("mutation($h: JSON) { configureTaskAutomation(id: \"t1\", mode: \"heartbeat\", heartbeat: $h) { task { automationMode heartbeatIntervalSecs } } }", json!({"h": {"intervalSecs": 900}})).await;
    assert_eq!(d["configureTaskAutomation"]["task"]["automationMode"], "heartbeat");
    assert_eq!(d["configureTaskAutomation"]["task"]["heartbeatIntervalSecs"], 900);
    let d = task("mutation { setTaskTopicQuota(id: \"t1\", maxTopics: 4) { task { maxTopics } } }", json!({})).await;
    assert_eq!(d["setTaskTopicQuota"]["task"]["maxTopics"], 4);
    let d = task(
        "mutation($c: JSON!) { configureTask(id: \"t1\", config: $c) { task { config } } }",
        json!({"c": {"model": "m2", "pauseAfterTopic": false, "reviewEnabled": true}}),
    )
    .await;
    assert_eq!(d["configureTask"]["task"]["config"]["model"], "m2", "{d}");
    task("mutation { addTaskDependency(id: \"t1\", dependsOnId: \"t2\") { position } }", json!({})).await;
    let d = task(
        "mutation { removeTaskDependency(id: \"t1\", dependsOnId: \"t2\") { task { dependencies { dependsOnId } } } }",
        json!({}),
    )
    .await;
    assert_eq!(d["removeTaskDependency"]["task"]["dependencies"], json!([]));
    let d = task("mutation { pinTaskDocument(id: \"t1\", documentId: \"doc-1\", pinnedBy: \"user\") { task { documents { documentId pinnedBy } } } }", json!({})).await;
    assert_eq!(d["pinTaskDocument"]["task"]["documents"], json!([{"documentId": "doc-1", "pinnedBy": "user"}]));
    let d = task(
        "mutation { unpinTaskDocument(id: \"t1\", documentId: \"doc-1\") { task { documents { documentId } } } }",
        json!({}),
    )
    .await;
    assert_eq!(d["unpinTaskDocument"]["task"]["documents"], json!([]));
    let d = task("mutation { addTaskComment(id: \"t1\", commentId: \"k1\", content: \"looks good\") { task { comments { edges { node { commentId authorKind authorId content } } } } } }", json!({})).await;
    assert_eq!(
        d["addTaskComment"]["task"]["comments"]["edges"][0]["node"],
        json!({"commentId": "k1", "authorKind": "user", "authorId": "alice", "content": "looks good"})
    );
    let d = task("mutation { deleteTaskComment(id: \"t1\", commentId: \"k1\") { task { comments { edges { node { commentId } } } } } }", json!({})).await;
    assert_eq!(d["deleteTaskComment"]["task"]["comments"]["edges"], json!([]));
    let d = task("mutation { recordTaskHeartbeat(id: \"t1\") { task { lastHeartbeatAt } } }", json!({})).await;
    assert!(d["recordTaskHeartbeat"]["task"]["lastHeartbeatAt"].is_string(), "{d}");

    // A run's topic, cancelled; another, completed by the worker's report and reviewed.
    task("mutation { runTask(id: \"t2\", topicId: \"tp1\", operationId: \"run1\") { position } }", json!({})).await;
    let d = task("mutation { cancelTaskTopic(id: \"t2\", topicId: \"tp1\") { task { status topics { edges { node { topicId status } } } } } }", json!({})).await;
    assert_eq!(d["cancelTaskTopic"]["task"]["topics"]["edges"][0]["node"]["status"], "canceled", "{d}");
    task("mutation { runTask(id: \"t2\", topicId: \"tp2\", operationId: \"run2\") { position } }", json!({})).await;
    let outcome = json!({"topicId": "tp2", "status": "completed",
                         "handoff": {"title": "written", "summary": "the report is written", "keyFindings": ["short"]}});
    let d = task("mutation($o: JSON!) { completeTaskTopic(id: \"t2\", outcome: $o) { task { topics { edges { node { topicId status handoff } } } } } }", json!({"o": outcome})).await;
    let topics = d["completeTaskTopic"]["task"]["topics"]["edges"].as_array().unwrap().clone();
    let tp2 = topics.iter().find(|e| e["node"]["topicId"] == "tp2").expect("tp2");
    assert_eq!(tp2["node"]["status"], "completed", "{d}");
    assert_eq!(tp2["node"]["handoff"]["title"], "written", "{d}");
    let d = task("mutation($s: JSON) { reviewTaskTopic(id: \"t2\", topicId: \"tp2\", score: 85, passed: true, scores: $s) { task { topics { edges { node { topicId reviewScore reviewPassed } } } } } }", json!({"s": [{"rubricId": "clarity", "score": 85, "passed": true}]})).await;
    let topics = d["reviewTaskTopic"]["task"]["topics"]["edges"].as_array().unwrap().clone();
    let tp2 = topics.iter().find(|e| e["node"]["topicId"] == "tp2").expect("tp2");
    assert_eq!((tp2["node"]["reviewScore"].clone(), tp2["node"]["reviewPassed"].clone()), (json!(85), json!(true)));
    let r = s
        .gql(
            Some(&t),
            "mutation { reviewTaskTopic(id: \"t2\", topicId: \"tp2\", score: 101, passed: true) { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    s.stop();
}

async fn inbox_conversation_and_roster_commands(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("alice").await;
    let m = |q: &'static str, v: Value| {
        let s = &s;
        let t = t.clone();
        async move { s.data(Some(&t), q, v).await }
    };
    // Briefs and notifications.
    m(
        "mutation($i: JSON!) { createBrief(input: $i) { position } }",
        json!({"i": {"briefId": "b1", "type": "result", "title": "done", "summary": "ok"}}),
    )
    .await;
    let d = m("mutation { markBriefRead(id: \"b1\") { brief { readAt } } }", json!({})).await;
    assert!(d["markBriefRead"]["brief"]["readAt"].is_string(), "{d}");
    let d = m("mutation { createNotification(input: {category: \"brief\", type: \"x\", title: \"hello\", body: \"b\"}) { notification { notificationId } } }", json!({})).await;
    let id = d["createNotification"]["notification"]["notificationId"].as_str().unwrap().to_string();
    let d = m("mutation($ids: [String!]!) { markNotificationsRead(ids: $ids) { unreadCount } }", json!({"ids": [id]}))
        .await;
    let read = d["markNotificationsRead"]["unreadCount"].as_i64().unwrap();
    let d =
        m("mutation($ids: [String!]!) { markNotificationsUnread(ids: $ids) { unreadCount } }", json!({"ids": [id]}))
            .await;
    assert_eq!(d["markNotificationsUnread"]["unreadCount"].as_i64(), Some(read + 1), "{d}");
    let d = m("{ notifications(filter: {read: false}) { edges { node { notificationId } } } }", json!({})).await;
    assert!(d.to_string().contains(&id), "unread again: {d}");
    m("mutation { archiveAllNotifications { position } }", json!({})).await;
    let d = m("{ notifications { edges { node { isArchived } } } }", json!({})).await;
    let edges = d["notifications"]["edges"].as_array().unwrap();
    assert!(edges.iter().all(|e| e["node"]["isArchived"] == true), "{d}");

    // Messages: edit, branches, threads.
    m("mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let append = "mutation($m: JSON!) { appendMessage(topicId: \"c1\", message: $m) { position } }";
    m(append, json!({"m": {"messageId": "q", "role": "user", "content": "hi"}})).await;
    for a in ["a1", "a2"] {
        m(append, json!({"m": {"messageId": a, "role": "assistant", "content": a, "parentId": "q"}})).await;
    }
    m("mutation { editMessage(topicId: \"c1\", messageId: \"a1\", content: \"hello\", extra: {reasoning: {content: \"why\"}}) { position } }", json!({})).await;
    m("mutation { switchBranch(topicId: \"c1\", messageId: \"q\", activeBranchIndex: 1) { position } }", json!({}))
        .await;
    m("mutation { createThread(topicId: \"c1\", threadId: \"th1\", sourceMessageId: \"a1\", kind: \"continuation\", title: \"aside\") { position } }", json!({})).await;
    let d = m("{ conversation(topicId: \"c1\") { messages { edges { node { messageId message } } } threads { threadId sourceMessageId kind title } } }", json!({})).await;
    let messages = d["conversation"]["messages"]["edges"].as_array().unwrap().clone();
    let by_id = |id: &str| {
        messages.iter().find(|e| e["node"]["messageId"] == id).map(|e| e["node"]["message"].clone()).unwrap()
    };
    assert_eq!(by_id("a1")["content"], "hello", "{d}");
    assert_eq!(by_id("a1")["reasoning"]["content"], "why", "{d}");
    assert_eq!(by_id("q")["metadata"]["activeBranchIndex"], 1, "{d}");
    assert_eq!(
        d["conversation"]["threads"],
        json!([{"threadId": "th1", "sourceMessageId": "a1", "kind": "continuation", "title": "aside"}])
    );

    // Agents, groups, cron jobs.
    for a in ["w1", "w2"] {
        m(
            "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
            json!({"i": {"agentId": a, "config": {"slug": a, "title": a, "model": "m1", "provider": "p1"}}}),
        )
        .await;
    }
    let d = m(
        "mutation($p: JSON!) { updateAgentConfig(id: \"w1\", patch: $p) { agent { title model version } } }",
        json!({"p": {"title": "Writer", "model": "m2"}}),
    )
    .await;
    assert_eq!(d["updateAgentConfig"]["agent"], json!({"title": "Writer", "model": "m2", "version": 2}));
    m(
        "mutation($c: JSON!) { createGroup(id: \"g1\", title: \"team\", config: $c) { position } }",
        json!({"c": {"maxRounds": 3}}),
    )
    .await;
    let d = m(
        "mutation($c: JSON!) { updateGroupConfig(id: \"g1\", config: $c) { group { maxRounds } } }",
        json!({"c": {"maxRounds": 7}}),
    )
    .await;
    assert_eq!(d["updateGroupConfig"]["group"]["maxRounds"], 7);
    // The documented default role.
    let d = m(
        "mutation { addGroupMember(id: \"g1\", agentId: \"w1\") { group { members { agentId role enabled } } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        d["addGroupMember"]["group"]["members"],
        json!([{"agentId": "w1", "role": "participant", "enabled": true}])
    );
    m(
        "mutation { addGroupMember(id: \"g1\", agentId: \"w2\", role: \"supervisor\", order: 1) { position } }",
        json!({}),
    )
    .await;
    let d = m("mutation { updateGroupMember(id: \"g1\", agentId: \"w1\", enabled: false) { group { members { agentId enabled } supervisorAgentId } } }", json!({})).await;
    assert_eq!(d["updateGroupMember"]["group"]["members"][0], json!({"agentId": "w1", "enabled": false}));
    assert_eq!(d["updateGroupMember"]["group"]["supervisorAgentId"], "w2");
    let d =
        m("mutation { removeGroupMember(id: \"g1\", agentId: \"w1\") { group { members { agentId } } } }", json!({}))
            .await;
    assert_eq!(d["removeGroupMember"]["group"]["members"], json!([{"agentId": "w2"}]));
    let cron = json!({"i": {"jobId": "j1", "agentId": "w1", "pattern": "0 9 * * *", "timezone": "Europe/Berlin", "content": "news", "enabled": true, "maxExecutions": 2}});
    m("mutation($i: JSON!) { createCronJob(input: $i) { position } }", cron).await;
    let d = m(
        "mutation($p: JSON!) { updateCronJob(id: \"j1\", patch: $p) { cronJob { content pattern } } }",
        json!({"p": {"content": "weather", "pattern": "30 8 * * 1-5"}}),
    )
    .await;
    assert_eq!(d["updateCronJob"]["cronJob"], json!({"content": "weather", "pattern": "30 8 * * 1-5"}));
    m("mutation { disableCronJob(id: \"j1\") { position } }", json!({})).await;
    let d = m("mutation { enableCronJob(id: \"j1\") { cronJob { enabled } } }", json!({})).await;
    assert_eq!(d["enableCronJob"]["cronJob"]["enabled"], true);
    let d = m("mutation { resetCronJobExecutions(id: \"j1\", maxExecutions: 5) { cronJob { maxExecutions remainingExecutions } } }", json!({})).await;
    assert_eq!(d["resetCronJobExecutions"]["cronJob"], json!({"maxExecutions": 5, "remainingExecutions": 5}));
    m("mutation { deleteCronJob(id: \"j1\") { position } }", json!({})).await;
    let r = s.gql(Some(&t), "{ cronJob(id: \"j1\") { jobId } }", json!({})).await;
    let d = m("{ cronJobs { edges { node { jobId } } } }", json!({})).await;
    assert!(error_code(&r).is_some() || d["cronJobs"]["edges"] == json!([]), "a deleted job is gone: {r} {d}");
    assert_eq!(d["cronJobs"]["edges"], json!([]), "{d}");

    // Tokens: listed without secrets (an admin sees every user's, a user their own), revoked by id.
    let bob = s.user_token("bob").await;
    let d = s.data(Some(&s.admin_token), "{ tokens { tokenId userId role revokedAt } }", json!({})).await;
    let listed: Vec<Value> = d["tokens"].as_array().unwrap().iter().filter(|t| t["userId"] == "bob").cloned().collect();
    assert_eq!(listed.len(), 1, "{d}");
    assert!(!d.to_string().contains(&bob), "no secret is listed");
    let mine = s.data(Some(&t), "{ tokens { userId } }", json!({})).await;
    assert!(mine["tokens"].as_array().unwrap().iter().all(|t| t["userId"] == "alice"), "a user sees their own: {mine}");
    let id = listed[0]["tokenId"].clone();
    let d =
        s.data(Some(&s.admin_token), "mutation($id: String!) { revokeToken(tokenId: $id) }", json!({"id": id})).await;
    assert_eq!(d["revokeToken"], true);
    let r = s.gql(Some(&bob), "{ headPosition }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "a revoked token: {r}");
    s.stop();
}

async fn operation_side_commands_and_change_feeds(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("alice").await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    s.data(Some(&t), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    s.data(Some(&t), start, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "inbox"}})).await;
    let mut ws = Ws::connect(&s, &t, "graphql-transport-ws").await;
    ws.subscribe(
        "o",
        "subscription { operationChanged(id: \"op1\", fromPosition: 0) { eventType node { status } } }",
        json!({}),
    )
    .await;
    ws.subscribe(
        "c",
        "subscription { conversationChanged(topicId: \"c1\") { eventType node { messageCount } } }",
        json!({}),
    )
    .await;
    ws.subscribe("b", "subscription { briefCreated { node { briefId title } } }", json!({})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let lt = s.claim(&t, "op1", "w1").await;
    s.data(
        Some(&t),
        "mutation($lt: String!) { awaitAsync(id: \"op1\", leaseToken: $lt, keys: [\"tool-1\"]) { position } }",
        json!({"lt": lt}),
    )
    .await;
    let d = s.data(Some(&t), "mutation { receiveAsyncResult(id: \"op1\", key: \"tool-1\", success: true, result: \"42\") { operation { status } } }", json!({})).await;
    assert_eq!(d["receiveAsyncResult"]["operation"]["status"], "running", "the last awaited key opens the barrier");
    let d = s.data(Some(&t), "{ operation(id: \"op1\") { asyncResults } }", json!({})).await;
    assert_eq!(d["operation"]["asyncResults"][0]["result"], "42", "{d}");
    let d = s.data(Some(&t), "mutation { interruptOperation(id: \"op1\", reason: \"shutdown\", canResume: true) { operation { status completionReason } } }", json!({})).await;
    assert_eq!(d["interruptOperation"]["operation"]["status"], "interrupted");
    s.data(Some(&t), "mutation { appendMessage(topicId: \"c1\", message: {messageId: \"m1\", role: \"user\", content: \"hi\"}) { position } }", json!({})).await;
    s.data(
        Some(&t),
        "mutation($i: JSON!) { createBrief(input: $i) { position } }",
        json!({"i": {"briefId": "b1", "type": "insight", "title": "seen", "summary": "s"}}),
    )
    .await;

    let mut got: Vec<(String, Value)> = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    while !(got.iter().any(|(i, v)| i == "o" && v["operationChanged"]["node"]["status"] == "interrupted")
        && got.iter().any(|(i, _)| i == "c")
        && got.iter().any(|(i, _)| i == "b"))
    {
        assert!(tokio::time::Instant::now() < until, "every feed reports: {got:?}");
        let msg = ws.next_json().await.expect("a message");
        assert_eq!(msg["type"], "next", "{msg}");
        got.push((msg["id"].as_str().unwrap_or_default().to_string(), msg["payload"]["data"].clone()));
    }
    let types: Vec<&str> =
        got.iter().filter(|(i, _)| i == "o").filter_map(|(_, v)| v["operationChanged"]["eventType"].as_str()).collect();
    assert_eq!(types.first(), Some(&"operation.created"), "{types:?}");
    assert!(types.contains(&"operation.async_result_received"), "{types:?}");
    let c = got.iter().find(|(i, _)| i == "c").unwrap();
    assert_eq!(c.1["conversationChanged"]["eventType"], "conversation.message_appended", "{got:?}");
    let b = got.iter().find(|(i, _)| i == "b").unwrap();
    assert_eq!(b.1["briefCreated"]["node"]["briefId"], "b1", "{got:?}");
    // Replayed from the start, a change carries the row as it is now (as documented), not as
    // it was at that event.
    let mut later = Ws::connect(&s, &t, "graphql-transport-ws").await;
    later
        .subscribe(
            "r",
            "subscription { operationChanged(id: \"op1\", fromPosition: 0) { eventType node { status } } }",
            json!({}),
        )
        .await;
    let first = later.next_json().await.expect("a message");
    assert_eq!(first["payload"]["data"]["operationChanged"]["eventType"], "operation.created", "{first}");
    assert_eq!(first["payload"]["data"]["operationChanged"]["node"]["status"], "interrupted", "{first}");
    s.stop();
}

both!(
    task_commands_change_the_task as task_commands_change_the_task,
    inbox_conversation_and_roster_commands as inbox_conversation_and_roster_commands,
    operation_side_commands_and_change_feeds as operation_side_commands_and_change_feeds
);

async fn built_in_agent_ids_are_reserved(db: Db) {
    let s = Server::start(db).await;
    let t = s.user_token("mallory").await;
    let register = "mutation($i: JSON!) { registerAgent(input: $i) { agent { id builtin } } }";
    let squat = json!({"i": {"agentId": "inbox", "config": {"slug": "inbox", "title": "Inbox"}}});
    let r = s.gql(Some(&t), register, squat).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "a user cannot squat a built-in id: {r}");
    let fake = json!({"i": {"agentId": "inbox", "config": {"slug": "inbox", "title": "Inbox"}, "builtin": true}});
    let r = s.gql(Some(&t), register, fake).await;
    assert_eq!(error_code(&r).as_deref(), Some("FORBIDDEN"), "builtin: true is admin-only: {r}");
    let other = json!({"i": {"agentId": "mine", "config": {"slug": "mine", "title": "Mine"}, "builtin": true}});
    let r = s.gql(Some(&s.admin_token), register, other).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "only upstream's ids are built in: {r}");
    // The built-ins are registered before the server serves; the read model follows shortly.
    let agents = "{ agents(builtin: true) { edges { node { id userId builtin version } } } }";
    s.eventually(&t, agents, |d| d["agents"]["edges"].as_array().is_some_and(|e| e.len() == 12)).await;
    let d = s.data(Some(&t), "{ agent(id: \"inbox\") { userId builtin version } }", json!({})).await;
    assert_eq!(d["agent"], json!({"userId": "system", "builtin": true, "version": 1}), "the built-in is untouched");
    s.stop();
}

both!(built_in_agent_ids_are_reserved as built_in_agent_ids_are_reserved);
