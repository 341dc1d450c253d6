//! Tasks end to end through the real server: a completion starts the work that waited on it
//! (the task cascade), held dependants are reported, and ending a run stops its operation.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

const CREATE: &str = "mutation($i: JSON!) { createTask(input: $i) { position } }";
const DEPEND: &str = "mutation($id: String!, $on: String!) { addTaskDependency(id: $id, dependsOnId: $on, kind: \"blocks\") { position } }";
const BRIEF: &str = "mutation($i: JSON!) { createBrief(input: $i) { position } }";
const APPROVE: &str = "mutation($id: String!) { resolveBrief(id: $id, action: \"approve\") { position } }";

/// The task query for `id` (a literal: `eventually` takes no variables).
fn task_query(id: &str) -> String {
    format!(
        "{{ task(id: \"{id}\") {{ status topics {{ edges {{ node {{ topicId operationId status trigger }} }} }} }} }}"
    )
}

async fn create_task(s: &Server, token: &str, id: &str) {
    let input = json!({"taskId": id, "identifier": id.to_uppercase(), "instruction": format!("do {id}")});
    s.data(Some(token), CREATE, json!({"i": input})).await;
}

async fn task(s: &Server, token: &str, id: &str) -> Value {
    s.data(Some(token), &task_query(id), json!({})).await["task"].clone()
}

fn topics(t: &Value) -> Vec<Value> {
    t["topics"]["edges"].as_array().map(|e| e.iter().map(|n| n["node"].clone()).collect()).unwrap_or_default()
}

/// Approve a result brief of task `id` made by hand (a worker's run would make one too).
async fn approve_result(s: &Server, token: &str, id: &str) {
    let brief = format!("brief-{id}");
    let input = json!({"briefId": brief, "type": "result", "title": format!("{id} done"), "summary": "Finished.", "taskId": id});
    s.data(Some(token), BRIEF, json!({"i": input})).await;
    s.data(Some(token), APPROVE, json!({"id": brief})).await;
}

