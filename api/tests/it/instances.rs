//! Several `agentlog serve` processes on one database. Each keeps its projection runner, its
//! tree cache and its delta relay in memory; the read models are shared tables. Every batch must
//! be applied once whichever instance applies it, each instance must read its own writes and the
//! others' right after an answer, and the read models must equal a rebuild afterwards.

use std::time::Duration;

use agentlog_eventlog::{StoreOptions, open_store};
use agentlog_load::Config;
use agentlog_projections::ReadDb;
use serde_json::json;

use crate::{
    faults::{TempRecord, check_nothing_lost},
    support::{Db, RELOADED, Server, Ws, check_workers_worked, verify_read_models},
};

const RUNS: usize = 8;
const STEPS: usize = 15;
const COST_PER_STEP: i64 = 10;

const START: &str = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
const CLAIM: &str =
    "mutation($id: String!) { claimOperation(id: $id, workerId: \"w\", leaseSecs: 600) { lease { token } } }";
const STEP: &str = "mutation($id: String!, $l: String!, $u: UsageInput) { reportStep(id: $id, leaseToken: $l, phase: ACTING, usage: $u) { operation { costMicros stepCount } } }";
const COMPLETE: &str =
    "mutation($id: String!, $l: String!) { completeOperation(id: $id, leaseToken: $l, result: \"ok\") { position } }";

/// Claim run `id` through `s`; its lease token.
async fn claim(s: &Server, token: &str, id: &str) -> String {
    let d = s.data(Some(token), CLAIM, json!({"id": id})).await;
    d["claimOperation"]["lease"]["token"].as_str().expect("a lease token").to_string()
}

/// Eight runs, each reporting 15 steps of cost 10, every other step through the other instance:
/// each run costs 150 on both instances, in `operation`, `operations` and analytics, at once
/// after the last answer; the read models equal a rebuild. (Each instance used to apply every
/// batch from its own in-memory checkpoint, so every additive read model counted twice.)
async fn two_instances_count_each_step_once(db: Db) {
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let token = a.admin_token.clone();
    a.data(
        Some(&token),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "a1", "model": "m1", "provider": "p1"}}}),
    )
    .await;
    let ids: Vec<String> = (0..RUNS).map(|i| format!("run-{i}")).collect();
    let mut leases = Vec::new();
    for id in &ids {
        let input = json!({"operationId": id, "kind": "TASK", "agentId": "a1", "model": "m1", "provider": "p1"});
        a.data(Some(&token), START, json!({"i": input})).await;
        leases.push(claim(&b, &token, id).await);
    }
    let servers = [&a, &b];
    let reports = ids.iter().zip(&leases).enumerate().map(|(r, (id, lease))| {
        let token = token.clone();
        async move {
            for step in 0..STEPS {
                let s = servers[(r + step) % 2];
                let usage = json!({"inputTokens": 3, "outputTokens": 2, "costMicros": COST_PER_STEP});
                let d = s.data(Some(&token), STEP, json!({"id": id, "l": lease, "u": usage})).await;
                // Read-your-writes on the instance that answered.
                assert_eq!(d["reportStep"]["operation"]["stepCount"], json!(step + 1), "{id} step {step}: {d}");
            }
        }
    });
    futures_util::future::join_all(reports).await;
    for s in servers {
        // Each instance's run in memory trails the other's last step: decided on it, refused by
        // the append's expected version, decided again on the stream (the counts above held).
        assert!(s.metric(RELOADED).await >= STEPS as u64, "{} ran steps on stale cached runs", s.base);
    }
    for (r, (id, lease)) in ids.iter().zip(&leases).enumerate() {
        servers[r % 2].data(Some(&token), COMPLETE, json!({"id": id, "l": lease})).await;
    }

    let want = json!(COST_PER_STEP * STEPS as i64);
    for s in servers {
        let d = s
            .data(
                Some(&token),
                "{ operations(first: 50) { edges { node { id costMicros inputTokens stepCount } } } }",
                json!({}),
            )
            .await;
        let nodes = d["operations"]["edges"].as_array().cloned().unwrap_or_default();
        assert_eq!(nodes.len(), RUNS, "{d}");
        for n in &nodes {
            assert_eq!(n["node"]["costMicros"], want, "operations on {}: {n}", s.base);
            assert_eq!(n["node"]["inputTokens"], json!(3 * STEPS), "{n}");
        }
        let one = s.data(Some(&token), "{ operation(id: \"run-0\") { costMicros } }", json!({})).await;
        assert_eq!(one["operation"]["costMicros"], want, "{one}");
        let analytics = s
            .data(
                Some(&token),
                "{ analytics(input: {granularity: DAY}) { total { runs costMicros inputTokens } } }",
                json!({}),
            )
            .await;
        let total = &analytics["analytics"]["total"];
        assert_eq!(total["runs"], json!(RUNS), "{total}");
        assert_eq!(
            total["costMicros"],
            json!(COST_PER_STEP * (STEPS * RUNS) as i64),
            "analytics on {}: {total}",
            s.base
        );
        assert_eq!(total["inputTokens"], json!(3 * STEPS * RUNS), "{total}");
    }
    drop(b);
    verify_read_models(&a.stop()).await;
}

