//! Only the lease holder reports: `claimOperation` answers a lease token, and every worker
//! report on a claimed run without it (empty, wrong, replaced or expired) is refused with
//! CONFLICT and writes nothing.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server, Ws, error_code};

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const CLAIM: &str = "mutation($id: String!, $w: String!, $s: Int) { claimOperation(id: $id, workerId: $w, leaseSecs: $s) { position operation { status leaseWorkerId leaseExpiresAt } lease { token workerId expiresAt } } }";

async fn register_agent(s: &Server, token: &str) {
    let input = json!({"agentId": "a1", "config": {"slug": "a1", "title": "Helper", "model": "m1", "provider": "p1"}});
    s.data(Some(token), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": input})).await;
}

/// The run's stream length: what a refused report must leave as it was.
async fn events_of(s: &Server, token: &str, id: &str) -> usize {
    let d = s
        .data(Some(token), "query($id: String!) { operation(id: $id) { history { eventType } } }", json!({"id": id}))
        .await;
    d["operation"]["history"].as_array().map_or(0, Vec::len)
}

/// Every report a worker makes on a claimed run, with `$lt` as its token.
fn reports() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "changePhase",
            "mutation($id: String!, $lt: String!) { changePhase(id: $id, leaseToken: $lt, phase: ACTING) { position } }",
            json!({}),
        ),
        (
            "reportStep",
            "mutation($id: String!, $lt: String!) { reportStep(id: $id, leaseToken: $lt, phase: ACTING, usage: {inputTokens: 3}) { position } }",
            json!({}),
        ),
        (
            "updatePlan",
            "mutation($id: String!, $lt: String!, $p: JSON!) { updatePlan(id: $id, leaseToken: $lt, plan: $p) { position } }",
            json!({"p": {"explanation": "two steps", "steps": [{"text": "look", "status": "in_progress"}, {"text": "answer", "status": "pending"}]}}),
        ),
        (
            "updateTodos",
            "mutation($id: String!, $lt: String!, $t: JSON!) { updateTodos(id: $id, leaseToken: $lt, todos: $t) { position } }",
            json!({"t": [{"id": "t1", "text": "read the question", "status": "completed"}]}),
        ),
        (
            "recordArtifact",
            "mutation($id: String!, $lt: String, $a: JSON!) { recordArtifact(id: $id, leaseToken: $lt, artifact: $a) { position } }",
            json!({"a": {"artifactId": "a1", "title": "report", "kind": "document", "sizeBytes": 12, "contentRef": "doc-1"}}),
        ),
        (
            "recordScore",
            "mutation($id: String!, $lt: String, $s: JSON!) { recordScore(id: $id, leaseToken: $lt, score: $s) { position } }",
            json!({"s": {"rubricId": "self-check", "score": 90, "passed": true}}),
        ),
        (
            "spawnSubagent",
            "mutation($id: String!, $lt: String) { spawnSubagent(parentOperationId: $id, leaseToken: $lt, input: {operationId: \"kid\", kind: SUBAGENT, agentId: \"a1\"}) { position } }",
            json!({}),
        ),
        (
            "renewLease",
            "mutation($id: String!, $lt: String!) { renewLease(id: $id, workerId: \"w1\", leaseToken: $lt, leaseSecs: 600) { position } }",
            json!({}),
        ),
        (
            "awaitAsync",
            "mutation($id: String!, $lt: String!) { awaitAsync(id: $id, leaseToken: $lt, keys: [\"tool-1\"]) { position } }",
            json!({}),
        ),
    ]
}