async fn approving_a_result_brief_starts_the_released_dependants(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    for id in ["a", "b", "c", "d", "e"] {
        create_task(&s, &alice, id).await;
    }
    // a blocks b and c; b blocks d; e waits on a and on a task alice cannot see (bob's).
    for (id, on) in [("b", "a"), ("c", "a"), ("d", "b"), ("e", "a")] {
        s.data(Some(&alice), DEPEND, json!({"id": id, "on": on})).await;
    }
    let admin = s.admin_token.clone();
    s.data(
        Some(&admin),
        "mutation($i: JSON!) { createTask(input: $i, ownerId: \"bob\") { position } }",
        json!({"i": {"taskId": "x", "identifier": "X", "instruction": "bob's"}}),
    )
    .await;
    // Task ids are per owner, so no call names bob's x from alice's e; a log from before they
    // were (when an admin could) holds such an edge: appended here with the handler directly.
    {
        use agentlog_domain::{
            context::Context,
            envelope::Actor,
            tasks::{DependencyKind, Task, TaskCommand},
        };
        let state = agentlog_api::server::open_app(
            &s.db.url(),
            agentlog_api::state::Settings::default(),
            agentlog_api::state::ApiLimits::default(),
        )
        .await
        .expect("open the app");
        let ctx = Context::new(chrono::Utc::now(), uuid::Uuid::now_v7(), Actor::user("admin"), "alice");
        let edge = TaskCommand::AddDependency {
            depends_on_id: "x".into(),
            kind: DependencyKind::Blocks,
            graph: Default::default(),
        };
        state.handler.execute_of::<Task>("alice", "e", &edge, &ctx).await.expect("e waits on x");
        state.store.close().await;
    }

    approve_result(&s, &alice, "a").await;
    assert_eq!(task(&s, &alice, "a").await["status"], "completed");
    for id in ["b", "c"] {
        let t = s.eventually(&alice, &task_query(id), |d| d["task"]["status"] == "running").await;
        let runs = topics(&t["task"]);
        assert_eq!(runs.len(), 1, "{id} started once: {t}");
        assert_eq!(runs[0]["status"], "running", "{t}");
        assert_eq!(runs[0]["trigger"], "manual", "{t}");
    }
    // The cascade's notification about e says why it was not started.
    let inbox = s
        .eventually(&alice, "{ notifications { edges { node { type metadata } } } }", |d| {
            d["notifications"]["edges"].as_array().is_some_and(|e| e.iter().any(|n| n["node"]["type"] == "task_held"))
        })
        .await;
    let held: Vec<&Value> = inbox["notifications"]["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["node"]["type"] == "task_held")
        .collect();
    assert_eq!(held.len(), 1, "{inbox}");
    assert_eq!(held[0]["node"]["metadata"]["taskId"], "e", "{inbox}");
    assert_eq!(held[0]["node"]["metadata"]["unknownUpstreams"], json!(["x"]), "{inbox}");
    // Why do b's run and the notification exist? One request each: the creating event and its
    // causes back to the approval that completed a.
    // An origin reads its chain once per row, so a page of them is priced per row: pages of 10.
    let why = "{ operations(first: 10, filter: {taskId: \"b\"}) { edges { node { origin { event { eventType } path { eventType } } } } } \
               notifications(first: 10) { edges { node { type origin { event { eventType } path { eventType } } } } } }";
    let d = s.data(Some(&alice), why, json!({})).await;
    let kinds = |o: &Value| -> Vec<String> {
        o["path"].as_array().into_iter().flatten().filter_map(|e| e["eventType"].as_str().map(str::to_string)).collect()
    };
    let run = &d["operations"]["edges"][0]["node"]["origin"];
    assert_eq!(run["event"]["eventType"], "operation.created", "{d}");
    assert_eq!(kinds(run), ["brief.resolved", "task.status_changed", "operation.created"], "{d}");
    let note = d["notifications"]["edges"].as_array().into_iter().flatten().find(|n| n["node"]["type"] == "task_held");
    let note = &note.expect("the task_held notification")["node"]["origin"];
    assert_eq!(note["event"]["eventType"], "notification.created", "{d}");
    assert_eq!(kinds(note), ["brief.resolved", "task.status_changed", "notification.created"], "{d}");
    // Another user sees neither.
    let bob = s.user_token("bob").await;
    let d = s.data(Some(&bob), why, json!({})).await;
    assert_eq!(d["operations"]["edges"], json!([]), "{d}");
    assert_eq!(d["notifications"]["edges"], json!([]), "{d}");
    // d waits for b, e for the task alice cannot see.
    for id in ["d", "e"] {
        let t = task(&s, &alice, id).await;
        assert_eq!(t["status"], "backlog", "{id}: {t}");
        assert!(topics(&t).is_empty(), "{id} not started: {t}");
    }

    // Finishing b (its result approved while it runs) starts d.
    approve_result(&s, &alice, "b").await;
    let t = s.eventually(&alice, &task_query("d"), |d| d["task"]["status"] == "running").await;
    assert_eq!(topics(&t["task"]).len(), 1, "{t}");
    let t = task(&s, &alice, "e").await;
    assert_eq!(t["status"], "backlog", "e is still held: {t}");
    // c still runs, started once.
    let t = task(&s, &alice, "c").await;
    assert_eq!(topics(&t).len(), 1, "{t}");
    s.stop();
}

both!(approving_a_result_brief_starts_the_released_dependants as cascade_starts_released_dependants);

const RUN: &str = "mutation($id: String!, $tp: String!, $op: String!) { runTask(id: $id, topicId: $tp, operationId: $op) { position } }";
const CLAIM: &str =
    "mutation($id: String!) { claimOperation(id: $id, workerId: \"w1\", leaseSecs: 3600) { lease { token } } }";

/// Claim run `id`; its lease token.
async fn claim(s: &Server, token: &str, id: &str) -> String {
    let d = s.data(Some(token), CLAIM, json!({"id": id})).await;
    d["claimOperation"]["lease"]["token"].as_str().expect("a lease token").to_string()
}

fn operation_query(id: &str) -> String {
    format!("{{ operation(id: \"{id}\") {{ status }} }}")
}

async fn ending_a_topic_cancels_its_run_and_descendants(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    for (n, id) in ["t1", "t2", "t3"].iter().enumerate() {
        create_task(&s, &alice, id).await;
        s.data(Some(&alice), RUN, json!({"id": id, "tp": format!("tp{}", n + 1), "op": format!("op{}", n + 1)})).await;
    }
    // t1's run is claimed and has a sub-agent with its own sub-agent.
    let lease = claim(&s, &alice, "op1").await;
    let spawn = "mutation($p: String!, $id: String!, $l: String) { spawnSubagent(parentOperationId: $p, leaseToken: $l, input: {operationId: $id, kind: SUBAGENT, agentId: \"inbox\"}) { position } }";
    s.data(Some(&alice), spawn, json!({"p": "op1", "id": "op1-child", "l": lease})).await;
    let child_lease = claim(&s, &alice, "op1-child").await;
    s.data(Some(&alice), spawn, json!({"p": "op1-child", "id": "op1-grandchild", "l": child_lease})).await;
    claim(&s, &alice, "op3").await;
    for op in ["op1", "op2", "op3"] {
        assert_ne!(s.data(Some(&alice), &operation_query(op), json!({})).await["operation"]["status"], "cancelled");
    }

    // cancelTaskTopic: the run and its descendants are cancelled; the task pauses.
    let d = s
        .data(Some(&alice), "mutation { cancelTaskTopic(id: \"t1\", topicId: \"tp1\") { task { status } } }", json!({}))
        .await;
    assert_eq!(d["cancelTaskTopic"]["task"]["status"], "paused", "{d}");
    for op in ["op1", "op1-child", "op1-grandchild"] {
        let d = s.eventually(&alice, &operation_query(op), |d| d["operation"]["status"] == "cancelled").await;
        assert_eq!(d["operation"]["status"], "cancelled", "{op}: {d}");
    }
    // A status change out of running (the run not even claimed yet).
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t2\", status: \"paused\") { position } }", json!({})).await;
    let d = s.eventually(&alice, &operation_query("op2"), |d| d["operation"]["status"] == "cancelled").await;
    assert_eq!(d["operation"]["status"], "cancelled", "op2: {d}");
    // Approving a result brief completes the running task: its run stops.
    approve_result(&s, &alice, "t3").await;
    let d = s.eventually(&alice, &operation_query("op3"), |d| d["operation"]["status"] == "cancelled").await;
    assert_eq!(d["operation"]["status"], "cancelled", "op3: {d}");
    // The runs' ends change nothing more on the tasks.
    for (id, status) in [("t1", "paused"), ("t2", "paused"), ("t3", "completed")] {
        let t = task(&s, &alice, id).await;
        assert_eq!(t["status"], status, "{id}: {t}");
        assert_eq!(topics(&t)[0]["status"], "canceled", "{id}: {t}");
    }
    s.stop();
}

