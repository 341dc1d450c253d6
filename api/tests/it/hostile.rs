//! Requests an attacker would send, with a valid low-privilege token or with none, against a
//! server holding another user's data: each is refused (or bounded) and changes nothing for the
//! other user. RELIABILITY.md, "Hostile requests", has each probe's cost before and after.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::support::{Db, Server, Ws, error_code};

/// A fragment bomb: `levels` fragments on `Query`, each spreading the previous one ten times,
/// the first selecting `__typename` — 10^(levels-1) fields from a few hundred bytes.
fn bomb(levels: usize) -> String {
    let mut q = format!("query {{ ...F{} }} fragment F0 on Query {{ __typename }}", levels - 1);
    for i in 1..levels {
        let spreads: Vec<String> = (0..10).map(|_| format!("...F{}", i - 1)).collect();
        q.push_str(&format!(" fragment F{i} on Query {{ {} }}", spreads.join(" ")));
    }
    q
}

/// The server process's peak resident memory so far, KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc status")
}

/// How long one request took, and its answer.
async fn timed(s: &Server, token: Option<&str>, query: &str) -> (Duration, Value) {
    let t = Instant::now();
    let r = s.gql(token, query, json!({})).await;
    (t.elapsed(), r)
}

async fn a_fragment_bomb_is_refused_at_once_and_costs_no_memory(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"t1\") { position } }", json!({})).await;
    s.data(Some(&alice), "{ headPosition }", json!({})).await;
    let before = peak_kib(s.pid());

    // 7, 8 and 9 levels, anonymous and as bob, all at once, while alice reads.
    let bombs: Vec<String> = [7, 8, 9].map(bomb).to_vec();
    let attacks = bombs.iter().flat_map(|b| [None, Some(bob.as_str())].map(|t| timed(&s, t, b)));
    let (answers, (alice_took, alice_read)) =
        tokio::join!(join_all(attacks), timed(&s, Some(&alice), "{ headPosition }"));
    for (took, r) in &answers {
        assert_eq!(error_code(r).as_deref(), Some("LIMIT"), "{r}");
        assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("fragment spread")), "{r}");
        assert!(r.get("data").is_none_or(Value::is_null), "nothing executed: {r}");
        assert!(*took < Duration::from_secs(1), "refused after {took:?}");
    }
    assert!(alice_read["errors"].is_null(), "{alice_read}");
    assert!(alice_read["data"]["headPosition"].as_i64().is_some_and(|p| p > 0), "{alice_read}");
    assert!(alice_took < Duration::from_secs(1), "alice waited {alice_took:?}");

    // The same over a websocket.
    let mut ws = Ws::connect(&s, &bob, "graphql-transport-ws").await;
    ws.subscribe("1", &bomb(9), json!({})).await;
    let refused = ws.next_json().await.expect("an answer");
    let text = refused.to_string();
    assert!(text.contains("LIMIT") && text.contains("fragment spread"), "{refused}");
    ws.cut().await;

    let grew = peak_kib(s.pid()).saturating_sub(before);
    assert!(grew < 64 * 1024, "the server's peak resident memory grew by {grew} KiB");
    s.stop();
}

