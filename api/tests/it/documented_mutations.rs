//! Every task, brief, notification, cron, agent and group mutation called with its documented
//! arguments, each checked for the effect its doc string promises.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

async fn every_mutation_does_what_its_doc_says(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let m = |q: &'static str| {
        let (s, alice) = (&s, alice.clone());
        async move { s.data(Some(&alice), q, json!({})).await }
    };

    // Tasks.
    m("mutation { createTask(input: {taskId: \"t1\", identifier: \"T-1\", instruction: \"x\"}) { position } }").await;
    m("mutation { createTask(input: {taskId: \"t2\", identifier: \"T-2\", instruction: \"y\"}) { position } }").await;
    let d = m("mutation { updateTask(id: \"t1\", patch: {name: \"Report\", priority: 2}) { task { name priority } } }")
        .await;
    assert_eq!(d["updateTask"]["task"], json!({"name": "Report", "priority": 2}));
    let d = m("mutation { setTaskTopicQuota(id: \"t1\", maxTopics: 3) { task { maxTopics } } }").await;
    assert_eq!(d["setTaskTopicQuota"]["task"]["maxTopics"], 3);
    let d = m("mutation { configureTask(id: \"t1\", config: {model: \"m1\", pauseAfterTopic: false, reviewEnabled: true}) { task { config } } }").await;
    assert_eq!(d["configureTask"]["task"]["config"]["model"], "m1", "{d}");
    assert_eq!(d["configureTask"]["task"]["config"]["reviewEnabled"], true, "{d}");
    m("mutation { addTaskDependency(id: \"t1\", dependsOnId: \"t2\", kind: \"relates\") { position } }").await;
    let d = m(
        "mutation { removeTaskDependency(id: \"t1\", dependsOnId: \"t2\") { task { dependencies { dependsOnId } } } }",
    )
    .await;
    assert_eq!(d["removeTaskDependency"]["task"]["dependencies"], json!([]), "{d}");
    let d = m("mutation { pinTaskDocument(id: \"t1\", documentId: \"doc-1\", pinnedBy: \"agent\") { task { documents { documentId pinnedBy } } } }").await;
    assert_eq!(d["pinTaskDocument"]["task"]["documents"], json!([{"documentId": "doc-1", "pinnedBy": "agent"}]));
    let r = s
        .gql(
            Some(&alice),
            "mutation { pinTaskDocument(id: \"t1\", documentId: \"doc-2\", pinnedBy: \"system\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(support::error_code(&r).as_deref(), Some("VALIDATION"), "`system` is agentlog's own: {r}");
    let d =
        m("mutation { unpinTaskDocument(id: \"t1\", documentId: \"doc-1\") { task { documents { documentId } } } }")
            .await;
    assert_eq!(d["unpinTaskDocument"]["task"]["documents"], json!([]));
    let comments = "{ task(id: \"t1\") { comments { edges { node { commentId content } } } } }";
    m("mutation { addTaskComment(id: \"t1\", commentId: \"c1\", content: \"looks fine\") { position } }").await;
    assert_eq!(
        s.data(Some(&alice), comments, json!({})).await["task"]["comments"]["edges"][0]["node"]["content"],
        "looks fine"
    );
    m("mutation { deleteTaskComment(id: \"t1\", commentId: \"c1\") { position } }").await;
    assert_eq!(s.data(Some(&alice), comments, json!({})).await["task"]["comments"]["edges"], json!([]));
    m("mutation { runTask(id: \"t1\", topicId: \"tp1\", operationId: \"op1\") { position } }").await;
    let d = m("mutation { recordTaskHeartbeat(id: \"t1\") { task { lastHeartbeatAt } } }").await;
    assert!(d["recordTaskHeartbeat"]["task"]["lastHeartbeatAt"].is_string(), "{d}");
    m("mutation { completeTaskTopic(id: \"t1\", outcome: {topicId: \"tp1\", status: \"completed\", result: \"Done with the report.\"}) { position } }").await;
    m("mutation { reviewTaskTopic(id: \"t1\", topicId: \"tp1\", score: 80, passed: true, scores: [{rubricId: \"r1\", score: 80, passed: true}]) { position } }").await;
    let d = m("{ task(id: \"t1\") { topics { edges { node { reviewScore reviewPassed } } } } }").await;
    assert_eq!(d["task"]["topics"]["edges"][0]["node"], json!({"reviewScore": 80, "reviewPassed": true}), "{d}");

    // Briefs and notifications.
    m("mutation { createBrief(input: {briefId: \"b1\", type: \"decision\", title: \"Pick\", summary: \"A or B\"}) { position } }").await;
    let d = m("mutation { markBriefRead(id: \"b1\") { brief { readAt } } }").await;
    assert!(d["markBriefRead"]["brief"]["readAt"].is_string(), "{d}");
    let n = m("mutation { createNotification(input: {category: \"c\", type: \"t\", title: \"T\", body: \"B\"}) { notification { notificationId } } }").await;
    let id = n["createNotification"]["notification"]["notificationId"].as_str().unwrap().to_string();
    let unread = |q: &str, id: &str| {
        let q = q.to_string();
        let (s, alice, id) = (&s, alice.clone(), id.to_string());
        async move { s.data(Some(&alice), &q, json!({"ids": [id]})).await }
    };
    unread("mutation($ids: [String!]!) { markNotificationsRead(ids: $ids) { unreadCount } }", &id).await;
    let d = unread("mutation($ids: [String!]!) { markNotificationsUnread(ids: $ids) { unreadCount } }", &id).await;
    assert!(d["markNotificationsUnread"]["unreadCount"].as_i64().unwrap() >= 1, "{d}");
    let d = m("mutation { archiveAllNotifications { unreadCount } }").await;
    assert_eq!(d["archiveAllNotifications"]["unreadCount"], 0, "{d}");
    assert_eq!(m("{ notifications { edges { node { notificationId } } } }").await["notifications"]["edges"], json!([]));

    // Agents and groups.
    m("mutation { registerAgent(input: {agentId: \"a1\", config: {slug: \"writer\", title: \"Writer\"}}) { position } }").await;
    m("mutation { registerAgent(input: {agentId: \"a2\", config: {slug: \"editor\", title: \"Editor\"}}) { position } }").await;
    let d = m("mutation { updateAgentConfig(id: \"a1\", patch: {title: \"Senior writer\", model: \"m2\"}) { agent { title model } } }").await;
    assert_eq!(d["updateAgentConfig"]["agent"], json!({"title": "Senior writer", "model": "m2"}), "{d}");
    m("mutation { createGroup(id: \"g1\", title: \"G\", config: {maxRounds: 5}, members: [{agentId: \"a1\", role: \"supervisor\", enabled: true, order: 0}]) { position } }").await;
    let d = m("mutation { updateGroupConfig(id: \"g1\", config: {maxRounds: 7, systemPrompt: \"be brief\"}) { group { maxRounds } } }").await;
    assert_eq!(d["updateGroupConfig"]["group"]["maxRounds"], 7, "{d}");
    let d =
        m("mutation { addGroupMember(id: \"g1\", agentId: \"a2\") { group { members { agentId role enabled } } } }")
            .await;
    let members = &d["addGroupMember"]["group"]["members"];
    assert!(members.as_array().unwrap().iter().any(|x| x["agentId"] == "a2" && x["role"] == "participant"), "{d}");
    let d = m("mutation { updateGroupMember(id: \"g1\", agentId: \"a2\", enabled: false, order: 3) { group { members { agentId enabled order } } } }").await;
    let a2: Vec<&Value> = d["updateGroupMember"]["group"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["agentId"] == "a2")
        .collect();
    assert_eq!(a2[0]["enabled"], false, "{d}");
    assert_eq!(a2[0]["order"], 3, "{d}");
    let d = m("mutation { removeGroupMember(id: \"g1\", agentId: \"a2\") { group { memberCount } } }").await;
    assert_eq!(d["removeGroupMember"]["group"]["memberCount"], 1, "{d}");

    // Cron jobs.
    m("mutation { createCronJob(input: {jobId: \"j1\", agentId: \"a1\", pattern: \"0 9 * * 1\", timezone: \"Europe/Berlin\", content: \"weekly\", enabled: true, maxExecutions: 2}) { position } }").await;
    m("mutation { disableCronJob(id: \"j1\") { position } }").await;
    let d = m("mutation { enableCronJob(id: \"j1\") { cronJob { enabled } } }").await;
    assert_eq!(d["enableCronJob"]["cronJob"]["enabled"], true);
    let d = m("mutation { resetCronJobExecutions(id: \"j1\", maxExecutions: 5) { cronJob { maxExecutions remainingExecutions enabled } } }").await;
    assert_eq!(
        d["resetCronJobExecutions"]["cronJob"],
        json!({"maxExecutions": 5, "remainingExecutions": 5, "enabled": true}),
        "{d}"
    );
    m("mutation { deleteCronJob(id: \"j1\") { position } }").await;
    let r = s.gql(Some(&alice), "mutation { enableCronJob(id: \"j1\") { position } }", json!({})).await;
    assert!(r.get("errors").is_some(), "a deleted job takes no more commands: {r}");
    s.stop();
}

both!(every_mutation_does_what_its_doc_says as mutations_do_what_their_docs_say);
