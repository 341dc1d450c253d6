//! Group orchestration over the real server: a supervisor broadcasts to two members, waits at
//! the barrier until both answered, is woken with their results, delegates to one member and
//! finishes; cancelling a group run cancels its members.

use crate::support;

use agentlog_eventlog::{StoreOptions, open_store};
use agentlog_projections::ReadDb;

use serde_json::{Value, json};
use support::{Db, Server};

const OP: &str = "query($id: String!) { operation(id: $id) { status completionReason asyncResults children { edges { node { id status agentId instruction disableTools } } } } }";

fn children(d: &Value) -> Vec<Value> {
    d["operation"]["children"]["edges"]
        .as_array()
        .map(|e| e.iter().map(|n| n["node"].clone()).collect())
        .unwrap_or_default()
}

pub(crate) async fn setup(s: &Server, token: &str) {
    for agent in ["sup", "m1", "m2"] {
        s.data(
            Some(token),
            "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
            json!({"i": {"agentId": agent, "config": {"slug": agent, "title": agent}}}),
        )
        .await;
    }
    let members = json!([
        {"agentId": "sup", "role": "supervisor", "enabled": true, "order": 0},
        {"agentId": "m1", "role": "participant", "enabled": true, "order": 1},
        {"agentId": "m2", "role": "participant", "enabled": true, "order": 2},
    ]);
    s.data(
        Some(token),
        "mutation($c: JSON!, $m: JSON) { createGroup(id: \"g1\", title: \"launch team\", config: $c, members: $m) { position } }",
        json!({"c": {"maxRounds": 5}, "m": members}),
    )
    .await;
}

/// The supervisor's worker (claiming the woken run) reports a decision as a tool call.
pub(crate) async fn decide(s: &Server, token: &str, op: &str, step: u32, tool: &str, arguments: Value) {
    let lt = s.claim(token, op, "sup-worker").await;
    s.data(
        Some(token),
        "mutation($id: String!, $lt: String!, $c: [ToolCallInput!]) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, toolCalls: $c) { position } }",
        json!({"id": op, "lt": lt, "c": [{"id": format!("call-{step}"), "name": tool, "status": "succeeded", "arguments": arguments}]}),
    )
    .await;
}

/// A member's worker answers.
pub(crate) async fn answer(s: &Server, token: &str, op: &str, text: &str) {
    let lt = s.claim(token, op, "member-worker").await;
    s.data(
        Some(token),
        "mutation($id: String!, $lt: String!, $r: String!) { completeOperation(id: $id, leaseToken: $lt, result: $r) { position } }",
        json!({"id": op, "lt": lt, "r": text}),
    )
    .await;
}