async fn only_introspection_is_answered_without_a_token(db: Db) {
    let s = Server::start(db).await;
    let r = s.gql(None, "{ __schema { queryType { name } } }", json!({})).await;
    assert_eq!(r["data"]["__schema"]["queryType"]["name"], "Query", "{r}");
    for q in [
        "{ headPosition }",
        "{ __typename headPosition }",
        "{ ...F } fragment F on Query { headPosition }",
        "{ ... on Query { headPosition } }",
        "mutation { createConversation(topicId: \"t\") { position } }",
        "subscription { events { position } }",
    ] {
        let r = s.gql(None, q, json!({})).await;
        assert_eq!(error_code(&r).as_deref(), Some("UNAUTHENTICATED"), "{q}: {r}");
        assert!(r.get("data").is_none_or(Value::is_null), "{q}: {r}");
    }
    // A wide document is refused on its size whoever sends it, before the token matters.
    let wide: String = (0..2_001).map(|i| format!("a{i}: __typename ")).collect();
    let r = s.gql(None, &format!("{{ {wide} }}"), json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    s.stop();
}

const HEAD: &str = "{ headPosition }";

/// The ids agentlog derives for its reactions are marked (`~`): no user may create one, so none
/// can be taken before the reaction needs it, and the reaction happens.
async fn another_user_cannot_take_the_ids_the_server_derives(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let mallory = s.user_token("mallory").await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Deploy."});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    let failure_brief = agentlog_domain::signal::policy::brief_id_for("topic-failed", "tp1:run1");
    assert!(failure_brief.starts_with('~'), "{failure_brief}");

    let head = s.data(Some(&s.admin_token), HEAD, json!({})).await["headPosition"].clone();
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    let op = |id: &str| json!({"i": {"operationId": id, "kind": "TASK", "agentId": "inbox"}});
    let brief =
        json!({"i": {"briefId": failure_brief, "type": "result", "title": "fine", "summary": "nothing to see"}});
    let emit = "mutation($id: String!, $t: String!) { emitSourceEvent(sourceId: $id, sourceType: $t, payload: {}, timestampMs: 1700000000000) { accepted } }";
    let squats = [
        // a cron fire's run, a heartbeat or schedule run, a group member's run
        (start, op("~op-cron-0190d0c0-0000-7000-8000-000000000000")),
        (start, op("~op-0190d0c0-0000-7000-8000-000000000000")),
        ("mutation { runTask(id: \"t1\", topicId: \"~topic-1\", operationId: \"~op-1\") { position } }", json!({})),
        ("mutation { startGroupRun(groupId: \"g1\", operationId: \"~op-2\") { position } }", json!({})),
        // the error brief alice's failed run will get
        ("mutation($i: JSON!) { createBrief(input: $i) { position } }", brief),
        // the notices agentlog sends itself: cron fired and exhausted, a lease expired
        (emit, json!({"id": "~cron-fired:j1:1", "t": "agent.user.message"})),
        (emit, json!({"id": "~cron-exhausted:j1:1", "t": "agent.user.message"})),
        (emit, json!({"id": "~lease-expired:run1:1700000000000", "t": "agent.user.message"})),
        // a run's topic
        ("mutation { createConversation(topicId: \"~topic-1\") { position } }", json!({})),
    ];
    for (query, vars) in squats {
        for token in [&mallory, &s.admin_token] {
            let r = s.gql(Some(token), query, vars.clone()).await;
            let code = error_code(&r);
            assert!(matches!(code.as_deref(), Some("VALIDATION" | "NOT_FOUND")), "{query} {vars}: {r}");
            if code.as_deref() == Some("VALIDATION") {
                assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains('~')), "{r}");
            }
        }
    }
    // mallory's own task: the run ids are refused on their own, not because the task is missing
    let task = json!({"taskId": "m1", "identifier": "M-1", "instruction": "Squat."});
    let mine =
        s.data(Some(&mallory), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    let r = s
        .gql(
            Some(&mallory),
            "mutation { runTask(id: \"m1\", topicId: \"tp\", operationId: \"~op-1\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    // and mallory's own group: a supervisor run under a marked id is refused the same way
    let sup = json!({"i": {"agentId": "msup", "config": {"slug": "msup", "title": "msup"}}});
    s.data(Some(&mallory), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", sup).await;
    let members = json!([{"agentId": "msup", "role": "supervisor", "enabled": true, "order": 0}]);
    let group = s
        .data(
            Some(&mallory),
            "mutation($m: JSON) { createGroup(id: \"mg\", title: \"squat\", config: {maxRounds: 2}, members: $m) { position } }",
            json!({"m": members}),
        )
        .await;
    let r = s
        .gql(
            Some(&mallory),
            "mutation { startGroupRun(groupId: \"mg\", operationId: \"~op-2\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let after = s.data(Some(&s.admin_token), HEAD, json!({})).await["headPosition"].as_i64().unwrap_or_default();
    let before = head.as_i64().unwrap_or_default();
    assert_eq!(
        after,
        group["createGroup"]["position"].as_i64().unwrap_or_default(),
        "only mallory's own objects were written"
    );
    assert!(mine["createTask"]["position"].as_i64().is_some_and(|p| p > before));
    assert!(after > before);

    // alice's run fails: her urgent error brief is the derived one, whatever mallory tried
    s.data(
        Some(&alice),
        "mutation { runTask(id: \"t1\", topicId: \"tp1\", operationId: \"run1\") { position } }",
        json!({}),
    )
    .await;
    let lease = s
        .data(
            Some(&alice),
            "mutation { claimOperation(id: \"run1\", workerId: \"w1\") { lease { token } } }",
            json!({}),
        )
        .await["claimOperation"]["lease"]["token"]
        .clone();
    s.data(
        Some(&alice),
        "mutation($l: String!) { failOperation(id: \"run1\", leaseToken: $l, message: \"refused\") { position } }",
        json!({"l": lease}),
    )
    .await;
    let q = format!("{{ brief(id: \"{failure_brief}\") {{ priority taskId }} }}");
    let mut d = Value::Null;
    for _ in 0..300 {
        let r = s.gql(Some(&alice), &q, json!({})).await;
        if r["errors"].is_null() {
            d = r["data"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(d["brief"]["priority"], "urgent", "{d}");
    assert_eq!(d["brief"]["taskId"], "t1", "{d}");
    s.stop();
}

const ALICE_TASK: &str = "{ task(id: \"t1\") { topics { edges { node { topicId operationId status trigger } } } } }";

/// The operation ids of task t1's runs.
fn runs(d: &Value) -> Vec<String> {
    d["task"]["topics"]["edges"]
        .as_array()
        .map(|e| e.iter().filter_map(|n| n["node"]["operationId"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The scheduler skips a heartbeat task while one of its owner's urgent briefs waits on a
/// human: a brief of another user's naming the task does not count.
async fn another_users_brief_does_not_stop_a_heartbeat(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let mallory = s.user_token("mallory").await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Write the report.",
        "automationMode": "heartbeat", "heartbeat": {"intervalSecs": 1}, "maxTopics": 3});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    let brief = json!({"briefId": "wait", "type": "decision", "priority": "urgent", "title": "wait",
        "summary": "a human is waiting", "taskId": "t1"});
    s.data(Some(&mallory), "mutation($i: JSON!) { createBrief(input: $i) { position } }", json!({"i": brief})).await;
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t1\", status: \"scheduled\") { position } }", json!({}))
        .await;
    let d = s.eventually(&alice, ALICE_TASK, |d| !runs(d).is_empty()).await;
    assert_eq!(runs(&d).len(), 1, "alice's heartbeat ran: {d}");
    // The run's topic (an id only agentlog may create) is a conversation of alice's, open for
    // the run's worker to write to.
    let topic = d["task"]["topics"]["edges"][0]["node"]["topicId"].as_str().unwrap_or_default().to_string();
    assert!(topic.starts_with('~'), "{d}");
    let message = json!({"messageId": "m1", "role": "assistant", "content": "working on it"});
    s.data(
        Some(&alice),
        "mutation($t: String!, $m: JSON!) { appendMessage(topicId: $t, message: $m) { position } }",
        json!({"t": topic, "m": message}),
    )
    .await;
    let r = s
        .gql(Some(&mallory), "query($t: String!) { conversation(topicId: $t) { topicId } }", json!({"t": topic}))
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    s.stop();
}

/// A run the scheduler starts for a user runs that user's agent or none: another user's agent
/// of the id the task names is not found (the run is skipped), not borrowed.
async fn a_scheduled_run_never_borrows_another_users_agent(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let mallory = s.user_token("mallory").await;
    let agent = json!({"i": {"agentId": "helper", "config": {"slug": "helper", "title": "helper", "model": "mallorys-model", "provider": "p"}}});
    s.data(Some(&mallory), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", agent).await;
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "Write.", "assigneeAgentId": "helper",
        "automationMode": "heartbeat", "heartbeat": {"intervalSecs": 1}, "maxTopics": 3});
    s.data(Some(&alice), "mutation($i: JSON!) { createTask(input: $i) { position } }", json!({"i": task})).await;
    s.data(Some(&alice), "mutation { changeTaskStatus(id: \"t1\", status: \"scheduled\") { position } }", json!({}))
        .await;
    // Several scheduler passes (one a second).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let d = s.data(Some(&alice), ALICE_TASK, json!({})).await;
    assert!(runs(&d).is_empty(), "a run with mallory's agent: {d}");
    let ops = s
        .data(Some(&s.admin_token), "{ operations(first: 50) { edges { node { id agentId model } } } }", json!({}))
        .await;
    assert_eq!(ops["operations"]["edges"].as_array().map(Vec::len), Some(0), "{ops}");
    // The same rule for a manual run by an admin on alice's behalf (naming her task's owner).
    let r = s
        .gql(
            Some(&s.admin_token),
            "mutation { runTask(id: \"t1\", topicId: \"tp\", operationId: \"op\", ownerId: \"alice\") { position } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("agent helper not found")), "{r}");
    s.stop();
}

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";

fn aliased(n: usize, field: &str) -> String {
    let fields: String = (0..n).map(|i| format!("a{i}: {field} ")).collect();
    format!("{{ {fields} }}")
}

/// Fields that read the log, replay a stream or parse a tree are priced for their work: the
/// aliased floods that took seconds and gigabytes are refused before they run, while one such
/// field answers.
async fn expensive_fields_are_priced_for_their_work(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), START, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "inbox"}})).await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let floods = [
        aliased(650, "operation(id: \"op1\") { stateAt(position: 1) { status } }"),
        aliased(300, "operation(id: \"op1\") { history(first: 500) { position eventType payload } }"),
        aliased(300, "chain(rootSourceId: \"0190d0c0-0000-7000-8000-000000000000\", first: 500) { position payload }"),
        aliased(300, "events(first: 500) { edges { node { position payload } } }"),
        aliased(25, "conversation(topicId: \"c1\") { tree { contextTree } }"),
        aliased(25, "conversation(topicId: \"c1\") { flatList }"),
        aliased(25, "analytics { total { runs } }"),
    ];
    for q in &floods {
        let (took, r) = timed(&s, Some(&alice), q).await;
        assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{}: {r}", &q[..80]);
        assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("complex")), "{r}");
        assert!(took < Duration::from_secs(1), "refused after {took:?}");
    }
    // One of each still answers.
    for q in [
        "{ operation(id: \"op1\") { stateAt(position: 1) { status } history(first: 500) { position } } }",
        "{ events(first: 500) { edges { node { position eventType } } } }",
        "{ conversation(topicId: \"c1\") { flatList } }",
    ] {
        s.data(Some(&alice), q, json!({})).await;
    }
    s.stop();
}