both!(ending_a_topic_cancels_its_run_and_descendants as ending_a_topic_cancels_its_run);

const COMPLETE: &str = "mutation($id: String!, $l: String!, $r: String, $j: Boolean) { completeOperation(id: $id, leaseToken: $l, result: $r, briefJudgement: $j) { position } }";

fn briefs_query(task: &str) -> String {
    format!("{{ briefs(filter: {{taskId: \"{task}\"}}) {{ edges {{ node {{ briefId type actions topicId }} }} }} }}")
}

fn briefs(d: &Value) -> Vec<Value> {
    d["briefs"]["edges"].as_array().map(|e| e.iter().map(|n| n["node"].clone()).collect()).unwrap_or_default()
}

async fn a_finished_run_yields_a_result_brief_unless_its_judge_says_no(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let summary = "A substantive summary of the work.";
    // t1: no verdict (the default rule: substantive content gets a brief); t2: the worker's
    // judge says no; t3: it says yes.
    for (n, (id, judgement)) in [("t1", Value::Null), ("t2", json!(false)), ("t3", json!(true))].into_iter().enumerate()
    {
        create_task(&s, &alice, id).await;
        let op = format!("op{}", n + 1);
        s.data(Some(&alice), RUN, json!({"id": id, "tp": format!("tp{}", n + 1), "op": op})).await;
        let lease = claim(&s, &alice, &op).await;
        s.data(Some(&alice), COMPLETE, json!({"id": op, "l": lease, "r": summary, "j": judgement})).await;
    }
    for id in ["t1", "t3"] {
        let d = s.eventually(&alice, &briefs_query(id), |d| !briefs(d).is_empty()).await;
        let found = briefs(&d);
        assert_eq!(found.len(), 1, "{id}: {d}");
        assert_eq!(found[0]["type"], "result", "{d}");
        let keys: Vec<&str> =
            found[0]["actions"].as_array().unwrap().iter().filter_map(|a| a["key"].as_str()).collect();
        assert_eq!(keys, ["approve", "comment", "link"], "{d}");
        assert_eq!(found[0]["actions"][2]["type"], "link", "{d}");
    }
    // The signal bus follows the log in order: t3's brief exists, so t2's topic was judged.
    assert!(briefs(&s.data(Some(&alice), &briefs_query("t2"), json!({})).await).is_empty(), "t2's judge said no");
    for (id, emit, source) in [("t1", true, "rule"), ("t2", false, "llm-judge"), ("t3", true, "llm-judge")] {
        let t = s
            .data(
                Some(&alice),
                &format!("{{ task(id: \"{id}\") {{ status topics {{ edges {{ node {{ status handoff }} }} }} }} }}"),
                json!({}),
            )
            .await;
        let topic = &topics(&t["task"])[0];
        assert_eq!(topic["status"], "completed", "{id}: {t}");
        assert_eq!(topic["handoff"]["briefDecision"]["emit"], emit, "{id}: {t}");
        assert_eq!(topic["handoff"]["briefDecision"]["source"], source, "{id}: {t}");
        assert_eq!(t["task"]["status"], "paused", "{id}: a manual task pauses for its human: {t}");
    }
    // Why does t1's brief exist? One request: its creating event and the causes back to the
    // worker's completion.
    let q = "{ briefs(first: 10, filter: {taskId: \"t1\"}) { edges { node { origin { event { eventType streamId } path { eventType } } } } } }";
    let d = s.data(Some(&alice), q, json!({})).await;
    let origin = &d["briefs"]["edges"][0]["node"]["origin"];
    assert_eq!(origin["event"]["eventType"], "brief.created", "{d}");
    let path: Vec<&str> = origin["path"].as_array().unwrap().iter().filter_map(|e| e["eventType"].as_str()).collect();
    assert_eq!(path, ["operation.completed", "task.topic_completed", "brief.created"], "{d}");
    // Another user cannot read it.
    let bob = s.user_token("bob").await;
    let d = s.data(Some(&bob), q, json!({})).await;
    assert_eq!(d["briefs"]["edges"], json!([]), "{d}");
    // Approving the run's brief completes the task.
    let d = s.data(Some(&alice), &briefs_query("t1"), json!({})).await;
    let brief = briefs(&d)[0]["briefId"].as_str().unwrap().to_string();
    s.data(Some(&alice), APPROVE, json!({"id": brief})).await;
    assert_eq!(task(&s, &alice, "t1").await["status"], "completed");
    s.stop();
}

