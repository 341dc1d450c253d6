//! Every read-model query root over the real server: what the owner sees, what another user
//! cannot see or touch (NOT_FOUND, nothing written), what an admin sees; notification dedupe;
//! the task and conversation mutations; change subscriptions and live message deltas.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, Ws, error_code};

const ALICE: &str = "alice";

/// Alice's world: one of everything, through the mutations.
async fn seed(s: &Server, alice: &str) {
    let m = |q: &'static str, v: Value| async move { s.data(Some(alice), q, v).await };
    m(
        "mutation($i: JSON!) { createTask(input: $i) { task { taskId status } } }",
        json!({"i": {"taskId": "t1", "identifier": "T-1", "instruction": "write the report"}}),
    )
    .await;
    m(
        "mutation($i: JSON!) { createTask(input: $i) { task { taskId } } }",
        json!({"i": {"taskId": "t2", "identifier": "T-2", "instruction": "part one", "parentTaskId": "t1"}}),
    )
    .await;
    m(
        "mutation($i: JSON!) { createTask(input: $i) { task { taskId } } }",
        json!({"i": {"taskId": "t3", "identifier": "T-3", "instruction": "part two", "parentTaskId": "t1"}}),
    )
    .await;
    m("mutation { addTaskDependency(id: \"t3\", dependsOnId: \"t2\") { position } }", json!({})).await;
    m(
        "mutation($i: JSON!) { createBrief(input: $i) { brief { briefId } } }",
        json!({"i": {"briefId": "b1", "type": "result", "title": "done", "summary": "all good", "taskId": "t1"}}),
    )
    .await;
    m(
        "mutation { createNotification(input: {category: \"brief\", type: \"brief_result\", title: \"t\", body: \"b\", dedupeKey: \"brief:b1\"}) { deduped } }",
        json!({}),
    )
    .await;
    m(
        "mutation($i: JSON!) { createCronJob(input: $i) { cronJob { jobId } } }",
        json!({"i": {"jobId": "j1", "agentId": "a1", "pattern": "0 9 * * *", "timezone": "Europe/Berlin", "content": "news", "enabled": true}}),
    )
    .await;
    m(
        "mutation($i: JSON!) { registerAgent(input: $i) { agent { id version } } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "writer", "title": "Writer", "model": "m1", "provider": "p1"}}}),
    )
    .await;
    m(
        "mutation($c: JSON!, $m: JSON) { createGroup(id: \"g1\", title: \"team\", config: $c, members: $m) { group { id } } }",
        json!({"c": {"maxRounds": 3}, "m": [{"agentId": "a1", "role": "supervisor", "enabled": true, "order": 0}]}),
    )
    .await;
    m("mutation { createConversation(topicId: \"c1\", title: \"chat\", agentId: \"a1\") { position } }", json!({}))
        .await;
    for (id, role, parent) in [("m1", "user", None), ("m2", "assistant", Some("m1"))] {
        m(
            "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { conversation { messageCount } } }",
            json!({"t": "c1", "m": {"messageId": id, "role": role, "content": format!("text of {id}"), "parentId": parent}}),
        )
        .await;
    }
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    m(start, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "a1", "model": "m1", "provider": "p1"}}))
        .await;
    let lt = s.claim(alice, "op1", "w1").await;
    m(
        "mutation($lt: String!) { reportStep(id: \"op1\", leaseToken: $lt, phase: ACTING, usage: {inputTokens: 10, outputTokens: 5, costMicros: 7}) { position } }",
        json!({"lt": lt}),
    )
    .await;
    m(
        "mutation($lt: String!) { completeOperation(id: \"op1\", leaseToken: $lt, result: \"ok\") { position } }",
        json!({"lt": lt}),
    )
    .await;
}