/// A message appended through one instance is in the tree the other serves at once (the tree
/// cache follows the table's version, not its own process's appends), and the live subscription
/// of one instance sees the other's events.
async fn instances_serve_each_others_writes(db: Db) {
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let token = a.admin_token.clone();
    let mut ws = Ws::connect(&b, &token, "graphql-transport-ws").await;
    ws.subscribe(
        "e",
        "subscription { events(filter: {streamPrefix: \"conversation@\"}) { position eventType } }",
        json!({}),
    )
    .await;
    a.data(Some(&token), "mutation { createConversation(topicId: \"t1\", title: \"chat\") { position } }", json!({}))
        .await;
    let append = "mutation($m: JSON!) { appendMessage(topicId: \"t1\", message: $m) { position } }";
    let tree = "{ conversation(topicId: \"t1\") { flatList } }";
    let mut parent: Option<String> = None;
    for i in 0..6 {
        let (writer, reader) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let id = format!("m{i}");
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        writer
            .data(
                Some(&token),
                append,
                json!({"m": {"messageId": id, "role": role, "content": id, "parentId": parent}}),
            )
            .await;
        let d = reader.data(Some(&token), tree, json!({})).await;
        let flat = d["conversation"]["flatList"].as_array().cloned().unwrap_or_default();
        assert!(
            flat.iter().any(|m| m["id"] == json!(id)),
            "{id} appended on {} is in {}'s tree: {d}",
            writer.base,
            reader.base
        );
        parent = Some(id);
    }
    // The created conversation and six messages, in order, on the other instance's subscription.
    let mut seen = Vec::new();
    while seen.len() < 7 {
        let p = ws.next_data().await;
        seen.push(p["data"]["events"]["eventType"].as_str().unwrap_or_default().to_string());
    }
    assert_eq!(seen[0], "conversation.created");
    assert!(seen[1..].iter().all(|t| t == "conversation.message_appended"), "{seen:?}");
}

/// The mixed load of `agentlog-load` through three instances at once (each request to the next
/// instance), one instance killed and restarted twice in the middle: every acknowledged mutation
/// is in the log once, and the read models equal a rebuild.
async fn three_instances_under_load_with_restarts(db: Db) {
    let a = Server::start(db).await;
    let mut b = a.sibling().await;
    let c = a.sibling().await;
    let record = TempRecord::create();
    let mut config = Config::new(a.base.clone(), a.admin_token.clone());
    config.more_urls = vec![b.base.clone(), c.base.clone()];
    config.clients = 4;
    config.subscribers = 1;
    config.duration = Some(Duration::from_secs(6));
    config.record = Some(record.0.clone());
    config.request_timeout = Duration::from_secs(10);
    let load = tokio::spawn(agentlog_load::run(config));
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        b.restart().await;
    }
    let report = load.await.expect("the load task").expect("the load run");
    eprintln!("{report}");
    assert!(report.acknowledged > 20, "the load did something: {report}");
    check_workers_worked(&report);
    let sub = &report.subscribers[0];
    assert_eq!(sub.duplicates, 0, "the subscriber saw an event twice");
    drop((b, c));
    check_nothing_lost(a, &record, &report).await;
}