/// Every field of `type_name` with no arguments whose value is a scalar or an enum (a row's
/// plain fields), from introspection, but `skip`.
async fn plain_fields(s: &Server, token: &str, type_name: &str, skip: &[&str]) -> String {
    let q = format!(
        "{{ __type(name: \"{type_name}\") {{ fields {{ name args {{ name }} type {{ kind ofType {{ kind ofType {{ kind ofType {{ kind }} }} }} }} }} }} }}"
    );
    let r = s.data(Some(token), &q, json!({})).await;
    let leaf = |t: &Value| {
        let mut t = t;
        while matches!(t["kind"].as_str(), Some("NON_NULL" | "LIST")) {
            t = &t["ofType"];
        }
        matches!(t["kind"].as_str(), Some("SCALAR" | "ENUM"))
    };
    let fields: Vec<&str> = r["__type"]["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter(|f| f["args"].as_array().is_some_and(Vec::is_empty) && leaf(&f["type"]))
        .filter_map(|f| f["name"].as_str())
        .filter(|n| !skip.contains(n))
        .collect();
    assert!(fields.len() > 20, "{type_name}: {fields:?}");
    fields.join(" ")
}

/// A page pays for what each of its rows reads again (a nested page, a log read, a replay, a
/// parsed tree, a budget's history): a page of 500 rows each replaying its run is refused
/// before it runs, as 500 aliased replays are, while a page of 500 rows of every plain field,
/// or a small page that reads under each row, answers.
async fn pages_pay_for_what_their_rows_read(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), START, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "inbox"}})).await;
    let floods = [
        "{ operations(first: 500) { nodes { stateAt(position: 1) { status } } } }".to_string(),
        "{ operations(first: 500) { nodes { children(first: 500) { nodes { id } } } } }".to_string(),
        "{ operations(first: 500) { nodes { history(first: 1) { position } } } }".to_string(),
        "{ operations(first: 500) { nodes { asyncResults } } }".to_string(),
        "{ operations(first: 500) { nodes { childIds } } }".to_string(),
        "{ operations(last: 500) { nodes { origin { path { position } } } } }".to_string(),
        "{ conversations(first: 500) { nodes { tree { contextTree } } } }".to_string(),
        "{ tasks(first: 500) { nodes { layers { layers } } } }".to_string(),
        "{ tasks(first: 100) { nodes { subtasks(first: 100) { nodes { subtasks(first: 100) { nodes { taskId } } } } } } }"
            .to_string(),
        "{ budgets { nodes { history(from: \"2026-01-01T00:00:00Z\") { costMicros } } } }".to_string(),
        aliased(25, "operation(id: \"op1\") { asyncResults }"),
        aliased(25, "budget(id: \"b\") { history(from: \"2026-01-01T00:00:00Z\") { costMicros } }"),
    ];
    for q in &floods {
        let (took, r) = timed(&s, Some(&alice), q).await;
        assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{}: {r}", &q[..q.len().min(100)]);
        assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("complex")), "{r}");
        assert!(took < Duration::from_secs(1), "refused after {took:?}");
    }
    // A row's plain fields come with its page, however many are selected.
    for (list, node, skip) in [
        ("operations", "Operation", &["asyncResults", "childIds"][..]),
        ("tasks", "Task", &[][..]),
        ("briefs", "Brief", &[][..]),
    ] {
        let fields = plain_fields(&s, &alice, node, skip).await;
        let q = format!("{{ {list}(first: 500) {{ nodes {{ {fields} }} pageInfo {{ hasNextPage }} }} }}");
        let r = s.gql(Some(&alice), &q, json!({})).await;
        assert!(r.get("errors").is_none(), "{list}: {r}");
    }
    // A small page that reads under each row still answers.
    let r = s
        .data(
            Some(&alice),
            "{ operations(first: 10) { nodes { id stateAt(position: 1) { status } children(first: 10) { nodes { id } } history(first: 5) { position } } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["operations"]["nodes"][0]["id"], "op1", "{r}");
    // An origin's creating event is one read per row; its path, the chain's read, is priced.
    let inbox = "{ briefs(first: 500) { nodes { briefId origin { event { rootSourceId } } } } \
                 notifications(first: 500) { nodes { notificationId origin { event { rootSourceId } } } } }";
    s.data(Some(&alice), inbox, json!({})).await;
    s.stop();
}