async fn a_supervisor_broadcasts_then_delegates(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    setup(&s, &alice).await;
    s.data(
        Some(&alice),
        "mutation { startGroupRun(groupId: \"g1\", operationId: \"sup1\", instruction: \"Plan the launch\") { position } }",
        json!({}),
    )
    .await;
    s.data(
        Some(&alice),
        "mutation { claimOperation(id: \"sup1\", workerId: \"sup-worker\", leaseSecs: 3600) { position } }",
        json!({}),
    )
    .await;

    // Round 0: broadcast to both members; the supervisor waits at the barrier.
    decide(
        &s,
        &alice,
        "sup1",
        1,
        "broadcast",
        json!({"agentIds": ["m1", "m2"], "instruction": "Ideas for the launch?"}),
    )
    .await;
    let d = s.eventually(&alice, &op_query("sup1"), |d| children(d).len() == 2).await;
    assert_eq!(d["operation"]["status"], "waiting_for_async_tool", "{d}");
    let kids = children(&d);
    let mut agents: Vec<&str> = kids.iter().filter_map(|k| k["agentId"].as_str()).collect();
    agents.sort_unstable();
    assert_eq!(agents, ["m1", "m2"]);
    assert!(kids.iter().all(|k| k["instruction"] == "Ideas for the launch?"), "{d}");
    // A broadcast's members run with tools off: a step with tool calls is refused.
    assert!(kids.iter().all(|k| k["disableTools"] == true), "{d}");
    let kid = kids[0]["id"].as_str().unwrap();
    let lt = s.claim(&alice, kid, "member-worker").await;
    let r = s
        .gql(
            Some(&alice),
            "mutation($id: String!, $lt: String!, $c: [ToolCallInput!]) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, toolCalls: $c) { position } }",
            json!({"id": kid, "lt": lt, "c": [{"id": "t1", "name": "web-search", "status": "succeeded"}]}),
        )
        .await;
    assert_eq!(support::error_code(&r).as_deref(), Some("VALIDATION"), "{r}");

    // One answer is not enough: still waiting.
    let first = kids[0]["id"].as_str().unwrap().to_string();
    let second = kids[1]["id"].as_str().unwrap().to_string();
    answer(&s, &alice, &first, "a teaser video").await;
    let d = s
        .eventually(&alice, &op_query("sup1"), |d| {
            d["operation"]["asyncResults"].as_array().is_some_and(|r| r.len() == 1)
        })
        .await;
    assert_eq!(d["operation"]["status"], "waiting_for_async_tool", "{d}");
    answer(&s, &alice, &second, "a launch-day AMA").await;

    // Both answered: the supervisor runs again, with both results (one read, one position).
    let d = s
        .eventually(&alice, &op_query("sup1"), |d| {
            d["operation"]["status"] == "running"
                && d["operation"]["asyncResults"].as_array().is_some_and(|r| r.len() == 2)
        })
        .await;
    let results: Vec<&str> =
        d["operation"]["asyncResults"].as_array().unwrap().iter().filter_map(|r| r["result"].as_str()).collect();
    assert_eq!(results.len(), 2, "{d}");
    assert!(results.contains(&"a teaser video") && results.contains(&"a launch-day AMA"), "{d}");

    // Round 1: delegate to m2; when m2 is done the run finishes.
    decide(&s, &alice, "sup1", 2, "delegate", json!({"agentId": "m2", "reason": "m2 owns the AMA"})).await;
    let d = s.eventually(&alice, &op_query("sup1"), |d| children(d).len() == 3).await;
    let delegated = children(&d).into_iter().find(|k| k["id"] != first && k["id"] != second).unwrap();
    assert_eq!(delegated["agentId"], "m2", "{d}");
    assert_eq!(delegated["disableTools"], false, "only a broadcast turns tools off: {d}");
    answer(&s, &alice, delegated["id"].as_str().unwrap(), "AMA scheduled for Friday").await;
    let d = s.eventually(&alice, &op_query("sup1"), |d| d["operation"]["status"] == "done").await;
    assert_eq!(d["operation"]["completionReason"], "done", "{d}");

    // The group recorded every step, in order.
    let events = s
        .data(
            Some(&alice),
            "{ events(filter: {eventTypes: [\"group.orchestration_advanced\"]}) { edges { node { payload } } } }",
            json!({}),
        )
        .await;
    let steps: Vec<(String, String)> = events["events"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let p = &e["node"]["payload"];
            (
                p["result"]["type"].as_str().unwrap_or("").to_string(),
                p["instruction"]["type"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let expected = [
        ("init", "call_supervisor"),
        ("supervisor_decided", "parallel_call_agents"),
        ("agents_broadcasted", "call_supervisor"),
        ("supervisor_decided", "delegate"),
        ("delegated", "finish"),
    ];
    let expected: Vec<(String, String)> = expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(steps, expected);

    // Cancelling a group run cancels the members it is waiting on.
    s.data(Some(&alice), "mutation { startGroupRun(groupId: \"g1\", operationId: \"sup2\") { position } }", json!({}))
        .await;
    s.data(Some(&alice), "mutation { claimOperation(id: \"sup2\", workerId: \"sup-worker\") { position } }", json!({}))
        .await;
    decide(
        &s,
        &alice,
        "sup2",
        1,
        "executeAgentTasks",
        json!({"tasks": [{"agentId": "m1", "instruction": "a"}, {"agentId": "m2", "instruction": "b"}]}),
    )
    .await;
    s.eventually(&alice, &op_query("sup2"), |d| children(d).len() == 2).await;
    s.data(
        Some(&alice),
        "mutation { cancelOperation(id: \"sup2\", reason: \"changed plans\") { position } }",
        json!({}),
    )
    .await;
    let d = s.eventually(&alice, &op_query("sup2"), |d| children(d).iter().all(|k| k["status"] == "cancelled")).await;
    assert_eq!(d["operation"]["status"], "cancelled", "{d}");
    s.stop();
}

fn op_query(id: &str) -> String {
    OP.replace("query($id: String!) ", "").replace("$id", &format!("\"{id}\""))
}

both!(a_supervisor_broadcasts_then_delegates as group_supervisor_broadcasts_then_delegates);

/// Broadcast to both members and let both answer: the supervisor is woken.
async fn woken_after_a_broadcast(s: &Server, alice: &str, sup: &str) -> Vec<String> {
    let start = format!(
        "mutation {{ startGroupRun(groupId: \"g1\", operationId: \"{sup}\", instruction: \"Plan\") {{ position }} }}"
    );
    s.data(Some(alice), &start, json!({})).await;
    decide(s, alice, sup, 1, "broadcast", json!({"agentIds": ["m1", "m2"], "instruction": "Ideas?"})).await;
    let d = s.eventually(alice, &op_query(sup), |d| children(d).len() == 2).await;
    let kids: Vec<String> = children(&d).iter().filter_map(|k| k["id"].as_str().map(str::to_string)).collect();
    for (kid, text) in kids.iter().zip(["a teaser", "an AMA"]) {
        answer(s, alice, kid, text).await;
    }
    kids
}

const WOKEN: &str = "query($id: String!) { operation(id: $id) { status asyncResults } }";

async fn a_woken_supervisor_reads_all_its_results_with_its_status(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    setup(&s, &alice).await;
    woken_after_a_broadcast(&s, &alice, "sup1").await;
    // Every read of the one operation is at one position: running only with both results.
    for _ in 0..400 {
        let d = s.data(Some(&alice), WOKEN, json!({"id": "sup1"})).await;
        let n = d["operation"]["asyncResults"].as_array().map_or(0, Vec::len);
        match d["operation"]["status"].as_str() {
            Some("running") => {
                assert_eq!(n, 2, "woken with part of its barrier's results: {d}");
                break;
            }
            Some("waiting_for_async_tool") => assert!(n < 2, "both results, still waiting: {d}"),
            other => panic!("unexpected status {other:?}: {d}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The results are the stream's, not the read model's: with the read model's rows gone,
    // one read still shows both.
    let dir = s.data_dir.clone();
    let db = s.stop();
    let store = open_store(&db.url(), StoreOptions::default()).await.expect("open the log");
    ReadDb::from(store.database())
        .execute("DELETE FROM operation_async_results", &[])
        .await
        .expect("drop the read model's rows");
    store.close().await;
    let s = Server::start_in(db, dir).await;
    let d = s.data(Some(&alice), WOKEN, json!({"id": "sup1"})).await;
    assert_eq!(d["operation"]["status"], "running", "{d}");
    let results = d["operation"]["asyncResults"].as_array().cloned().unwrap_or_default();
    let mut texts: Vec<&str> = results.iter().filter_map(|r| r["result"].as_str()).collect();
    texts.sort_unstable();
    assert_eq!(texts, ["a teaser", "an AMA"], "{d}");
    assert!(results.iter().any(|r| r["resumed"] == true), "the second result opened the barrier: {d}");
    s.stop();
}

both!(a_woken_supervisor_reads_all_its_results_with_its_status as woken_supervisor_reads_all_results_with_status);

/// The last step the group recorded for supervisor `sup`.
async fn last_instruction(s: &Server, token: &str, sup: &str) -> Value {
    let d = s
        .data(
            Some(token),
            "{ events(filter: {eventTypes: [\"group.orchestration_advanced\"]}) { edges { node { payload } } } }",
            json!({}),
        )
        .await;
    let steps = d["events"]["edges"].as_array().cloned().unwrap_or_default();
    let mine: Vec<Value> =
        steps.into_iter().map(|e| e["node"]["payload"].clone()).filter(|p| p["operationId"] == sup).collect();
    mine.last().map(|p| p["instruction"].clone()).unwrap_or(Value::Null)
}

async fn start(s: &Server, token: &str, sup: &str) {
    let m = format!("mutation {{ startGroupRun(groupId: \"g1\", operationId: \"{sup}\") {{ position }} }}");
    s.data(Some(token), &m, json!({})).await;
}

async fn speak_skip_call_supervisor_max_rounds_and_unsupported_decisions(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    setup(&s, &alice).await;

    // `speak` calls one member with the instruction; with skipCallSupervisor the run finishes
    // after that member answered, without calling the supervisor again.
    start(&s, &alice, "sup1").await;
    decide(
        &s,
        &alice,
        "sup1",
        1,
        "speak",
        json!({"agentId": "m1", "instruction": "Say hi", "skipCallSupervisor": true}),
    )
    .await;
    let d = s.eventually(&alice, &op_query("sup1"), |d| children(d).len() == 1).await;
    let kid = children(&d)[0].clone();
    assert_eq!((kid["agentId"].as_str(), kid["instruction"].as_str()), (Some("m1"), Some("Say hi")), "{d}");
    answer(&s, &alice, kid["id"].as_str().unwrap(), "hi").await;
    s.eventually(&alice, &op_query("sup1"), |d| d["operation"]["status"] == "done").await;
    let i = last_instruction(&s, &alice, "sup1").await;
    assert_eq!((i["type"].as_str(), i["reason"].as_str()), (Some("finish"), Some("skip_call_supervisor")), "{i}");

    // maxRounds: with one round, the first action's end finishes the run.
    s.data(Some(&alice), "mutation { updateGroupConfig(id: \"g1\", config: {maxRounds: 1}) { position } }", json!({}))
        .await;
    start(&s, &alice, "sup2").await;
    decide(&s, &alice, "sup2", 1, "speak", json!({"agentId": "m2", "instruction": "Go"})).await;
    let d = s.eventually(&alice, &op_query("sup2"), |d| children(d).len() == 1).await;
    answer(&s, &alice, children(&d)[0]["id"].as_str().unwrap(), "done").await;
    s.eventually(&alice, &op_query("sup2"), |d| d["operation"]["status"] == "done").await;
    let i = last_instruction(&s, &alice, "sup2").await;
    assert_eq!((i["type"].as_str(), i["reason"].as_str()), (Some("finish"), Some("max_rounds_exceeded")), "{i}");

    // A decision the table does not carry out is refused on the supervisor's run, never
    // taken as a finish.
    start(&s, &alice, "sup3").await;
    decide(&s, &alice, "sup3", 1, "lobe-group-management/vote", json!({"question": "Ship?"})).await;
    let q = "{ operation(id: \"sup3\") { status error childIds } }";
    let d = s.eventually(&alice, q, |d| d["operation"]["status"] == "error").await;
    let e = &d["operation"]["error"];
    assert_eq!(e["type"], "unsupported_decision", "{d}");
    assert_eq!(e["code"], "VALIDATION", "{d}");
    assert!(e["message"].as_str().is_some_and(|m| m.contains("`vote`")), "{d}");
    assert_eq!(d["operation"]["childIds"], json!([]), "nothing dispatched: {d}");
    assert_eq!(last_instruction(&s, &alice, "sup3").await["type"], "call_supervisor", "the group recorded no vote");
    s.stop();
}

both!(
    speak_skip_call_supervisor_max_rounds_and_unsupported_decisions
        as group_speak_skip_call_supervisor_max_rounds_unsupported
);

async fn client_tasks_are_their_own_kind_for_client_workers(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    setup(&s, &alice).await;
    start(&s, &alice, "sup1").await;
    let args = json!({"agentId": "m1", "instruction": "Open the file", "runInClient": true});
    decide(&s, &alice, "sup1", 1, "executeAgentTask", args).await;
    let q = "{ operation(id: \"sup1\") { status children { edges { node { id kind agentId } } } } }";
    // The child and the supervisor's wait are one append, but a response may show half of it
    // (its fields are read in separate read transactions, and a live read-model batch can end
    // inside an append): wait until both show it.
    let d = s
        .eventually(&alice, q, |d| children(d).len() == 1 && d["operation"]["status"] == "waiting_for_async_tool")
        .await;
    let task = children(&d)[0].clone();
    assert_eq!(task["kind"], "client_task", "{d}");
    assert_eq!(d["operation"]["status"], "waiting_for_async_tool", "{d}");

    // A server worker's default `workAvailable` leaves it out; a client worker asks for it.
    let sub = "subscription($k: [OperationKindInput!]) { workAvailable(agentIds: [\"m1\"], kinds: $k) { id kind } }";
    let mut client = support::Ws::connect(&s, &alice, "graphql-transport-ws").await;
    client.subscribe("c", sub, json!({"k": ["CLIENT_TASK"]})).await;
    let offered = client.next_data().await;
    assert_eq!(offered["data"]["workAvailable"]["id"], task["id"], "{offered}");
    let mut server = support::Ws::connect(&s, &alice, "graphql-transport-ws").await;
    server.subscribe("s", sub, json!({"k": null})).await;
    let start_op = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    s.data(Some(&alice), start_op, json!({"i": {"operationId": "plain", "kind": "TASK", "agentId": "m1"}})).await;
    let offered = server.next_data().await;
    assert_eq!(offered["data"]["workAvailable"]["id"], "plain", "the client task is not offered by default: {offered}");

    // The client worker claims and answers it like any run; the supervisor is woken.
    answer(&s, &alice, task["id"].as_str().unwrap(), "opened").await;
    s.eventually(&alice, q, |d| d["operation"]["status"] == "running").await;
    s.stop();
}

both!(client_tasks_are_their_own_kind_for_client_workers as group_client_tasks_are_their_own_kind);