both!(a_finished_run_yields_a_result_brief_unless_its_judge_says_no as finished_run_yields_result_brief);

async fn a_run_past_its_heartbeat_timeout_is_timed_out_once(db: Db) {
    let s = Server::start(db).await;
    // A second server process on the same database passes its clock too.
    let other = s.sibling().await;
    let alice = s.user_token("alice").await;
    let input = json!({"taskId": "hb", "identifier": "HB", "instruction": "work", "heartbeat": {"timeoutSecs": 1}});
    s.data(Some(&alice), CREATE, json!({"i": input})).await;
    s.data(Some(&alice), RUN, json!({"id": "hb", "tp": "tp1", "op": "op1"})).await;
    claim(&s, &alice, "op1").await;
    // No heartbeat comes: after the timeout the clock pass pauses the task and times out its
    // topic, whose run is then cancelled.
    let d = s.eventually(&alice, &task_query("hb"), |d| d["task"]["status"] == "paused").await;
    assert_eq!(d["task"]["status"], "paused", "{d}");
    assert_eq!(topics(&d["task"])[0]["status"], "timeout", "{d}");
    let t = s.data(Some(&alice), "{ task(id: \"hb\") { error } }", json!({})).await;
    assert_eq!(t["task"]["error"], "Heartbeat timeout", "{t}");
    let op = s.eventually(&alice, &operation_query("op1"), |d| d["operation"]["status"] == "cancelled").await;
    assert_eq!(op["operation"]["status"], "cancelled", "{op}");
    // Both instances keep passing; a restart passes again: the timeout is written once.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let mut s = s;
    s.restart().await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    other.stop();
    let db = s.stop();
    let log = support::read_log(&db).await;
    let timed_out: Vec<_> = log.iter().filter(|e| e.event_type == "task.topics_timed_out").collect();
    assert_eq!(timed_out.len(), 1, "timed out once");
    let pauses = log
        .iter()
        .filter(|e| e.event_type == "task.status_changed" && e.payload["reason"] == "heartbeat_timeout")
        .count();
    assert_eq!(pauses, 1);
    assert_eq!(timed_out[0].metadata.actor.id, "scheduler", "{:?}", timed_out[0].metadata);
}