/// Input the server would otherwise take and act on wrongly is refused (VALIDATION) and writes
/// nothing: a cron job's misspelled field (it would fire without the limit), a streamed
/// message's id too long to relay, a budget history over more than 1,000 periods (it would read
/// every step of the range first).
async fn misspelled_or_oversized_input_is_refused_and_writes_nothing(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let head = |d: &Value| d["events"]["pageInfo"]["endCursor"].clone();
    let log = "{ events(last: 1) { pageInfo { endCursor } } }";
    let create = "mutation($i: JSON!) { createCronJob(input: $i) { position } }";
    let job = json!({"jobId": "j1", "agentId": "inbox", "pattern": "* * * * *", "timezone": "UTC", "content": "tick", "enabled": true});
    let mut misspelled = job.clone();
    misspelled["maxExecution"] = json!(3);
    let before = head(&s.data(Some(&alice), log, json!({})).await);
    let r = s.gql(Some(&alice), create, json!({"i": misspelled})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    assert!(r.to_string().contains("maxExecution"), "names the field: {r}");
    let r = s.gql(Some(&alice), "{ cronJob(id: \"j1\") { jobId } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    assert_eq!(head(&s.data(Some(&alice), log, json!({})).await), before, "nothing written");
    s.data(Some(&alice), create, json!({"i": job})).await;
    let update = "mutation($p: JSON!) { updateCronJob(id: \"j1\", patch: $p) { position } }";
    let written = head(&s.data(Some(&alice), log, json!({})).await);
    assert_ne!(written, before);
    let r = s.gql(Some(&alice), update, json!({"p": {"contnet": "typo"}})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    // Content each fire copies into a run must leave the run room in one event.
    let r = s.gql(Some(&alice), update, json!({"p": {"content": "x".repeat(300 * 1024)}})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    let mut large = job.clone();
    large["jobId"] = json!("j2");
    large["content"] = json!("x".repeat(300 * 1024));
    let r = s.gql(Some(&alice), create, json!({"i": large})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    assert_eq!(head(&s.data(Some(&alice), log, json!({})).await), written, "nothing written");

    s.data(Some(&alice), "mutation { createConversation(topicId: \"c\") { position } }", json!({})).await;
    let delta = "mutation($m: String!) { publishMessageDelta(topicId: \"c\", messageId: $m, delta: \"x\") }";
    let r = s.gql(Some(&alice), delta, json!({"m": "m".repeat(9_000)})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    assert_eq!(s.data(Some(&alice), delta, json!({"m": "m1"})).await["publishMessageDelta"], 1);

    let set = "mutation($i: BudgetInput!) { setBudget(input: $i) { position } }";
    s.data(Some(&alice), set, json!({"i": {"id": "d", "scope": "USER", "period": "DAY", "limitCostMicros": 1}})).await;
    s.data(Some(&alice), set, json!({"i": {"id": "m", "scope": "USER", "period": "MONTH", "limitCostMicros": 1}}))
        .await;
    let history = "query($id: String!, $from: DateTime!) { budget(id: $id) { history(from: $from) { costMicros } } }";
    let from = |days: i64| (chrono::Utc::now() - chrono::Duration::days(days)).to_rfc3339();
    let r = s.gql(Some(&alice), history, json!({"id": "d", "from": from(1_001)})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    s.data(Some(&alice), history, json!({"id": "d", "from": from(999)})).await;
    s.data(Some(&alice), history, json!({"id": "m", "from": from(20 * 365)})).await;
    let r = s.gql(Some(&alice), history, json!({"id": "m", "from": from(90 * 365)})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");

    // Every `JSON` input in a shape of its own names the key it does not read, at any depth it
    // knows, and writes nothing; a message keeps upstream's other fields out without a word.
    let before = head(&s.data(Some(&alice), log, json!({})).await);
    let task = json!({"taskId": "t1", "identifier": "T-1", "instruction": "do"});
    let agent = json!({"agentId": "a1", "config": {"slug": "a1", "title": "A"}});
    let brief = json!({"briefId": "b1", "type": "decision", "title": "Pick", "summary": "A or B"});
    let with = |base: &Value, path: &[&str], value: Value| {
        let mut v = base.clone();
        let mut at = &mut v;
        for key in &path[..path.len() - 1] {
            at = &mut at[*key];
        }
        at[path[path.len() - 1]] = value;
        v
    };
    let create_task = "mutation($i: JSON!) { createTask(input: $i) { position } }";
    let register = "mutation($i: JSON!) { registerAgent(input: $i) { position } }";
    let create_brief = "mutation($i: JSON!) { createBrief(input: $i) { position } }";
    for (mutation, input, named) in [
        (create_task, with(&task, &["asigneeAgentId"], json!("a1")), "input.asigneeAgentId"),
        (
            create_task,
            with(&task, &["schedule"], json!({"pattern": "0 9 * * *", "timeZone": "UTC"})),
            "input.schedule.timeZone",
        ),
        (create_task, with(&task, &["heartbeat"], json!({"intervalSec": 60})), "input.heartbeat.intervalSec"),
        (create_task, with(&task, &["config"], json!({"modle": "m"})), "input.config.modle"),
        (register, with(&agent, &["config", "systemPrompt"], json!("be brief")), "input.config.systemPrompt"),
        (register, with(&agent, &["agentID"], json!("a2")), "input.agentID"),
        (create_brief, with(&brief, &["priorty"], json!("urgent")), "input.priorty"),
        (
            create_brief,
            with(&brief, &["actions"], json!([{"key": "ok", "label": "OK", "typ": "resolve"}])),
            "input.actions.typ",
        ),
    ] {
        let r = s.gql(Some(&alice), mutation, json!({"i": input})).await;
        assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
        assert!(r.to_string().contains(named), "names {named}: {r}");
    }
    assert_eq!(head(&s.data(Some(&alice), log, json!({})).await), before, "nothing written");
    s.data(Some(&alice), create_task, json!({"i": task})).await;
    s.data(Some(&alice), register, json!({"i": agent})).await;
    for (mutation, named) in [
        ("mutation { updateTask(id: \"t1\", patch: {instructions: \"x\"}) { position } }", "patch.instructions"),
        ("mutation { updateAgentConfig(id: \"a1\", patch: {tittle: \"x\"}) { position } }", "patch.tittle"),
    ] {
        let r = s.gql(Some(&alice), mutation, json!({})).await;
        assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
        assert!(r.to_string().contains(named), "names {named}: {r}");
    }
    let message = json!({"messageId": "m1", "role": "user", "content": "hi", "createdAt": 1, "updatedAt": 2});
    s.data(
        Some(&alice),
        "mutation($m: JSON!) { appendMessage(topicId: \"c\", message: $m) { position } }",
        json!({"m": message}),
    )
    .await;
    s.stop();
}

/// An answer over `--max-response-bytes` is replaced by LIMIT; a query past
/// `--query-timeout-ms` is stopped and answered with LIMIT, and mutations are never cut off.
async fn answers_are_bounded_in_size_and_queries_in_time(db: Db) {
    let s = Server::start_with(db, &["--max-response-bytes", "4096"]).await;
    let alice = s.user_token("alice").await;
    for i in 0..20 {
        let id = format!("op{i}");
        s.data(Some(&alice), START, json!({"i": {"operationId": id, "kind": "TASK", "agentId": "inbox"}})).await;
    }
    let r =
        s.gql(Some(&alice), "{ events(first: 100) { edges { node { position payload metadata } } } }", json!({})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("4096")), "{r}");
    s.data(Some(&alice), "{ events(first: 2) { edges { node { position } } } }", json!({})).await;
    let alice_token = alice.clone();
    let db = s.stop();

    // The same database (and alice's token), another server with a 1 ms query timeout.
    let s = Server::start_with(db, &["--query-timeout-ms", "1"]).await;
    let alice = alice_token;
    s.data(Some(&alice), START, json!({"i": {"operationId": "slow", "kind": "TASK", "agentId": "inbox"}})).await;
    let lease = s
        .data(
            Some(&alice),
            "mutation { claimOperation(id: \"slow\", workerId: \"w1\") { lease { token } } }",
            json!({}),
        )
        .await["claimOperation"]["lease"]["token"]
        .clone();
    let step = "mutation($l: String!) { reportStep(id: \"slow\", leaseToken: $l, phase: ACTING, toolCalls: [{id: \"c1\", name: \"search\"}]) { position } }";
    for _ in 0..200 {
        s.data(Some(&alice), step, json!({"l": lease})).await;
    }
    // Within the cost limits, but many milliseconds of reading and folding.
    let slow = format!(
        "{{ {} {} }}",
        (0..5)
            .map(|i| format!("e{i}: events(first: 500) {{ edges {{ node {{ payload metadata }} }} }} "))
            .collect::<String>(),
        (0..6)
            .map(|i| format!("s{i}: operation(id: \"slow\") {{ stateAt(position: 100) {{ status }} }} "))
            .collect::<String>()
    );
    // The timer is checked only while the query waits (and in ticks of 1 ms): on a quiet machine
    // one run can finish inside the first tick. Any run that is not stopped must be whole.
    let mut stopped = None;
    for _ in 0..10 {
        let r = s.gql(Some(&alice), &slow, json!({})).await;
        match error_code(&r).as_deref() {
            Some("LIMIT") => {
                stopped = Some(r);
                break;
            }
            None => assert!(r["data"]["s0"]["stateAt"]["status"] == "running", "{r}"),
            Some(code) => panic!("the slow query answered {code}: {r}"),
        }
    }
    let r = stopped.expect("the 1 ms query timeout stopped the slow query at least once in 10 runs");
    assert!(r["errors"][0]["message"].as_str().is_some_and(|m| m.contains("ran longer than 1 ms")), "{r}");
    // A mutation is not a query: it runs to its end.
    s.data(Some(&alice), START, json!({"i": {"operationId": "late", "kind": "TASK", "agentId": "inbox"}})).await;
    s.stop();
}

/// Open a websocket and send `connection_init` with `token`: the first answer, or None when the
/// server closed the socket.
async fn ws_init(s: &Server, token: &str) -> (Option<Value>, WsSocket) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};
    let url = s.base.replace("http://", "ws://") + "/graphql";
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.expect("websocket connect");
    let init = json!({"type": "connection_init", "payload": {"authorization": format!("Bearer {token}")}});
    socket.send(Message::text(init.to_string())).await.expect("init");
    let first = match tokio::time::timeout(Duration::from_secs(10), socket.next()).await {
        Ok(Some(Ok(Message::Text(t)))) => serde_json::from_str(t.as_str()).ok(),
        _ => None,
    };
    (first, socket)
}

type WsSocket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One user at their caps (subscriptions, streamed messages, websocket connections) is refused
/// with LIMIT; another user subscribes, streams and connects as before.
async fn one_user_at_a_cap_leaves_others_theirs(db: Db) {
    let s = Server::start_with(
        db,
        &["--max-subscriptions-per-user", "3", "--max-streams-per-user", "2", "--max-connections-per-user", "2"],
    )
    .await;
    let alice = s.user_token("alice").await;
    let mallory = s.user_token("mallory").await;

    // connections: two, then refused
    let (a, _c1) = ws_init(&s, &mallory).await;
    assert_eq!(a.as_ref().map(|v| v["type"].clone()), Some(json!("connection_ack")), "{a:?}");
    let mut ws = Ws::connect(&s, &mallory, "graphql-transport-ws").await;
    let (third, _c3) = ws_init(&s, &mallory).await;
    assert!(third.as_ref().is_none_or(|v| v["type"] != "connection_ack"), "a third connection: {third:?}");

    // subscriptions: three, then LIMIT
    for i in 0..4 {
        ws.subscribe(&format!("s{i}"), "subscription { events { position } }", json!({})).await;
    }
    let refused = ws.next_json().await.expect("an answer");
    let text = refused.to_string();
    assert!(text.contains("LIMIT") && text.contains("3 subscriptions"), "{refused}");

    // streamed messages: two, then LIMIT
    s.data(Some(&mallory), "mutation { createConversation(topicId: \"m\") { position } }", json!({})).await;
    let delta = "mutation($t: String!, $m: String!) { publishMessageDelta(topicId: $t, messageId: $m, delta: \"x\") }";
    for m in ["x1", "x2"] {
        s.data(Some(&mallory), delta, json!({"t": "m", "m": m})).await;
    }
    let r = s.gql(Some(&mallory), delta, json!({"t": "m", "m": "x3"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");

    // alice: her own connection, subscription and stream
    s.data(Some(&alice), "mutation { createConversation(topicId: \"a\") { position } }", json!({})).await;
    let mut mine = Ws::connect(&s, &alice, "graphql-transport-ws").await;
    mine.subscribe("a1", "subscription { events(fromPosition: 0) { position } }", json!({})).await;
    let first = mine.next_data().await;
    assert!(first["data"]["events"]["position"].as_i64().is_some(), "{first}");
    assert_eq!(s.data(Some(&alice), delta, json!({"t": "a", "m": "y1"})).await["publishMessageDelta"], 1);
    s.stop();
}

/// `agentlog serve` on `db` with `data_dir`, listening on `bind`, expected to fail at start: its log.
fn failed_start(db: &Db, data_dir: &std::path::Path, bind: &str) -> String {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["serve", "--bind", bind, "--database", &db.url(), "--data-dir"])
        .arg(data_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentlog");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the server started with data directory {}", data_dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut log).expect("read the log");
    assert!(!status.success(), "{log}");
    log
}

/// A first start that cannot write its admin token leaves no admin token behind (one whose
/// secret no one holds would stop every later start from writing one), and a data directory
/// that does not exist yet is made.
async fn the_first_admin_token_is_written_or_not_created(db: Db) {
    let root = std::env::temp_dir().join(format!("agentlog-first-admin-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&root).expect("root");
    // The directory cannot be made: a file where its parent should be.
    std::fs::write(root.join("file"), "x").expect("file");
    let log = failed_start(&db, &root.join("file").join("data"), "127.0.0.1:0");
    assert!(log.contains("creating"), "{log}");
    // The secret cannot be written: a directory where the token's file goes.
    let blocked = root.join("blocked");
    std::fs::create_dir_all(blocked.join("agentlog-admin-token").join("in-the-way")).expect("blocking dir");
    let log = failed_start(&db, &blocked, "127.0.0.1:0");
    assert!(log.contains("writing"), "{log}");
    // A directory two levels from any that exists: made, and the token is in it.
    let fresh = root.join("new").join("data");
    let s = Server::start_in(db, fresh.clone()).await;
    assert!(!s.admin_token.is_empty(), "no admin token written: the failed starts left one behind");
    #[cfg(unix)]
    assert_eq!(mode(&fresh.join("agentlog-admin-token")), 0o600);
    let d = s.data(Some(&s.admin_token), "{ tokens { userId role } }", json!({})).await;
    assert_eq!(d["tokens"], json!([{"userId": "admin", "role": "admin"}]), "{d}");
    drop(s);
    let _ = std::fs::remove_dir_all(&root);
}

/// A start that cannot listen (its port taken) writes nothing: no database, no data
/// directory, no admin token.
async fn a_start_that_cannot_listen_writes_nothing(db: Db) {
    let holder = Server::start(Db::sqlite()).await;
    let taken = holder.base.trim_start_matches("http://").to_string();
    let dir = std::env::temp_dir().join(format!("agentlog-no-listen-{}", uuid::Uuid::now_v7().simple()));
    let log = failed_start(&db, &dir, &taken);
    assert!(log.contains("binding"), "{log}");
    assert!(!dir.exists(), "the data directory was made");
    match &db {
        Db::Sqlite(file) => assert!(!file.path.exists(), "the database file was made"),
        Db::Postgres(pg) => assert_eq!(pg.table_count().await.expect("count tables"), 0, "the database was migrated"),
        Db::Shared(_) => unreachable!("a fresh database"),
    }
    drop(holder);
}

/// A database URL's password, in its authority or as a `password=` parameter, never reaches
/// the log or an error message, whichever command failed to open it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_passwords_stay_out_of_messages() {
    let url = "postgres://agentlog:hunter2@127.0.0.1:1/x?sslmode=disable&password=hunter3";
    let dir = std::env::temp_dir().join(format!("agentlog-redact-{}", uuid::Uuid::now_v7().simple()));
    for args in [
        vec!["serve", "--bind", "127.0.0.1:0", "--data-dir", dir.to_str().expect("a UTF-8 path"), "--database", url],
        vec!["token", "list", "--database", url],
        vec!["token", "create", "--user", "u", "--database", url],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
            .args(&args)
            .env("AGENTLOG_LOG", "debug")
            .output()
            .expect("run agentlog");
        let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{args:?}: {log}");
        assert!(!log.contains("hunter"), "{args:?} showed a password: {log}");
        assert!(log.contains("postgres://agentlog:***@127.0.0.1:1/x?sslmode=disable&password=***"), "{args:?}: {log}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `/metrics` carries users' agent ids and models in its labels: without a token it answers
/// 401 and shows nothing, a user's token gets 403, an admin token or the `--metrics-token`
/// secret reads it. A metrics token too short to be a secret stops the start.
async fn metrics_are_read_by_an_admin_or_the_metrics_token(db: Db) {
    let secret = "scraper-secret-0123456789";
    let s = Server::start_with(db, &["--metrics-token", secret]).await;
    let alice = s.user_token("alice").await;
    let agent = json!({"agentId": "secret-agent", "config": {"slug": "s", "title": "S", "model": "private-model", "provider": "p"}});
    s.data(Some(&alice), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": agent})).await;
    let client = reqwest::Client::new();
    let get = |bearer: Option<&str>| {
        let mut request = client.get(format!("{}/metrics", s.base));
        if let Some(b) = bearer {
            request = request.bearer_auth(b);
        }
        async move {
            let resp = request.send().await.expect("request");
            (resp.status().as_u16(), resp.text().await.unwrap_or_default())
        }
    };
    for (bearer, status, code) in [
        (None, 401, "UNAUTHENTICATED"),
        (Some("al_not-a-token"), 401, "UNAUTHENTICATED"),
        (Some("scraper-secret-012345678"), 401, "UNAUTHENTICATED"),
        (Some(alice.as_str()), 403, "FORBIDDEN"),
    ] {
        let (got, body) = get(bearer).await;
        assert_eq!(got, status, "{bearer:?}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body).expect("a JSON error answer");
        assert_eq!(error_code(&answer).as_deref(), Some(code), "{body}");
        assert!(!body.contains("agentlog_"), "{bearer:?} read metrics: {body}");
    }
    for bearer in [secret, s.admin_token.as_str()] {
        let (got, body) = get(Some(bearer)).await;
        assert_eq!(got, 200, "{body}");
        assert!(body.contains("agentlog_http_requests_total"), "{body}");
    }
    s.stop();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentlog"))
        .args(["serve", "--bind", "127.0.0.1:0", "--database", "sqlite::memory:", "--metrics-token", "short"])
        .output()
        .expect("run agentlog");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metrics-token must be at least 16 characters"));
}

both!(
    a_start_that_cannot_listen_writes_nothing as a_start_that_cannot_listen_writes_nothing,
    the_first_admin_token_is_written_or_not_created as the_first_admin_token_is_written_or_not_created,
    expensive_fields_are_priced_for_their_work as expensive_fields_are_priced_for_their_work,
    pages_pay_for_what_their_rows_read as pages_pay_for_what_their_rows_read,
    misspelled_or_oversized_input_is_refused_and_writes_nothing
        as misspelled_or_oversized_input_is_refused_and_writes_nothing,
    answers_are_bounded_in_size_and_queries_in_time as answers_are_bounded_in_size_and_queries_in_time,
    one_user_at_a_cap_leaves_others_theirs as one_user_at_a_cap_leaves_others_theirs,
    metrics_are_read_by_an_admin_or_the_metrics_token as metrics_are_read_by_an_admin_or_the_metrics_token,
    another_users_brief_does_not_stop_a_heartbeat as another_users_brief_does_not_stop_a_heartbeat,
    a_scheduled_run_never_borrows_another_users_agent as a_scheduled_run_never_borrows_another_users_agent,
    another_user_cannot_take_the_ids_the_server_derives as another_user_cannot_take_the_ids_the_server_derives,
    a_fragment_bomb_is_refused_at_once_and_costs_no_memory as a_fragment_bomb_is_refused_at_once_and_costs_no_memory,
    only_introspection_is_answered_without_a_token as only_introspection_is_answered_without_a_token
);

/// The mode bits of `path` (not following a symlink).
#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0)
}

/// The admin token is written 0600 through no symlink, whatever was at its path; a new SQLite
/// log and its WAL files are 0600. SQLite only: PostgreSQL's files are its server's.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_and_the_log_are_private_files() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::env::temp_dir().join(format!("agentlog-files-{}", uuid::Uuid::now_v7().simple()));
    let (data, outside) = (root.join("data"), root.join("outside"));
    std::fs::create_dir_all(&data).expect("data dir");
    std::fs::create_dir_all(&outside).expect("outside dir");
    // A symlink planted where the token goes, pointing out of the data directory.
    let planted = outside.join("stolen");
    std::os::unix::fs::symlink(&planted, data.join("agentlog-admin-token")).expect("symlink");
    let db_path = data.join("log.db");
    let s = Server::start_in(Db::Shared(format!("sqlite:{}", db_path.display())), data.clone()).await;
    let token = data.join("agentlog-admin-token");
    assert!(!planted.exists(), "the token was written through the symlink");
    assert!(std::fs::symlink_metadata(&token).is_ok_and(|m| m.file_type().is_file()), "not a plain file");
    assert_eq!(mode(&token), 0o600);
    assert!(!s.admin_token.is_empty());
    s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await;
    for f in ["log.db", "log.db-wal", "log.db-shm"] {
        assert_eq!(mode(&data.join(f)), 0o600, "{f}");
    }
    let mut s = s;
    s.kill();

    // A token file left world-readable: the next one written is 0600.
    let data2 = root.join("data2");
    std::fs::create_dir_all(&data2).expect("data dir");
    std::fs::write(data2.join("agentlog-admin-token"), "old\n").expect("old token");
    std::fs::set_permissions(data2.join("agentlog-admin-token"), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let s = Server::start_in(Db::sqlite(), data2.clone()).await;
    assert_eq!(mode(&data2.join("agentlog-admin-token")), 0o600);
    assert_ne!(s.admin_token, "old");
    s.data(Some(&s.admin_token), "{ headPosition }", json!({})).await;
    drop(s);
    let _ = std::fs::remove_dir_all(&root);
}