async fn only_the_lease_holder_reports(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice).await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    s.data(
        Some(&alice),
        START,
        json!({"i": {"operationId": "op1", "kind": "CONVERSATION", "agentId": "a1", "topicId": "c1"}}),
    )
    .await;

    // Two workers race; one lease, one token.
    let d = s.data(Some(&alice), CLAIM, json!({"id": "op1", "w": "w1", "s": 600})).await;
    let lease = &d["claimOperation"]["lease"];
    let token = lease["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("lt_") && token.len() > 40, "{lease}");
    assert_eq!(lease["workerId"], "w1");
    assert_eq!(lease["expiresAt"], d["claimOperation"]["operation"]["leaseExpiresAt"]);
    let r = s.gql(Some(&alice), CLAIM, json!({"id": "op1", "w": "w2"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "the race's loser: {r}");
    // The log never holds the token itself.
    let log = s.data(Some(&alice), "{ events(first: 100) { edges { node { payload metadata } } } }", json!({})).await;
    assert!(!log.to_string().contains(&token), "the token is not in the log");

    // Every report without the token (empty, guessed, another user's) is refused and writes nothing.
    for (name, query, vars) in reports() {
        for bad in ["", "lt_guess", "lt_0000000000000000000000000000000000000000000000000000000000000000"] {
            let before = events_of(&s, &alice, "op1").await;
            let mut v = vars.clone();
            v["id"] = json!("op1");
            v["lt"] = json!(bad);
            let r = s.gql(Some(&alice), query, v).await;
            assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "{name} with token {bad:?}: {r}");
            assert_eq!(events_of(&s, &alice, "op1").await, before, "{name} with token {bad:?} wrote nothing");
        }
    }
    // The optional-token reports refuse a missing token too while the run is claimed.
    for (name, query, vars) in
        reports().into_iter().filter(|(n, _, _)| ["recordArtifact", "recordScore", "spawnSubagent"].contains(n))
    {
        let mut v = vars.clone();
        v["id"] = json!("op1");
        let r = s.gql(Some(&alice), query, v).await;
        assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "{name} without a token: {r}");
    }
    // A required token left out is refused by the schema, before anything runs.
    let r = s.gql(Some(&alice), "mutation { reportStep(id: \"op1\", phase: ACTING) { position } }", json!({})).await;
    assert!(r.get("errors").is_some(), "{r}");
    // Assistant and tool messages of the run are its reports too.
    let append = "mutation($m: JSON!, $lt: String) { appendMessage(topicId: \"c1\", message: $m, leaseToken: $lt) { conversation { messageCount } } }";
    for role in ["assistant", "tool"] {
        let m = json!({"messageId": format!("m-{role}"), "role": role, "content": "x", "operationId": "op1"});
        for bad in [Value::Null, json!("lt_guess")] {
            let r = s.gql(Some(&alice), append, json!({"m": m, "lt": bad})).await;
            assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "{role} message with {bad}: {r}");
        }
    }
    let r = s
        .gql(
            Some(&alice),
            append,
            json!({"m": {"messageId": "m-x", "role": "assistant", "content": "x", "operationId": "nope"}}),
        )
        .await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "a message of an unknown run: {r}");
    let d = s.data(Some(&alice), "{ conversation(topicId: \"c1\") { messageCount } }", json!({})).await;
    assert_eq!(d["conversation"]["messageCount"], 0, "no refused message was stored");

    // Bob cannot use Alice's token (nor see her run).
    let bob = s.user_token("bob").await;
    let r = s.gql(Some(&bob), reports()[1].1, json!({"id": "op1", "lt": token})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");

    // With the token, each report is recorded, as the lease's worker.
    for (name, query, vars) in reports() {
        let mut v = vars.clone();
        v["id"] = json!("op1");
        v["lt"] = json!(token);
        let d = s.data(Some(&alice), query, v).await;
        let position = d[name]["position"].as_i64().unwrap_or(0);
        assert!(position > 0, "{name} with the token: {d}");
    }
    let d = s
        .data(
            Some(&alice),
            "{ operation(id: \"op1\") { status plan todos artifacts scores childIds history { eventType metadata } } }",
            json!({}),
        )
        .await;
    let op = &d["operation"];
    assert_eq!(op["status"], "waiting_for_async_tool", "{op}");
    assert_eq!(op["plan"]["steps"][0]["text"], "look", "{op}");
    assert_eq!(op["todos"][0]["id"], "t1", "{op}");
    assert_eq!(op["artifacts"][0]["artifactId"], "a1", "{op}");
    assert_eq!(op["scores"][0]["score"], 90, "{op}");
    assert_eq!(op["childIds"], json!(["kid"]), "{op}");
    let step = op["history"].as_array().unwrap().iter().find(|e| e["eventType"] == "operation.step_recorded").unwrap();
    assert_eq!(
        step["metadata"]["actor"],
        json!({"kind": "worker", "id": "w1"}),
        "a report is recorded as the lease's worker"
    );
    s.stop();
}