/// One query per root: (name, query, path to a value that is Alice's, what a stranger gets).
fn roots() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        ("operation", "{ operation(id: \"op1\") { id status } }", "/operation/id"),
        ("operations", "{ operations { edges { node { id } } } }", "/operations/edges/0/node/id"),
        ("task", "{ task(id: \"t1\") { taskId layers { layers } } }", "/task/taskId"),
        ("tasks", "{ tasks { edges { node { taskId } } } }", "/tasks/edges/0/node/taskId"),
        ("brief", "{ brief(id: \"b1\") { briefId } }", "/brief/briefId"),
        ("briefs", "{ briefs { edges { node { briefId } } } }", "/briefs/edges/0/node/briefId"),
        (
            "notifications",
            "{ notifications { edges { node { notificationId } } } }",
            "/notifications/edges/0/node/notificationId",
        ),
        ("cronJob", "{ cronJob(id: \"j1\") { jobId } }", "/cronJob/jobId"),
        ("cronJobs", "{ cronJobs { edges { node { jobId } } } }", "/cronJobs/edges/0/node/jobId"),
        ("agent", "{ agent(id: \"a1\") { id } }", "/agent/id"),
        ("agents", "{ agents(builtin: false) { edges { node { id } } } }", "/agents/edges/0/node/id"),
        ("group", "{ group(id: \"g1\") { id members { agentId } } }", "/group/id"),
        ("groups", "{ groups { edges { node { id } } } }", "/groups/edges/0/node/id"),
        ("conversation", "{ conversation(topicId: \"c1\") { topicId flatList } }", "/conversation/topicId"),
        ("conversations", "{ conversations { edges { node { topicId } } } }", "/conversations/edges/0/node/topicId"),
        ("pendingCards", "{ pendingCards { edges { node { cardId } } } }", ""),
    ]
}