/// Two processes started at the same moment on a log whose read models are gone (no
/// checkpoints: both reset and catch up at once) apply each event once.
async fn instances_started_together_catch_up_once(db: Db) {
    let a = Server::start(db).await;
    let token = a.admin_token.clone();
    a.data(
        Some(&token),
        "mutation($i: JSON!) { registerAgent(input: $i) { position } }",
        json!({"i": {"agentId": "a1", "config": {"slug": "a1", "title": "a1"}}}),
    )
    .await;
    for i in 0..20 {
        let id = format!("op-{i}");
        a.data(Some(&token), START, json!({"i": {"operationId": id, "kind": "TASK", "agentId": "a1"}})).await;
        let lease = claim(&a, &token, &id).await;
        a.data(Some(&token), STEP, json!({"id": id, "l": lease, "u": {"costMicros": 7}})).await;
        a.data(Some(&token), COMPLETE, json!({"id": id, "l": lease})).await;
    }
    let db = a.stop();
    let store = open_store(&db.url(), StoreOptions::default()).await.expect("open the log");
    ReadDb::from(store.database())
        .execute("DELETE FROM projection_checkpoints", &[])
        .await
        .expect("forget checkpoints");
    store.close().await;

    let (b, c) = tokio::join!(Server::start(Db::Shared(db.url())), Server::start(Db::Shared(db.url())));
    let analytics = "{ analytics(input: {granularity: DAY}) { total { runs costMicros } } }";
    for s in [&b, &c] {
        let d = s.eventually(&token, analytics, |d| d["analytics"]["total"]["runs"] == json!(20)).await;
        assert_eq!(d["analytics"]["total"]["costMicros"], json!(140), "{d}");
    }
    drop((b, c));
    verify_read_models(&db).await;
}