both!(a_run_past_its_heartbeat_timeout_is_timed_out_once as heartbeat_timeout_fires_once);

async fn racing_dependencies_never_both_close_a_cycle(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let add = |id: String, on: String| {
        let (s, alice) = (&s, alice.clone());
        async move { s.gql(Some(&alice), DEPEND, json!({"id": id, "on": on})).await }
    };
    let one_of = |round: usize, what: &str, one: &Value, two: &Value| {
        let ok = [one, two].iter().filter(|r| r.get("errors").is_none()).count();
        assert_eq!(ok, 1, "round {round}: exactly one of {what}: {one} {two}");
        for r in [one, two].into_iter().filter(|r| r.get("errors").is_some()) {
            assert_eq!(support::error_code(r).as_deref(), Some("VALIDATION"), "round {round}: {r}");
        }
    };
    for round in 0..50 {
        let [a, b, p, q, r, t] = ["a", "b", "p", "q", "r", "t"].map(|n| format!("{n}{round}"));
        for id in [&a, &b, &p, &q, &r, &t] {
            create_task(&s, &alice, id).await;
        }
        // Both ends of one edge: a → b and b → a at once.
        let (one, two) = tokio::join!(add(a.clone(), b.clone()), add(b.clone(), a.clone()));
        one_of(round, "a→b, b→a", &one, &two);
        // Far ends of a longer cycle: with q → r and t → p in place, p → q and r → t together
        // would close p → q → r → t → p, though neither writes a stream the other writes.
        for (id, on) in [(&q, &r), (&t, &p)] {
            let done = add(id.clone(), on.clone()).await;
            assert!(done.get("errors").is_none(), "{done}");
        }
        let (one, two) = tokio::join!(add(p.clone(), q.clone()), add(r.clone(), t.clone()));
        one_of(round, "p→q, r→t", &one, &two);
    }
    // The truth has no blocks cycle: fold every task's edges from the log.
    let db = s.stop();
    let log = support::read_log(&db).await;
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for e in log.iter() {
        let Some((agentlog_domain::streams::StreamKind::Task, task)) =
            agentlog_domain::streams::StreamKind::parse(&e.stream_id)
        else {
            continue;
        };
        let task = task.to_string();
        match e.event_type.as_str() {
            "task.dependency_added" if e.payload["kind"] == "blocks" => {
                edges.entry(task).or_default().insert(e.payload["dependsOnId"].as_str().unwrap().to_string());
            }
            "task.dependency_removed" => {
                edges.entry(task).or_default().remove(e.payload["dependsOnId"].as_str().unwrap());
            }
            _ => {}
        }
    }
    let graph = edges.iter().fold(agentlog_domain::tasks::graph::BlocksGraph::new(), |g, (t, ups)| {
        ups.iter().fold(g, |g, u| g.with_edge(t, u))
    });
    for (t, ups) in &edges {
        for u in ups {
            assert!(graph.path(u, t).is_none(), "cycle through {t} → {u}");
        }
    }
}

both!(racing_dependencies_never_both_close_a_cycle as racing_dependencies_never_close_a_cycle);

async fn head(s: &Server) -> i64 {
    s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await["headPosition"].as_i64().unwrap()
}

/// `query` is refused with `code` and the log is unchanged.
async fn refused(s: &Server, token: &str, query: &str, variables: Value, code: &str) {
    let before = head(s).await;
    let r = s.gql(Some(token), query, variables).await;
    assert_eq!(support::error_code(&r).as_deref(), Some(code), "{query}: {r}");
    assert_eq!(head(s).await, before, "{query} wrote nothing");
}