async fn every_query_root_is_owner_isolated(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token(ALICE).await;
    let bob = s.user_token("bob").await;
    seed(&s, &alice).await;
    for (root, query, path) in roots() {
        let mine = s.data(Some(&alice), query, json!({})).await;
        if !path.is_empty() {
            assert!(mine.pointer(path).is_some_and(|v| !v.is_null()), "{root}: alice sees her data: {mine}");
        }
        // Cron job, group, brief, agent, task, operation and topic ids are per owner: an admin names
        // the owner of one.
        let as_admin = if ["cronJob", "group", "brief", "agent", "task", "operation"].contains(&root) {
            query.replace("(id:", &format!("(ownerId: \"{ALICE}\", id:"))
        } else if root == "conversation" {
            query.replace("(topicId:", &format!("(ownerId: \"{ALICE}\", topicId:"))
        } else {
            query.to_string()
        };
        let all = s.data(Some(&s.admin_token), &as_admin, json!({})).await;
        if !path.is_empty() {
            assert_eq!(all.pointer(path), mine.pointer(path), "{root}: the admin sees it too");
        }
        let theirs = s.gql(Some(&bob), query, json!({})).await;
        if query.contains("(id:") || query.contains("(topicId:") {
            assert_eq!(error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{root}: {theirs}");
        } else {
            assert!(theirs.get("errors").is_none(), "{root}: {theirs}");
            assert_eq!(theirs["data"][root]["edges"], json!([]), "{root}: bob's list is empty: {theirs}");
        }
    }
    // counts and analytics are per owner too
    let count = "{ unreadNotificationCount }";
    assert_eq!(s.data(Some(&alice), count, json!({})).await["unreadNotificationCount"], 1);
    assert_eq!(s.data(Some(&bob), count, json!({})).await["unreadNotificationCount"], 0);
    let analytics = "{ analytics(input: {granularity: DAY, groupBy: [AGENT]}) { total { runs inputTokens costMicros completionReasons duration { count p50Ms } } buckets { agentId } } }";
    let a = s.data(Some(&alice), analytics, json!({})).await;
    assert_eq!(a["analytics"]["total"]["runs"], 1, "{a}");
    assert_eq!(a["analytics"]["total"]["inputTokens"], 10, "{a}");
    assert_eq!(a["analytics"]["total"]["completionReasons"]["done"], 1, "{a}");
    assert_eq!(a["analytics"]["buckets"][0]["agentId"], "a1", "{a}");
    let b = s.data(Some(&bob), analytics, json!({})).await;
    assert_eq!(b["analytics"]["total"]["runs"], 0, "{b}");

    // bob cannot change alice's data: NOT_FOUND and the log unchanged
    let head = |r: Value| r["headPosition"].as_i64().unwrap_or(-1);
    let before = head(s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await);
    for mutation in [
        "mutation { assignTask(id: \"t1\", agentId: \"x\") { position } }",
        "mutation { changeTaskStatus(id: \"t1\", status: \"canceled\") { position } }",
        "mutation { resolveBrief(id: \"b1\", action: \"approve\") { position } }",
        "mutation { disableCronJob(id: \"j1\") { position } }",
        "mutation { archiveAgent(id: \"a1\") { position } }",
        "mutation { deleteGroup(id: \"g1\") { position } }",
        "mutation { deleteMessage(topicId: \"c1\", messageId: \"m1\") { position } }",
        "mutation { publishMessageDelta(topicId: \"c1\", messageId: \"m9\", delta: \"x\") }",
        "mutation { runTask(id: \"t1\", topicId: \"tp\", operationId: \"opx\") { position } }",
        "mutation { cancelOperation(id: \"op1\") { position } }",
    ] {
        let r = s.gql(Some(&bob), mutation, json!({})).await;
        assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{mutation}: {r}");
    }
    let r = s.gql(Some(&bob), "mutation { markAllNotificationsRead(userId: \"alice\") { position } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("FORBIDDEN"), "{r}");
    let after = head(s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await);
    assert_eq!(before, after, "refused mutations wrote nothing");
    s.stop();
}

async fn notifications_dedupe_and_inbox(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token(ALICE).await;
    let create = "mutation($t: String!, $k: String) { createNotification(input: {category: \"hitl\", type: \"decision_required\", title: $t, body: \"b\", dedupeKey: $k}) { deduped position notification { notificationId title isRead } } }";
    let first = s.data(Some(&alice), create, json!({"t": "first", "k": "card:1"})).await;
    assert_eq!(first["createNotification"]["deduped"], false, "{first}");
    let id = first["createNotification"]["notification"]["notificationId"].as_str().unwrap().to_string();
    // the same key again, same and other content: deduped, never CONFLICT, the first one kept
    for title in ["first", "second"] {
        let again = s.gql(Some(&alice), create, json!({"t": title, "k": "card:1"})).await;
        assert!(again.get("errors").is_none(), "{again}");
        let again = &again["data"]["createNotification"];
        assert_eq!(again["deduped"], true, "{again}");
        assert_eq!(again["position"], 0);
        assert_eq!(again["notification"]["notificationId"], id.as_str());
        assert_eq!(again["notification"]["title"], "first");
    }
    let plain = s.data(Some(&alice), create, json!({"t": "no key", "k": null})).await;
    let plain_id = plain["createNotification"]["notification"]["notificationId"].as_str().unwrap().to_string();
    let count = "{ unreadNotificationCount }";
    assert_eq!(s.data(Some(&alice), count, json!({})).await["unreadNotificationCount"], 2);
    let read = s
        .data(
            Some(&alice),
            "mutation($ids: [String!]!) { markNotificationsRead(ids: $ids) { unreadCount } }",
            json!({"ids": [id]}),
        )
        .await;
    assert_eq!(read["markNotificationsRead"]["unreadCount"], 1);
    let archive = "mutation($ids: [String!]!) { archiveNotifications(ids: $ids) { unreadCount } }";
    s.data(Some(&alice), archive, json!({"ids": [plain_id]})).await;
    let inbox = s
        .data(
            Some(&alice),
            "{ notifications(filter: {read: true}) { edges { node { notificationId isRead } } } }",
            json!({}),
        )
        .await;
    assert_eq!(inbox["notifications"]["edges"].as_array().map(Vec::len), Some(1), "{inbox}");
    let r = s.gql(Some(&alice), create, json!({"t": "", "k": null})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    s.stop();
}

async fn tasks_run_layers_and_briefs(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token(ALICE).await;
    seed(&s, &alice).await;
    let layers = s
        .data(
            Some(&alice),
            "{ task(id: \"t1\") { layers { layers totalRunnable } subtasks { edges { node { taskId } } } } }",
            json!({}),
        )
        .await;
    assert_eq!(layers["task"]["layers"]["layers"], json!([["T-2"], ["T-3"]]), "{layers}");
    // a cycle is refused
    let r = s
        .gql(Some(&alice), "mutation { addTaskDependency(id: \"t2\", dependsOnId: \"t3\") { position } }", json!({}))
        .await;
    assert!(error_code(&r).is_some_and(|c| c != "INTERNAL"), "{r}");
    // run the task: a topic and its operation, in one append
    let run = s
        .data(Some(&alice), "mutation { runTask(id: \"t2\", topicId: \"tp1\", operationId: \"run1\") { task { status currentTopicId topics { edges { node { topicId operationId status } } } } } }", json!({}))
        .await;
    assert_eq!(run["runTask"]["task"]["status"], "running", "{run}");
    assert_eq!(run["runTask"]["task"]["topics"]["edges"][0]["node"]["operationId"], "run1");
    let op = s.data(Some(&alice), "{ operation(id: \"run1\") { kind taskId topicId agentId } }", json!({})).await;
    assert_eq!(op["operation"]["kind"], "task", "{op}");
    assert_eq!(op["operation"]["taskId"], "t2");
    assert_eq!(op["operation"]["topicId"], "tp1");
    // approving a result brief completes its task
    let r = s.data(Some(&alice), "mutation { resolveBrief(id: \"b1\", action: \"approve\", comment: \"thanks\") { brief { resolvedAction resolvedComment } } }", json!({})).await;
    assert_eq!(r["resolveBrief"]["brief"]["resolvedAction"], "approve", "{r}");
    let t = s.data(Some(&alice), "{ task(id: \"t1\") { status } }", json!({})).await;
    assert_eq!(t["task"]["status"], "completed", "{t}");
    s.stop();
}

async fn subscriptions_follow_changes_and_deltas(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token(ALICE).await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    s.data(
        Some(&alice),
        "mutation($i: JSON!) { createTask(input: $i) { position } }",
        json!({"i": {"taskId": "t1", "identifier": "T-1", "instruction": "x"}}),
    )
    .await;
    s.data(
        Some(&alice),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "A1"}}}),
    )
    .await;

    let mut ws = Ws::connect(&s, &alice, "graphql-transport-ws").await;
    ws.subscribe(
        "d",
        "subscription { messageDeltas(topicId: \"c1\") { messageId delta snapshot done length } }",
        json!({}),
    )
    .await;
    ws.subscribe("t", "subscription { taskChanged(id: \"t1\") { eventType node { status } } }", json!({})).await;
    ws.subscribe("n", "subscription { notificationCreated { node { title } } }", json!({})).await;
    ws.subscribe("w", "subscription { workAvailable(agentIds: [\"a1\"]) { id agentId status } }", json!({})).await;
    // Subscriptions start when the server has read them; give it a moment before writing.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    for piece in ["Hel", "lo"] {
        s.data(
            Some(&alice),
            "mutation($d: String!) { publishMessageDelta(topicId: \"c1\", messageId: \"m1\", delta: $d) }",
            json!({"d": piece}),
        )
        .await;
    }
    s.data(
        Some(&alice),
        "mutation($m: JSON!) { appendMessage(topicId: \"c1\", message: $m) { position } }",
        json!({"m": {"messageId": "m1", "role": "assistant", "content": "Hello"}}),
    )
    .await;
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t1\", status: \"paused\") { position } }", json!({})).await;
    s.data(Some(&alice), "mutation { createNotification(input: {category: \"brief\", type: \"x\", title: \"hello\", body: \"b\"}) { position } }", json!({})).await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    s.data(Some(&alice), start, json!({"i": {"operationId": "op1", "kind": "CONVERSATION", "agentId": "a1"}})).await;

    let mut got: Vec<(String, Value)> = Vec::new();
    while got.len() < 6 {
        let msg = ws.next_json().await.expect("a message");
        assert_eq!(msg["type"], "next", "{msg}");
        got.push((msg["id"].as_str().unwrap_or_default().to_string(), msg["payload"]["data"].clone()));
    }
    let of = |id: &str| got.iter().filter(|(i, _)| i == id).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    let deltas = of("d");
    let texts: Vec<&str> = deltas.iter().filter_map(|d| d["messageDeltas"]["delta"].as_str()).collect();
    assert_eq!(texts, ["Hel", "lo", ""], "{deltas:?}");
    assert_eq!(deltas[2]["messageDeltas"]["done"], true);
    assert_eq!(deltas[2]["messageDeltas"]["length"], 5);
    assert_eq!(of("t")[0]["taskChanged"]["node"]["status"], "paused");
    assert_eq!(of("n")[0]["notificationCreated"]["node"]["title"], "hello");
    assert_eq!(of("w")[0]["workAvailable"]["id"], "op1");
    // the stored message is the finished one; no event per delta
    let events = s
        .data(
            Some(&alice),
            "{ events(filter: {streamPrefix: \"conversation@alice/c1\"}) { edges { node { eventType } } } }",
            json!({}),
        )
        .await;
    let types: Vec<&str> =
        events["events"]["edges"].as_array().unwrap().iter().filter_map(|e| e["node"]["eventType"].as_str()).collect();
    assert_eq!(types.iter().filter(|t| **t == "conversation.message_appended").count(), 1, "{types:?}");
    s.stop();
}