async fn a_new_claim_or_an_expiry_ends_the_old_token(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    register_agent(&s, &alice).await;
    let step =
        "mutation($id: String!, $lt: String!) { reportStep(id: $id, leaseToken: $lt, phase: ACTING) { position } }";
    s.data(Some(&alice), START, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "a1"}})).await;
    let first = s.claim(&alice, "op1", "w1").await;
    s.data(Some(&alice), step, json!({"id": "op1", "lt": first})).await;
    // The holder claims again (its answer was lost): a new token; the old one stops working.
    let second = s.claim(&alice, "op1", "w1").await;
    assert_ne!(first, second);
    let r = s.gql(Some(&alice), step, json!({"id": "op1", "lt": first})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "a replaced token: {r}");
    s.data(Some(&alice), step, json!({"id": "op1", "lt": second})).await;
    // A pause releases the lease: its token no longer reports; the resumed run is claimed anew.
    let card = json!({"cardId": "c1", "title": "Go on?", "kind": "confirm"});
    s.data(
        Some(&alice),
        "mutation($c: JSON!, $lt: String!) { askHuman(id: \"op1\", leaseToken: $lt, card: $c) { position } }",
        json!({"c": card, "lt": second}),
    )
    .await;
    s.data(Some(&alice), "mutation { answerCard(id: \"op1\", cardId: \"c1\", answer: {kind: \"confirm\", confirmed: true}) { position } }", json!({})).await;
    let r = s.gql(Some(&alice), step, json!({"id": "op1", "lt": second})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "a resumed run needs a new claim: {r}");
    let third = s.claim(&alice, "op1", "w2").await;
    s.data(Some(&alice), step, json!({"id": "op1", "lt": third})).await;

    // An expired lease's token is refused (the reaper interrupts the run).
    s.data(Some(&alice), START, json!({"i": {"operationId": "op2", "kind": "TASK", "agentId": "a1"}})).await;
    let d = s.data(Some(&alice), CLAIM, json!({"id": "op2", "w": "w1", "s": 1})).await;
    let short = d["claimOperation"]["lease"]["token"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    let before = events_of(&s, &alice, "op2").await;
    let r = s.gql(Some(&alice), step, json!({"id": "op2", "lt": short})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "an expired token: {r}");
    let complete =
        "mutation($lt: String!) { completeOperation(id: \"op2\", leaseToken: $lt, result: \"late\") { position } }";
    let r = s.gql(Some(&alice), complete, json!({"lt": short})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "an expired token: {r}");
    let after = s.data(Some(&alice), "{ operation(id: \"op2\") { status history { eventType } } }", json!({})).await;
    let types: Vec<&str> =
        after["operation"]["history"].as_array().unwrap().iter().filter_map(|e| e["eventType"].as_str()).collect();
    assert!(!types.contains(&"operation.step_recorded") && !types.contains(&"operation.completed"), "{types:?}");
    assert!(types.len() >= before, "{types:?}");
    // Leases are bounded by the domain's ceiling.
    let r = s.gql(Some(&alice), CLAIM, json!({"id": "op1", "w": "w2", "s": 3601})).await;
    assert_eq!(error_code(&r).as_deref(), Some("VALIDATION"), "{r}");
    s.stop();
}