async fn bad_input_is_refused_with_a_code_and_writes_nothing(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    // Time zones must be IANA zones, on cron jobs and scheduled tasks.
    let cron = "mutation($i: JSON!) { createCronJob(input: $i) { position cronJob { conditions } } }";
    let job = |tz: &str| json!({"i": {"jobId": "j1", "agentId": "inbox", "pattern": "0 9 * * *", "timezone": tz, "content": "hi", "enabled": true}});
    refused(&s, &alice, cron, job("Mars/Olympus"), "VALIDATION").await;
    refused(&s, &alice, "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": {"taskId": "s1", "identifier": "S-1", "instruction": "x", "automationMode": "schedule", "schedule": {"pattern": "0 9 * * *", "timezone": "Mars/Olympus"}}}), "VALIDATION").await;
    // Conditions are the documented fields; others are refused, not ignored.
    let mut with_conditions = job("Europe/Berlin");
    with_conditions["i"]["conditions"] = json!({"weekdays": [1]});
    refused(&s, &alice, cron, with_conditions.clone(), "VALIDATION").await;
    with_conditions["i"]["conditions"] =
        json!({"activeDays": [1, 2], "activeHours": {"start": 9, "end": 17}, "maxExecutionsPerDay": 2});
    let d = s.data(Some(&alice), cron, with_conditions).await;
    assert_eq!(d["createCronJob"]["cronJob"]["conditions"]["activeDays"], json!([1, 2]), "{d}");
    assert_eq!(d["createCronJob"]["cronJob"]["conditions"]["activeHours"]["start"], 9, "{d}");
    refused(
        &s,
        &alice,
        "mutation { updateCronJob(id: \"j1\", patch: {timezone: \"Mars/Olympus\"}) { position } }",
        json!({}),
        "VALIDATION",
    )
    .await;
    create_task(&s, &alice, "t1").await;
    refused(&s, &alice, "mutation { configureTaskAutomation(id: \"t1\", mode: \"schedule\", schedule: {pattern: \"0 9 * * *\", timezone: \"Nowhere/Land\"}) { position } }", json!({}), "VALIDATION").await;

    // Notifications: an unknown id, another user's id, no ids at all.
    let n = s.data(Some(&bob), "mutation { createNotification(input: {category: \"x\", type: \"y\", title: \"t\", body: \"b\"}) { notification { notificationId } } }", json!({})).await;
    let bobs = n["createNotification"]["notification"]["notificationId"].as_str().unwrap().to_string();
    for mutation in ["markNotificationsRead", "markNotificationsUnread", "archiveNotifications"] {
        let q = format!("mutation($ids: [String!]!) {{ {mutation}(ids: $ids) {{ position }} }}");
        refused(&s, &alice, &q, json!({"ids": ["no-such-notification"]}), "NOT_FOUND").await;
        refused(&s, &alice, &q, json!({"ids": [bobs]}), "NOT_FOUND").await;
        refused(&s, &alice, &q, json!({"ids": []}), "VALIDATION").await;
    }
    let d = s
        .data(
            Some(&bob),
            "mutation($ids: [String!]!) { markNotificationsRead(ids: $ids) { unreadCount } }",
            json!({"ids": [bobs]}),
        )
        .await;
    assert_eq!(d["markNotificationsRead"]["unreadCount"], 0, "{d}");

    // completeTaskTopic takes the shape its doc gives.
    s.data(Some(&alice), RUN, json!({"id": "t1", "tp": "tp1", "op": "op1"})).await;
    let complete = "mutation($o: JSON!) { completeTaskTopic(id: \"t1\", outcome: $o) { task { status topics { edges { node { status handoff } } } } } }";
    refused(&s, &alice, complete, json!({"o": {"topicId": "tp1", "status": "failed"}}), "VALIDATION").await;
    refused(&s, &alice, complete, json!({"o": {"topicId": "tp1", "status": "done"}}), "VALIDATION").await;
    refused(&s, &alice, complete, json!({"o": {"topicId": "nope", "status": "completed"}}), "NOT_FOUND").await;
    let d = s
        .data(Some(&alice), complete, json!({"o": {"topicId": "tp1", "status": "completed", "result": "A substantive summary of the work.", "handoff": {"title": "T", "summary": "S", "keyFindings": ["k"], "nextAction": "N"}}}))
        .await;
    let topic = &topics(&d["completeTaskTopic"]["task"])[0];
    assert_eq!(topic["status"], "completed", "{d}");
    assert_eq!(topic["handoff"]["nextAction"], "N", "{d}");
    assert_eq!(d["completeTaskTopic"]["task"]["status"], "paused", "{d}");

    // A requestId reused on another target.
    create_task(&s, &alice, "t2").await;
    create_task(&s, &alice, "t3").await;
    let status = "mutation($id: String!, $r: String) { changeTaskStatus(id: $id, status: \"canceled\", requestId: $r) { position } }";
    s.data(Some(&alice), status, json!({"id": "t2", "r": "req-1"})).await;
    refused(&s, &alice, status, json!({"id": "t3", "r": "req-1"}), "VALIDATION").await;
    assert_eq!(task(&s, &alice, "t3").await["status"], "backlog");
    s.stop();
}

both!(bad_input_is_refused_with_a_code_and_writes_nothing as bad_input_refused_writes_nothing);