async fn sources_are_received_once(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token(ALICE).await;
    let bob = s.user_token("bob").await;
    let emit = "mutation($id: String!, $t: String!) { emitSourceEvent(sourceId: $id, sourceType: $t, payload: {topicId: \"c1\"}, timestampMs: 1700000000000) { accepted position scopeKey } }";
    let first = s.data(Some(&alice), emit, json!({"id": "src-1", "t": "agent.execution.completed"})).await;
    assert_eq!(first["emitSourceEvent"]["accepted"], true, "{first}");
    let again = s.data(Some(&alice), emit, json!({"id": "src-1", "t": "agent.execution.completed"})).await;
    assert_eq!(again["emitSourceEvent"]["accepted"], false, "the same source id twice is one source: {again}");
    // Source ids are per owner: bob's `src-1` is his own, received as for an unknown id.
    let theirs = s.data(Some(&bob), emit, json!({"id": "src-1", "t": "agent.execution.completed"})).await;
    assert_eq!(theirs["emitSourceEvent"]["accepted"], true, "{theirs}");
    let r = s.gql(Some(&alice), emit, json!({"id": "src-2", "t": "no.such.type"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let events = s
        .data(
            Some(&alice),
            "{ events(filter: {eventTypes: [\"signal.source_received\"]}) { edges { node { streamId userId } } } }",
            json!({}),
        )
        .await;
    assert_eq!(events["events"]["edges"].as_array().map(Vec::len), Some(1), "{events}");
    s.stop();
}

both!(
    sources_are_received_once as sources_are_received_once,
    every_query_root_is_owner_isolated as read_model_roots_are_owner_isolated,
    notifications_dedupe_and_inbox as notifications_dedupe_never_conflicts,
    tasks_run_layers_and_briefs as tasks_run_layers_and_brief_approval,
    subscriptions_follow_changes_and_deltas as subscriptions_follow_changes_and_deltas
);
