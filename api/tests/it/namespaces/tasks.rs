//! Task ids per owner.

use super::*;
use agentlog_domain::tasks::{CreateTask, Task, TaskCommand};

const CREATE_TASK: &str = "mutation($n: String!, $o: String) { createTask(input: {taskId: \"t1\", identifier: \"T-1\", \
    name: $n, instruction: \"do it\"}, ownerId: $o) { task { taskId userId name globalId } } }";
const TASK: &str = "query($o: String) { task(id: \"t1\", ownerId: $o) { userId name priority \
    dependencies { dependsOnId } comments { edges { node { commentId } } } } }";

async fn task_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    // The same id, one each: bob's create succeeds as for an unknown id.
    let a = s.data(Some(&alice), CREATE_TASK, json!({"n": "alice's"})).await;
    let b = s.data(Some(&bob), CREATE_TASK, json!({"n": "bob's"})).await;
    assert_eq!(a["createTask"]["task"]["userId"], "alice", "{a}");
    assert_eq!(b["createTask"]["task"]["userId"], "bob", "{b}");
    assert_eq!(b["createTask"]["task"]["name"], "bob's", "{b}");
    let again = s.gql(Some(&alice), CREATE_TASK, json!({"n": "twice"})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");

    // Dependencies resolve in the task owner's namespace: bob's t2 depends on his own t1.
    let t2 =
        "mutation { createTask(input: {taskId: \"t2\", identifier: \"T-2\", instruction: \"next\"}) { position } }";
    s.data(Some(&bob), t2, json!({})).await;
    let dep =
        "mutation { addTaskDependency(id: \"t1\", dependsOnId: \"t2\") { task { dependencies { dependsOnId } } } }";
    let r = s.gql(Some(&alice), dep, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "alice has no t2: {r}");
    let r = s.data(Some(&bob), dep, json!({})).await;
    assert_eq!(r["addTaskDependency"]["task"]["dependencies"], json!([{"dependsOnId": "t2"}]), "{r}");

    // Each sees and changes their own only.
    s.data(Some(&bob), "mutation { updateTask(id: \"t1\", patch: {priority: 1}) { position } }", json!({})).await;
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let task = s.data(Some(token), TASK, json!({})).await;
        assert_eq!(task["task"]["name"], format!("{who}'s"), "{task}");
        assert_eq!(task["task"]["priority"] == json!(1), who == "bob", "{task}");
        assert_eq!(task["task"]["dependencies"].as_array().map(Vec::len), Some(usize::from(who == "bob")), "{task}");
        let list = s.data(Some(token), "{ tasks { edges { node { userId taskId } } } }", json!({})).await;
        let edges = list["tasks"]["edges"].as_array().cloned().unwrap_or_default();
        assert!(edges.iter().all(|e| e["node"]["userId"] == who), "{list}");
    }

    // Naming another owner: a user finds nothing (as for an unknown id), an admin finds theirs.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let templates = [
        "query($o: String) { task(id: \"{ID}\", ownerId: $o) { taskId } }",
        "mutation($o: String) { updateTask(id: \"{ID}\", patch: {priority: 2}, ownerId: $o) { position } }",
        "mutation($o: String) { assignTask(id: \"{ID}\", agentId: \"inbox\", ownerId: $o) { position } }",
        "mutation($o: String) { configureTaskAutomation(id: \"{ID}\", mode: null, ownerId: $o) { position } }",
        "mutation($o: String) { setTaskTopicQuota(id: \"{ID}\", maxTopics: 3, ownerId: $o) { position } }",
        "mutation($o: String) { configureTask(id: \"{ID}\", config: {}, ownerId: $o) { position } }",
        "mutation($o: String) { changeTaskStatus(id: \"{ID}\", status: \"paused\", ownerId: $o) { position } }",
        "mutation($o: String) { addTaskDependency(id: \"{ID}\", dependsOnId: \"t2\", ownerId: $o) { position } }",
        "mutation($o: String) { removeTaskDependency(id: \"{ID}\", dependsOnId: \"t2\", ownerId: $o) { position } }",
        "mutation($o: String) { pinTaskDocument(id: \"{ID}\", documentId: \"d1\", ownerId: $o) { position } }",
        "mutation($o: String) { unpinTaskDocument(id: \"{ID}\", documentId: \"d1\", ownerId: $o) { position } }",
        "mutation($o: String) { addTaskComment(id: \"{ID}\", commentId: \"c1\", content: \"x\", ownerId: $o) { position } }",
        "mutation($o: String) { deleteTaskComment(id: \"{ID}\", commentId: \"c1\", ownerId: $o) { position } }",
        "mutation($o: String) { completeTaskTopic(id: \"{ID}\", outcome: {topicId: \"p1\", status: \"completed\"}, ownerId: $o) { position } }",
        "mutation($o: String) { cancelTaskTopic(id: \"{ID}\", topicId: \"p1\", ownerId: $o) { position } }",
        "mutation($o: String) { reviewTaskTopic(id: \"{ID}\", topicId: \"p1\", score: 50, passed: true, ownerId: $o) { position } }",
        "mutation($o: String) { recordTaskHeartbeat(id: \"{ID}\", ownerId: $o) { position } }",
        "mutation($o: String) { runTask(id: \"{ID}\", topicId: \"p9\", operationId: \"o9\", ownerId: $o) { position } }",
    ];
    for template in templates {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "t1"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "t1"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        let own = s.gql(Some(&admin), &template.replace("{ID}", "t1"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");
    // taskChanged: bob naming alice's t1 is answered as for an unknown id; an admin naming
    // alice follows hers (and sees the update below), not bob's.
    let follow = "subscription($id: String!, $o: String, $from: Int) { taskChanged(id: $id, ownerId: $o, fromPosition: $from) { eventType node { userId priority } } }";
    let (theirs, unknown) = subscription_refusals(&s, &bob, follow, ("t1", "alice"), "zz1").await;
    assert_eq!(theirs, unknown);
    let mut admin_ws = support::Ws::connect(&s, &admin, "graphql-transport-ws").await;
    // From the head now, not "from now on": the update below may commit before the server has
    // registered the subscription.
    let from = head().await;
    admin_ws.subscribe("a", follow, json!({"id": "t1", "o": "alice", "from": from})).await;
    let update = "mutation($o: String) { updateTask(id: \"t1\", patch: {priority: 4}, ownerId: $o) \
        { task { userId priority } } }";
    let r = s.data(Some(&admin), update, json!({"o": "alice"})).await;
    let change = loop {
        let v = admin_ws.next_json().await.expect("a change");
        if v["id"] == "a" && v["type"] == "next" && v["payload"]["data"]["taskChanged"]["node"]["priority"] == 4 {
            break v;
        }
    };
    assert_eq!(change["payload"]["data"]["taskChanged"]["node"]["userId"], "alice", "{change}");
    assert_eq!(r["updateTask"]["task"], json!({"userId": "alice", "priority": 4}), "{r}");
    let theirs = s.data(Some(&admin), TASK, json!({"o": "bob"})).await;
    assert_eq!(theirs["task"]["priority"], 1, "bob's is untouched: {theirs}");
    let made =
        s.data(Some(&admin), CREATE_TASK.replace("t1", "t3").as_str(), json!({"n": "for carol", "o": "carol"})).await;
    assert_eq!(made["createTask"]["task"]["userId"], "carol", "{made}");

    // An identifier is looked up in the same namespace: alice's and bob's T-1 are each theirs.
    let by_identifier = "query($o: String) { task(identifier: \"T-1\", ownerId: $o) { userId name } }";
    for (token, owner, who) in
        [(&alice, None, "alice"), (&bob, None, "bob"), (&admin, Some("alice"), "alice"), (&admin, Some("bob"), "bob")]
    {
        let r = s.data(Some(token), by_identifier, json!({"o": owner})).await;
        assert_eq!(r["task"]["userId"], who, "{r}");
    }
    let theirs = s.gql(Some(&bob), by_identifier, json!({"o": "alice"})).await;
    let unknown = s.gql(Some(&bob), "{ task(identifier: \"T-99\") { userId } }", json!({})).await;
    assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
    assert_eq!(support::error_code(&unknown).as_deref(), Some("NOT_FOUND"), "{unknown}");
    let own = s.gql(Some(&admin), by_identifier, json!({})).await;
    assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "the admin holds no T-1 of its own: {own}");

    // Global ids name the owner: each resolves to its own task.
    for (node, other) in [(&a["createTask"]["task"], &bob), (&b["createTask"]["task"], &alice)] {
        let q = "query($id: ID!) { node(id: $id) { ... on Task { userId name } } }";
        let found = s.data(Some(&admin), q, json!({"id": node["globalId"]})).await;
        assert_eq!(found["node"]["name"], node["name"], "{found}");
        let hidden = s.data(Some(other), q, json!({"id": node["globalId"]})).await;
        assert!(hidden["node"].is_null(), "{hidden}");
    }

    let db = s.stop();
    let log = support::read_log(&db).await;
    let created: Vec<(&str, &str)> =
        log.iter().filter(|e| e.event_type == "task.created").map(|e| (e.stream_id.as_str(), e.user_id())).collect();
    assert_eq!(
        created,
        [("task@alice/t1", "alice"), ("task@bob/t1", "bob"), ("task@bob/t2", "bob"), ("task@carol/t3", "carol")]
    );
    support::verify_read_models(&db).await;
}

/// A task written before ids were per owner (alice's, in the global stream `task-old`) stays
/// hers: she reads and changes it there; bob finds nothing and creates his own `old`.
async fn a_legacy_task_stream_stays_its_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let create = TaskCommand::Create(CreateTask::new("old", "T-old", "legacy"));
        state.handler.execute_stream::<Task>("task-old", &create, &ctx).await.expect("legacy task");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ task(id: \"old\") { userId instruction priority } }";
    let mine = s.data(Some(&alice), q, json!({})).await;
    assert_eq!(mine["task"]["userId"], "alice", "{mine}");
    assert_eq!(mine["task"]["instruction"], "legacy", "{mine}");
    let r = s.gql(Some(&bob), q, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let update = "mutation { updateTask(id: \"old\", patch: {priority: 2}) { task { userId priority } } }";
    let r = s.gql(Some(&bob), update, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.data(Some(&alice), update, json!({})).await;
    assert_eq!(r["updateTask"]["task"], json!({"userId": "alice", "priority": 2}), "{r}");
    let create = "mutation { createTask(input: {taskId: \"old\", identifier: \"T-o\", instruction: \"bob's\"}) \
        { task { userId instruction } } }";
    assert_eq!(s.data(Some(&bob), create, json!({})).await["createTask"]["task"]["instruction"], "bob's");
    assert_eq!(s.data(Some(&alice), q, json!({})).await["task"]["instruction"], "legacy");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("task.updated"), ["task-old"], "alice's change lands in her global stream");
    assert_eq!(streams("task.created"), ["task-old", "task@bob/old"]);
    support::verify_read_models(&db).await;
}

both!(
    task_ids_are_per_owner as task_ids_per_owner,
    a_legacy_task_stream_stays_its_owners as legacy_task_stream_stays_its_owners
);