/// A delta published through one instance reaches a `messageDeltas` subscriber of the other
/// (PostgreSQL: relayed by NOTIFY; a delta larger than one notification arrives in pieces of the
/// same content), and the append through the first ends the stream on the second. With SQLite
/// there is no channel between processes: deltas stay with the process that received them (as
/// the SDL says) and only the stored message reaches the other.
async fn deltas_cross_instances_on_postgres(db: Db) {
    let relayed = db.url().starts_with("postgres");
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let token = a.admin_token.clone();
    a.data(Some(&token), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let mut ws = Ws::connect(&b, &token, "graphql-transport-ws").await;
    ws.subscribe("d", "subscription { messageDeltas(topicId: \"c1\") { messageId delta done length } }", json!({}))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let big = "é".repeat(3_000);
    let publish = "mutation($d: String!) { publishMessageDelta(topicId: \"c1\", messageId: \"m1\", delta: $d) }";
    for piece in ["Hel", "lo ", big.as_str()] {
        a.data(Some(&token), publish, json!({"d": piece})).await;
    }
    a.data(
        Some(&token),
        "mutation($m: JSON!) { appendMessage(topicId: \"c1\", message: $m) { position } }",
        json!({"m": {"messageId": "m1", "role": "assistant", "content": format!("Hello {big}")}}),
    )
    .await;
    let total = 6 + big.len();
    if relayed {
        let mut content = String::new();
        loop {
            let d = ws.next_data().await;
            let d = &d["data"]["messageDeltas"];
            if d["done"] == json!(true) {
                assert_eq!(d["length"], json!(total), "{d}");
                break;
            }
            content.push_str(d["delta"].as_str().unwrap_or_default());
            assert_eq!(d["length"], json!(content.len()), "{d}");
        }
        assert_eq!(content, format!("Hello {big}"), "the other instance's subscriber got the whole content in order");
    } else {
        let waited = tokio::time::timeout(Duration::from_secs(1), ws.next_json()).await;
        assert!(waited.is_err(), "no delta crosses SQLite processes: {waited:?}");
    }
    // Either way the stored message is everyone's.
    let d = b.data(Some(&token), "{ conversation(topicId: \"c1\") { flatList } }", json!({})).await;
    assert_eq!(d["conversation"]["flatList"][0]["content"], json!(format!("Hello {big}")), "{d}");
    // A message appended is done streaming: a delta for it is refused where it was appended,
    // and one that reaches another instance after the `done` (relays of two instances are not
    // ordered with each other) starts no partial there: a subscriber joining sees no snapshot.
    let late = a.gql(Some(&token), publish, json!({"d": "late"})).await;
    assert_eq!(crate::support::error_code(&late).as_deref(), Some("VALIDATION"), "{late}");
    if relayed {
        let owner = a.data(Some(&token), "{ viewer { userId } }", json!({})).await["viewer"]["userId"].clone();
        let payload = json!({"i": "elsewhere", "n": 0, "t": "c1", "m": "m1", "o": owner, "d": "late"}).to_string();
        let store = open_store(&a.db.url(), StoreOptions::default()).await.expect("open the log");
        ReadDb::from(store.database())
            .execute("SELECT pg_notify('agentlog_deltas', $1)", &[payload.into()])
            .await
            .expect("notify");
        store.close().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut joining = Ws::connect(&b, &token, "graphql-transport-ws").await;
        joining
            .subscribe("j", "subscription { messageDeltas(topicId: \"c1\") { messageId snapshot } }", json!({}))
            .await;
        let waited = tokio::time::timeout(Duration::from_secs(1), joining.next_json()).await;
        assert!(waited.is_err(), "no partial of the stored message: {waited:?}");
    }
}

/// The other instances' poll in `events_wake_the_other_instance`: far longer than any wait below.
const LONG_POLL_MS: &str = "60000";

/// An event committed through one instance reaches a subscriber on another instance whose log
/// poll is a minute long: on PostgreSQL the commit's NOTIFY wakes the other instance's tailer,
/// so each of three events arrives within a few seconds. On SQLite nothing crosses processes
/// but the poll, so nothing arrives in that time: the same test tells a wake from a poll.
async fn events_wake_the_other_instance(db: Db) {
    let notified = db.url().starts_with("postgres");
    let a = Server::start_with(db, &["--log-poll-ms", LONG_POLL_MS]).await;
    let b = a.sibling_with(&["--log-poll-ms", LONG_POLL_MS]).await;
    let token = a.admin_token.clone();
    let mut ws = Ws::connect(&b, &token, "graphql-transport-ws").await;
    ws.subscribe(
        "e",
        // Agent ids are per owner: the admin's agents are in `agent@<admin>/…`, the built-ins
        // (registered at start) in `agent-<slug>`.
        "subscription { events(filter: {streamPrefix: \"agent@\"}) { position eventType } }",
        json!({}),
    )
    .await;
    // Let b's subscription and tailer settle into their wait (the poll then next fires in a minute).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let register = "mutation($i: JSON!) { registerAgent(input: $i) { position } }";
    for i in 0..3 {
        let agent = format!("wake-{i}");
        let config = json!({"slug": agent, "title": agent, "model": "m1", "provider": "p1"});
        let written = a.data(Some(&token), register, json!({"i": {"agentId": agent, "config": config}})).await;
        let position = &written["registerAgent"]["position"];
        let sent = std::time::Instant::now();
        if notified {
            let d = ws.next_data().await;
            let event = &d["data"]["events"];
            assert_eq!(&event["position"], position, "{d}");
            assert_eq!(event["eventType"], json!("agent.registered"), "{d}");
            let waited = sent.elapsed();
            assert!(waited < Duration::from_secs(10), "delivered after {waited:?}, not woken by NOTIFY");
        } else {
            let waited = tokio::time::timeout(Duration::from_secs(2), ws.next_json()).await;
            assert!(waited.is_err(), "nothing wakes another SQLite process before its poll: {waited:?}");
        }
    }
}

/// A token revoked through one instance closes the websockets open on it at another: each
/// process looks for revocations it did not make itself (`Tokens::follow_revocations`, every 5 s),
/// with one query for all its sockets.
async fn a_revocation_closes_the_other_instances_websockets(db: Db) {
    let a = Server::start(db).await;
    let b = a.sibling().await;
    let ann = a.user_token("ann").await;
    let bob = a.user_token("bob").await;
    let mut on_b = Ws::connect(&b, &ann, "graphql-transport-ws").await;
    on_b.subscribe("e", "subscription { events { position } }", json!({})).await;
    let mut bobs = Ws::connect(&b, &bob, "graphql-transport-ws").await;
    bobs.subscribe("e", "subscription { events { position } }", json!({})).await;
    let id = a.data(Some(&ann), "{ tokens { tokenId } }", json!({})).await["tokens"][0]["tokenId"]
        .as_str()
        .expect("ann's token")
        .to_string();
    let sent = std::time::Instant::now();
    let d = a.data(Some(&ann), "mutation($id: String!) { revokeToken(tokenId: $id) }", json!({"id": id})).await;
    assert_eq!(d["revokeToken"], true);
    assert_eq!(on_b.close_code().await, Some(4401), "ann's socket on the other instance is closed");
    let waited = sent.elapsed();
    assert!(waited < Duration::from_secs(15), "closed after {waited:?}");
    // Bob's socket on b is untouched: a write of his still reaches it.
    let written =
        b.data(Some(&bob), "mutation { createConversation(topicId: \"still\") { position } }", json!({})).await;
    let position = &written["createConversation"]["position"];
    loop {
        let p = bobs.next_data().await;
        if &p["data"]["events"]["position"] == position {
            break;
        }
    }
}

/// A socket opened with a token in its upgrade request, then revoked (on another instance)
/// before its `connection_init`, is refused at the init (4401): the token is asked about again
/// once the socket watches it, not taken from the upgrade's earlier check.
async fn a_token_revoked_before_connection_init_is_refused(db: Db) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest, http::HeaderValue};

    let a = Server::start(db).await;
    let b = a.sibling().await;
    let ann = a.user_token("ann").await;
    let url = b.base.replace("http://", "ws://") + "/graphql";
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
    request.headers_mut().insert("Authorization", HeaderValue::from_str(&format!("Bearer {ann}")).expect("header"));
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.expect("websocket connect");
    let id = a.data(Some(&ann), "{ tokens { tokenId } }", json!({})).await["tokens"][0]["tokenId"]
        .as_str()
        .expect("ann's token")
        .to_string();
    let d = a.data(Some(&ann), "mutation($id: String!) { revokeToken(tokenId: $id) }", json!({"id": id})).await;
    assert_eq!(d["revokeToken"], true);
    socket.send(Message::text(json!({"type": "connection_init", "payload": {}}).to_string())).await.expect("init");
    let code = loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), socket.next()).await.expect("an answer");
        match msg {
            Some(Ok(Message::Close(frame))) => break frame.map(|f| u16::from(f.code)),
            Some(Ok(Message::Text(text))) => {
                assert!(!text.contains("connection_ack"), "a revoked token's socket was accepted: {text}");
            }
            Some(Ok(_)) => {}
            other => panic!("the socket ended without a close frame: {other:?}"),
        }
    };
    assert_eq!(code, Some(4401));
}

both!(
    a_token_revoked_before_connection_init_is_refused as a_token_revoked_before_connection_init_is_refused,
    a_revocation_closes_the_other_instances_websockets as revocation_closes_other_instances_websockets,
    events_wake_the_other_instance as events_wake_the_other_instance,
    two_instances_count_each_step_once as two_instances_count_each_step_once,
    instances_serve_each_others_writes as instances_serve_each_others_writes,
    three_instances_under_load_with_restarts as three_instances_under_load_with_restarts,
    instances_started_together_catch_up_once as instances_started_together_catch_up_once,
    deltas_cross_instances_on_postgres as deltas_cross_instances
);