async fn an_interrupted_run_resumes(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let status = "query($id: String!) { operation(id: $id) { status stepCount leaseWorkerId history { eventType } } }";
    let resume = "mutation($id: String!) { resumeOperation(id: $id) { operation { status stepCount leaseWorkerId completedAt } } }";
    let step =
        "mutation($id: String!, $lt: String!) { reportStep(id: $id, leaseToken: $lt, phase: ACTING) { position } }";
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    s.data(
        Some(&alice),
        START,
        json!({"i": {"operationId": "r1", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c1"}}),
    )
    .await;
    let d = s.data(Some(&alice), CLAIM, json!({"id": "r1", "w": "w1", "s": 1})).await;
    let lt = d["claimOperation"]["lease"]["token"].as_str().unwrap().to_string();
    s.data(Some(&alice), step, json!({"id": "r1", "lt": lt})).await;
    // The worker vanishes: the reaper interrupts the run.
    s.eventually(&alice, "{ operation(id: \"r1\") { status } }", |d| d["operation"]["status"] == "interrupted").await;

    let mut ws = Ws::connect(&s, &alice, "graphql-transport-ws").await;
    ws.subscribe("w", "subscription { workAvailable(agentIds: [\"inbox\"]) { id status } }", json!({})).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let d = s.data(Some(&alice), resume, json!({"id": "r1"})).await;
    let op = &d["resumeOperation"]["operation"];
    assert_eq!(op["status"], "running", "{op}");
    assert_eq!(
        (op["stepCount"].clone(), op["leaseWorkerId"].clone(), op["completedAt"].clone()),
        (json!(1), Value::Null, Value::Null),
        "history kept, no lease: {op}"
    );
    let announced = ws.next_data().await;
    assert_eq!(announced["data"]["workAvailable"]["id"], "r1", "announced as work: {announced}");
    // A resumed run is claimable again, and only once resumed.
    let r = s.gql(Some(&alice), resume, json!({"id": "r1"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "a running run does not resume: {r}");
    let lt = s.claim(&alice, "r1", "w2").await;
    s.data(Some(&alice), step, json!({"id": "r1", "lt": lt})).await;
    let d = s.data(Some(&alice), status, json!({"id": "r1"})).await;
    assert_eq!(d["operation"]["stepCount"], 2, "{d}");
    let types: Vec<&str> =
        d["operation"]["history"].as_array().unwrap().iter().filter_map(|e| e["eventType"].as_str()).collect();
    assert!(types.contains(&"operation.interrupted") && types.contains(&"operation.resumed"), "{types:?}");
    s.data(
        Some(&alice),
        "mutation($lt: String!) { completeOperation(id: \"r1\", leaseToken: $lt) { position } }",
        json!({"lt": lt}),
    )
    .await;
    let r = s.gql(Some(&alice), resume, json!({"id": "r1"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "a finished run does not resume: {r}");

    // A run stopped for good does not resume.
    s.data(Some(&alice), START, json!({"i": {"operationId": "r2", "kind": "TASK", "agentId": "inbox"}})).await;
    s.data(Some(&alice), "mutation { interruptOperation(id: \"r2\", reason: \"user stop\") { position } }", json!({}))
        .await;
    let r = s.gql(Some(&alice), resume, json!({"id": "r2"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "canResume false: {r}");
    // Nor one whose conversation started another run since.
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c2\") { position } }", json!({})).await;
    s.data(
        Some(&alice),
        START,
        json!({"i": {"operationId": "r3", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c2"}}),
    )
    .await;
    s.data(
        Some(&alice),
        "mutation { interruptOperation(id: \"r3\", reason: \"restart\", canResume: true) { position } }",
        json!({}),
    )
    .await;
    s.data(
        Some(&alice),
        START,
        json!({"i": {"operationId": "r4", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c2"}}),
    )
    .await;
    let r = s.gql(Some(&alice), resume, json!({"id": "r3"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("CONFLICT"), "the conversation moved on: {r}");
    let d = s.data(Some(&alice), status, json!({"id": "r3"})).await;
    assert_eq!(d["operation"]["status"], "interrupted");
    // Someone else's run is not found.
    let bob = s.user_token("bob").await;
    let r = s.gql(Some(&bob), resume, json!({"id": "r3"})).await;
    assert_eq!(error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    s.stop();
}

/// `workAvailable`'s backlog is the oldest claimable runs of all the named agents together, at
/// most 500, oldest first: a leased run is not offered, and past 500 the newest wait (a worker
/// that subscribes again after claiming gets them).
async fn the_backlog_is_the_oldest_claimable_runs(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let id = |i: usize| format!("r{i:03}");
    for i in 0..502 {
        let agent = if i % 2 == 0 { "inbox" } else { "task-agent" };
        s.data(Some(&alice), START, json!({"i": {"operationId": id(i), "kind": "TASK", "agentId": agent}})).await;
    }
    s.claim(&alice, "r000", "w1").await;
    let mut ws = Ws::connect(&s, &alice, "graphql-transport-ws").await;
    ws.subscribe("w", "subscription { workAvailable(agentIds: [\"inbox\", \"task-agent\"]) { id } }", json!({})).await;
    let mut offered = Vec::new();
    while let Ok(Some(m)) = tokio::time::timeout(std::time::Duration::from_secs(2), ws.next_json()).await {
        assert_eq!(m["type"], "next", "{m}");
        offered.push(m["payload"]["data"]["workAvailable"]["id"].as_str().expect("an id").to_string());
    }
    let expected: Vec<String> = (1..501).map(id).collect();
    assert_eq!(offered.len(), 500, "first {:?}, last {:?}", offered.first(), offered.last());
    assert_eq!(offered, expected, "the 500 oldest unleased, oldest first");
    s.stop();
}

/// A lease token mixes in the database's secret: a claim sent with a `requestId` (which the log
/// records) gives a token no reader of the log can derive, and a resent claim, on either
/// instance, still answers the same token.
async fn a_lease_token_is_not_derived_from_the_log(db: Db) {
    use sha2::{Digest, Sha256};
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let alice = a.user_token("alice").await;
    register_agent(&a, &alice).await;
    a.data(Some(&alice), START, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "a1"}})).await;
    let claim = "mutation { claimOperation(id: \"op1\", workerId: \"w1\", requestId: \"c1\") { lease { token } } }";
    let token = a.data(Some(&alice), claim, json!({})).await["claimOperation"]["lease"]["token"].clone();
    let again = b.data(Some(&alice), claim, json!({})).await["claimOperation"]["lease"]["token"].clone();
    assert_eq!(token, again, "a resent claim answers the same token on the other instance");
    let user = a.data(Some(&alice), "{ viewer { userId } }", json!({})).await["viewer"]["userId"].clone();
    let command = agentlog_domain::ids::request_command_id(user.as_str().expect("a user"), "c1");
    let from_the_log = Sha256::digest(format!("agentlog lease token\u{0}{command}").as_bytes());
    let derived = format!("lt_{}", from_the_log.iter().map(|b| format!("{b:02x}")).collect::<String>());
    assert_ne!(token.as_str(), Some(derived.as_str()), "the token is not derived from what the log holds");
}

both!(
    a_lease_token_is_not_derived_from_the_log as a_lease_token_is_not_derived_from_the_log,
    an_interrupted_run_resumes as an_interrupted_run_resumes,
    only_the_lease_holder_reports as only_the_lease_holder_reports,
    a_new_claim_or_an_expiry_ends_the_old_token as a_new_claim_or_an_expiry_ends_the_old_token,
    the_backlog_is_the_oldest_claimable_runs as the_backlog_is_the_oldest_claimable_runs
);

/// `workAvailable` offers a run committed before the subscription started that the read models
/// had not applied yet: its backlog is read once they hold the head it starts from (a run below
/// the head is never in the live part). PostgreSQL only: another client holds the read models'
/// checkpoint rows (the runner's batch waits on them) while the log takes the run; on SQLite one
/// write lock would hold the log as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_available_offers_a_run_its_read_models_had_not_applied() {
    use sqlx::{Connection, Executor, PgConnection};
    let Some(db) = Db::postgres("work_available_offers_a_run_its_read_models_had_not_applied").await else { return };
    let url = db.url();
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let mut holder = PgConnection::connect(&url).await.expect("connect");
    holder.execute("BEGIN; SELECT * FROM projection_checkpoints FOR UPDATE").await.expect("hold the checkpoints");
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    // Answered once its read-your-writes wait (5 s) gives up: the run is in the log.
    s.data(Some(&alice), start, json!({"i": {"operationId": "queued", "kind": "TASK", "agentId": "inbox"}})).await;
    let mut ws = Ws::connect(&s, &alice, "graphql-transport-ws").await;
    ws.subscribe("w", "subscription { workAvailable(agentIds: [\"inbox\"]) { id } }", json!({})).await;
    // The subscription has read the head (the run is below it); the read models catch up now.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    holder.execute("ROLLBACK").await.expect("release");
    let offered = tokio::time::timeout(std::time::Duration::from_secs(10), ws.next_data()).await.expect("offered");
    assert_eq!(offered["data"]["workAvailable"]["id"], "queued", "{offered}");
}
