//! Operation ids per owner.

use super::*;
use agentlog_domain::operations::{CreateOperation, Operation, OperationCommand, OperationKind};
use agentlog_domain::values::AgentRef;

const START: &str = "mutation($id: String!, $o: String) { startOperation(input: {operationId: $id, kind: CONVERSATION, \
    agentId: \"inbox\"}, ownerId: $o) { operation { id userId status globalId } } }";
const OPERATION: &str = "query($id: String!, $o: String) { operation(id: $id, ownerId: $o) { id userId status \
    childIds stepCount history { streamId } } }";

/// Start operation `id` for `token`'s user (or, for an admin, `owner`'s).
async fn start(s: &Server, token: &str, id: &str, owner: Option<&str>) -> Value {
    s.data(Some(token), START, json!({"id": id, "o": owner})).await["startOperation"]["operation"].clone()
}

async fn operation_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    // The same id, one each: bob's start succeeds as for an unknown id.
    let a = start(&s, &alice, "op1", None).await;
    let b = start(&s, &bob, "op1", None).await;
    assert_eq!(a["userId"], "alice", "{a}");
    assert_eq!(b["userId"], "bob", "{b}");
    let again = s.gql(Some(&alice), START, json!({"id": "op1"})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");
    start(&s, &alice, "op2", None).await;
    // Only an admin starts a run for someone else: bob naming alice is FORBIDDEN, whether or not
    // she holds the id, and writes nothing.
    let head_before = s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].clone();
    for id in ["op1", "op7"] {
        let r = s.gql(Some(&bob), START, json!({"id": id, "o": "alice"})).await;
        assert_eq!(support::error_code(&r).as_deref(), Some("FORBIDDEN"), "{r}");
    }
    assert_eq!(s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"], head_before);

    // Each sees and changes their own only.
    let lease = s.claim(&bob, "op1", "w1").await;
    let step = "mutation($lt: String!) { reportStep(id: \"op1\", leaseToken: $lt, phase: ACTING) { position } }";
    s.data(Some(&bob), step, json!({"lt": lease})).await;
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let op = s.data(Some(token), OPERATION, json!({"id": "op1"})).await;
        assert_eq!(op["operation"]["userId"], who, "{op}");
        assert_eq!(op["operation"]["stepCount"], i64::from(who == "bob"), "{op}");
        let streams: Vec<&str> =
            op["operation"]["history"].as_array().unwrap().iter().filter_map(|e| e["streamId"].as_str()).collect();
        assert!(streams.iter().all(|st| *st == format!("operation@{who}/op1")), "{op}");
        let list = s.data(Some(token), "{ operations { edges { node { userId id } } } }", json!({})).await;
        let edges = list["operations"]["edges"].as_array().cloned().unwrap_or_default();
        assert!(edges.iter().all(|e| e["node"]["userId"] == who), "{list}");
    }

    // A sub-agent's parent resolves in its owner's namespace: bob's child is his op1's.
    let spawn = "mutation($p: String!, $l: String, $o: String) { spawnSubagent(parentOperationId: $p, \
        input: {operationId: \"kid\", kind: SUBAGENT, agentId: \"inbox\"}, leaseToken: $l, ownerId: $o) \
        { operation { userId parentOperationId } } }";
    let kid = s.data(Some(&bob), spawn, json!({"p": "op1", "l": lease})).await;
    assert_eq!(kid["spawnSubagent"]["operation"], json!({"userId": "bob", "parentOperationId": "op1"}), "{kid}");
    let mine = s.data(Some(&bob), OPERATION, json!({"id": "op1"})).await;
    assert_eq!(mine["operation"]["childIds"], json!(["kid"]), "{mine}");
    let hers = s.data(Some(&alice), OPERATION, json!({"id": "op1"})).await;
    assert_eq!(hers["operation"]["childIds"], json!([]), "{hers}");
    // bob has no op2: a sub-agent of it is NOT_FOUND, exactly as for an unknown parent.
    let r = s.gql(Some(&bob), spawn, json!({"p": "op2"})).await;
    let unknown = s.gql(Some(&bob), spawn, json!({"p": "zz1"})).await;
    assert_eq!(refusal(&r, "op2"), refusal(&unknown, "zz1"), "{r} vs {unknown}");

    // A task run's operation is named in the task owner's namespace: bob may run op2.
    let task =
        "mutation { createTask(input: {taskId: \"t1\", identifier: \"T-1\", instruction: \"go\"}) { position } }";
    s.data(Some(&bob), task, json!({})).await;
    let run = "mutation { runTask(id: \"t1\", topicId: \"p1\", operationId: \"op2\") { position } }";
    s.data(Some(&bob), run, json!({})).await;
    let ran = s.data(Some(&bob), OPERATION, json!({"id": "op2"})).await;
    assert_eq!(ran["operation"]["userId"], "bob", "{ran}");

    // Naming another owner: a user finds nothing (as for an unknown id), an admin finds theirs.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let templates = [
        "query($o: String) { operation(id: \"{ID}\", ownerId: $o) { id } }",
        "mutation($o: String) { claimOperation(id: \"{ID}\", workerId: \"w9\", ownerId: $o) { position } }",
        "mutation($o: String) { renewLease(id: \"{ID}\", workerId: \"w9\", leaseToken: \"x\", ownerId: $o) { position } }",
        "mutation($o: String) { changePhase(id: \"{ID}\", leaseToken: \"x\", phase: ACTING, ownerId: $o) { position } }",
        "mutation($o: String) { reportStep(id: \"{ID}\", leaseToken: \"x\", phase: ACTING, ownerId: $o) { position } }",
        "mutation($o: String) { updatePlan(id: \"{ID}\", leaseToken: \"x\", plan: {steps: []}, ownerId: $o) { position } }",
        "mutation($o: String) { updateTodos(id: \"{ID}\", leaseToken: \"x\", todos: [], ownerId: $o) { position } }",
        "mutation($o: String) { recordArtifact(id: \"{ID}\", artifact: {artifactId: \"a1\", title: \"t\", kind: \"document\", \
            contentRef: \"r\"}, ownerId: $o) { position } }",
        "mutation($o: String) { recordScore(id: \"{ID}\", score: {rubricId: \"r1\", score: 50, passed: true}, ownerId: $o) \
            { position } }",
        "mutation($o: String) { askHuman(id: \"{ID}\", leaseToken: \"x\", card: {cardId: \"c1\", title: \"t\", \
            kind: \"confirm\"}, ownerId: $o) { position } }",
        "mutation($o: String) { answerCard(id: \"{ID}\", cardId: \"c1\", answer: {kind: \"confirm\", confirmed: true}, \
            ownerId: $o) { position } }",
        "mutation($o: String) { awaitAsync(id: \"{ID}\", leaseToken: \"x\", keys: [\"k\"], ownerId: $o) { position } }",
        "mutation($o: String) { receiveAsyncResult(id: \"{ID}\", key: \"k\", success: true, ownerId: $o) { position } }",
        "mutation($o: String) { completeOperation(id: \"{ID}\", leaseToken: \"x\", ownerId: $o) { position } }",
        "mutation($o: String) { failOperation(id: \"{ID}\", leaseToken: \"x\", message: \"m\", ownerId: $o) { position } }",
        "mutation($o: String) { interruptOperation(id: \"{ID}\", reason: \"r\", ownerId: $o) { position } }",
        "mutation($o: String) { resumeOperation(id: \"{ID}\", ownerId: $o) { position } }",
        "mutation($o: String) { cancelOperation(id: \"{ID}\", ownerId: $o) { position } }",
        "mutation($o: String) { reportBatch(operationId: \"{ID}\", leaseToken: \"x\", items: [{phase: ACTING}], \
            ownerId: $o) { position } }",
        "mutation($o: String) { spawnSubagent(parentOperationId: \"{ID}\", input: {operationId: \"kid2\", kind: SUBAGENT, \
            agentId: \"inbox\"}, ownerId: $o) { position } }",
    ];
    for template in templates {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "op2"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "op2"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        let own = s.gql(Some(&admin), &template.replace("{ID}", "op2"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    assert_eq!(head().await, before, "nothing written");
    // The subscription answers the same.
    let follow = "subscription($id: String!, $o: String) { operationChanged(id: $id, ownerId: $o) { eventType } }";
    let (theirs, unknown) = subscription_refusals(&s, &bob, follow, ("op2", "alice"), "zz1").await;
    assert_eq!(theirs, unknown);
    assert_eq!(theirs.0.as_deref(), Some("NOT_FOUND"), "{theirs:?}");

    let cancel = "mutation($o: String) { cancelOperation(id: \"op1\", ownerId: $o) { operation { userId status } } }";
    let r = s.data(Some(&admin), cancel, json!({"o": "alice"})).await;
    assert_eq!(r["cancelOperation"]["operation"], json!({"userId": "alice", "status": "cancelled"}), "{r}");
    let theirs = s.data(Some(&admin), OPERATION, json!({"id": "op1", "o": "bob"})).await;
    assert_eq!(theirs["operation"]["status"], "running", "bob's is untouched: {theirs}");
    let made = start(&s, &admin, "op3", Some("carol")).await;
    assert_eq!(made["userId"], "carol", "{made}");

    // Global ids name the owner: each resolves to its own operation.
    for (node, other) in [(&a, &bob), (&b, &alice)] {
        let q = "query($id: ID!) { node(id: $id) { ... on Operation { userId } } }";
        let found = s.data(Some(&admin), q, json!({"id": node["globalId"]})).await;
        assert_eq!(found["node"]["userId"], node["userId"], "{found}");
        let hidden = s.data(Some(other), q, json!({"id": node["globalId"]})).await;
        assert!(hidden["node"].is_null(), "{hidden}");
    }

    let db = s.stop();
    let log = support::read_log(&db).await;
    let created: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e.event_type == "operation.created")
        .map(|e| (e.stream_id.as_str(), e.user_id()))
        .collect();
    assert_eq!(
        created,
        [
            ("operation@alice/op1", "alice"),
            ("operation@bob/op1", "bob"),
            ("operation@alice/op2", "alice"),
            ("operation@bob/kid", "bob"),
            ("operation@bob/op2", "bob"),
            ("operation@carol/op3", "carol"),
        ]
    );
    support::verify_read_models(&db).await;
}

/// An operation written before ids were per owner (alice's, in the global stream
/// `operation-old`) stays hers: she reads and cancels it there; bob finds nothing and starts
/// his own `old`.
async fn a_legacy_operation_stream_stays_its_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let agent = AgentRef { agent_id: "inbox".into(), config_version: 1, model: None, provider: None };
        let create = OperationCommand::Create(CreateOperation::new("old", OperationKind::Conversation, agent));
        state.handler.execute_stream::<Operation>("operation-old", &create, &ctx).await.expect("legacy operation");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let mine = s.data(Some(&alice), OPERATION, json!({"id": "old"})).await;
    assert_eq!(mine["operation"]["userId"], "alice", "{mine}");
    assert_eq!(mine["operation"]["history"][0]["streamId"], "operation-old", "{mine}");
    let r = s.gql(Some(&bob), OPERATION, json!({"id": "old"})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let cancel = "mutation { cancelOperation(id: \"old\") { operation { userId status } } }";
    let r = s.gql(Some(&bob), cancel, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s.data(Some(&alice), cancel, json!({})).await;
    assert_eq!(r["cancelOperation"]["operation"], json!({"userId": "alice", "status": "cancelled"}), "{r}");
    assert_eq!(start(&s, &bob, "old", None).await["userId"], "bob");
    assert_eq!(s.data(Some(&bob), OPERATION, json!({"id": "old"})).await["operation"]["status"], "idle");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(streams("operation.cancelled"), ["operation-old"], "alice's cancel lands in her global stream");
    assert_eq!(streams("operation.created"), ["operation-old", "operation@bob/old"]);
    support::verify_read_models(&db).await;
}

both!(
    operation_ids_are_per_owner as operation_ids_per_owner,
    a_legacy_operation_stream_stays_its_owners as legacy_operation_stream_stays_its_owners
);
