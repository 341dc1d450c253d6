//! Topic ids per owner: conversations, their live feeds and a run's topic.

use super::*;
use agentlog_domain::conversations::{Conversation, ConversationCommand};

const CREATE_TOPIC: &str = "mutation($t: String, $o: String) { createConversation(topicId: \"c1\", title: $t, ownerId: $o) \
    { conversation { topicId userId title globalId } } }";
const TOPIC: &str = "query($o: String) { conversation(topicId: \"c1\", ownerId: $o) { userId title messageCount \
    messages { edges { node { messageId message } } } threads { threadId } messageGroups { groupId } flatList } }";
const APPEND_TO: &str = "mutation($t: String!, $m: JSON!, $o: String) { appendMessage(topicId: $t, message: $m, ownerId: $o) \
    { conversation { userId messageCount } } }";

/// Topic ids are per owner: bob's `c1` beside alice's, every conversation mutation on alice's
/// `c1` by bob answers as for an unknown topic, an admin acts on hers with `ownerId`, runs and
/// live feeds stay in their owner's topic.
async fn topic_ids_are_per_owner(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let admin = s.admin_token.clone();

    let a = s.data(Some(&alice), CREATE_TOPIC, json!({"t": "alice's"})).await;
    let b = s.data(Some(&bob), CREATE_TOPIC, json!({"t": "bob's"})).await;
    assert_eq!(a["createConversation"]["conversation"]["userId"], "alice", "{a}");
    assert_eq!(b["createConversation"]["conversation"]["userId"], "bob", "{b}");
    assert_eq!(b["createConversation"]["conversation"]["title"], "bob's", "{b}");
    let again = s.gql(Some(&alice), CREATE_TOPIC, json!({})).await;
    assert_eq!(support::error_code(&again).as_deref(), Some("CONFLICT"), "{again}");
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let m = json!({"messageId": "q", "role": "user", "content": format!("{who} asks")});
        let r = s.data(Some(token), APPEND_TO, json!({"t": "c1", "m": m})).await;
        assert_eq!(r["appendMessage"]["conversation"]["userId"], who, "{r}");
    }
    // Each sees their own only, messages and tree included.
    for (token, who) in [(&alice, "alice"), (&bob, "bob")] {
        let t = s.data(Some(token), TOPIC, json!({})).await;
        assert_eq!(t["conversation"]["title"], format!("{who}'s"), "{t}");
        assert_eq!(t["conversation"]["messageCount"], 1, "{t}");
        let asks = format!("{who} asks");
        assert_eq!(t["conversation"]["messages"]["edges"][0]["node"]["message"]["content"], asks.as_str(), "{t}");
        assert_eq!(t["conversation"]["flatList"][0]["content"], asks.as_str(), "{t}");
        let list = s.data(Some(token), "{ conversations { edges { node { userId } } } }", json!({})).await;
        assert_eq!(list["conversations"]["edges"].as_array().map(Vec::len), Some(1), "{list}");
    }
    // Bob's run in his `c1` is tracked there: alice's `c1` stays free for hers.
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { operation { userId topicId } } }";
    let run = |op: &str| json!({"i": {"operationId": op, "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c1"}});
    let r = s.data(Some(&bob), start, run("op-bob")).await;
    assert_eq!(r["startOperation"]["operation"]["userId"], "bob", "{r}");
    let r = s.data(Some(&alice), start, run("op-alice")).await;
    assert_eq!(r["startOperation"]["operation"]["userId"], "alice", "not busy with bob's run: {r}");

    // Naming alice's topic: bob finds nothing (as for an unknown id), and nothing is written.
    let head = || async { s.data(Some(&admin), "{ headPosition }", json!({})).await["headPosition"].as_i64() };
    let before = head().await;
    let calls = [
        "mutation($o: String) { appendMessage(topicId: \"{ID}\", message: {messageId: \"x\", role: \"user\", content: \"x\"}, ownerId: $o) { position } }",
        "mutation($o: String) { editMessage(topicId: \"{ID}\", messageId: \"q\", content: \"x\", ownerId: $o) { position } }",
        "mutation($o: String) { deleteMessage(topicId: \"{ID}\", messageId: \"q\", ownerId: $o) { position } }",
        "mutation($o: String) { switchBranch(topicId: \"{ID}\", messageId: \"q\", activeBranchIndex: 0, ownerId: $o) { position } }",
        "mutation($o: String) { createThread(topicId: \"{ID}\", threadId: \"th\", sourceMessageId: \"q\", kind: \"continuation\", ownerId: $o) { position } }",
        "mutation($o: String) { compressMessages(topicId: \"{ID}\", groupId: \"g\", messageIds: [\"q\"], content: \"s\", ownerId: $o) { position } }",
        "mutation($o: String) { createParallelGroup(topicId: \"{ID}\", groupId: \"g\", messageIds: [\"q\"], ownerId: $o) { position } }",
        "mutation($o: String) { removeMessageGroup(topicId: \"{ID}\", groupId: \"g\", ownerId: $o) { position } }",
        "mutation($o: String) { publishMessageDelta(topicId: \"{ID}\", messageId: \"m\", delta: \"x\", ownerId: $o) }",
        "query($o: String) { conversation(topicId: \"{ID}\", ownerId: $o) { topicId } }",
    ];
    for template in calls {
        let theirs = s.gql(Some(&bob), &template.replace("{ID}", "c1"), json!({"o": "alice"})).await;
        let unknown = s.gql(Some(&bob), &template.replace("{ID}", "zz1"), json!({})).await;
        assert_eq!(refusal(&theirs, "c1"), refusal(&unknown, "zz1"), "{template}: {theirs} vs {unknown}");
        assert_eq!(support::error_code(&theirs).as_deref(), Some("NOT_FOUND"), "{theirs}");
        // An admin without `ownerId` acts in its own namespace, where there is none.
        let own = s.gql(Some(&admin), &template.replace("{ID}", "c1"), json!({})).await;
        assert_eq!(support::error_code(&own).as_deref(), Some("NOT_FOUND"), "{template}: {own}");
    }
    let theirs = s
        .gql(
            Some(&bob),
            start,
            json!({"i": {"operationId": "op-x", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c2"}}),
        )
        .await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c2\") { position } }", json!({})).await;
    let after_alice = head().await;
    let again = s
        .gql(
            Some(&bob),
            start,
            json!({"i": {"operationId": "op-y", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "c2"}}),
        )
        .await;
    assert_eq!(refusal(&again, "op-y"), refusal(&theirs, "op-x"), "alice's c2 answers as no c2: {again} vs {theirs}");
    assert_eq!(support::error_code(&again).as_deref(), Some("NOT_FOUND"), "{again}");
    assert_eq!(head().await, after_alice, "nothing written");
    assert!(before < after_alice);

    // An admin acts on alice's with `ownerId`; bob's is untouched.
    let m = json!({"messageId": "a", "role": "assistant", "content": "by admin", "parentId": "q"});
    let r = s.data(Some(&admin), APPEND_TO, json!({"t": "c1", "m": m, "o": "alice"})).await;
    assert_eq!(r["appendMessage"]["conversation"], json!({"userId": "alice", "messageCount": 2}), "{r}");
    let t = s.data(Some(&admin), TOPIC, json!({"o": "alice"})).await;
    assert_eq!(t["conversation"]["messageCount"], 2, "{t}");
    let edit = "mutation($o: String) { editMessage(topicId: \"c1\", messageId: \"q\", content: \"edited\", ownerId: $o) { conversation { userId } } }";
    assert_eq!(
        s.data(Some(&admin), edit, json!({"o": "alice"})).await["editMessage"]["conversation"]["userId"],
        "alice"
    );
    let t = s.data(Some(&bob), TOPIC, json!({})).await;
    assert_eq!(t["conversation"]["messageCount"], 1, "{t}");
    assert_eq!(t["conversation"]["messages"]["edges"][0]["node"]["message"]["content"], "bob asks", "{t}");
    let made = s.data(Some(&admin), CREATE_TOPIC.replace("c1", "c3").as_str(), json!({"o": "carol"})).await;
    assert_eq!(made["createConversation"]["conversation"]["userId"], "carol", "{made}");

    // Global ids name the owner.
    let q = "query($id: ID!) { node(id: $id) { ... on Conversation { userId title } } }";
    let found = s.data(Some(&admin), q, json!({"id": b["createConversation"]["conversation"]["globalId"]})).await;
    assert_eq!(found["node"], json!({"userId": "bob", "title": "bob's"}), "{found}");
    let hidden = s.data(Some(&alice), q, json!({"id": b["createConversation"]["conversation"]["globalId"]})).await;
    assert!(hidden["node"].is_null(), "{hidden}");

    // Live feeds: bob's subscriptions on his `c1` never carry alice's.
    let mut ws = support::Ws::connect(&s, &bob, "graphql-transport-ws").await;
    ws.subscribe("d", "subscription { messageDeltas(topicId: \"c1\") { messageId delta } }", json!({})).await;
    ws.subscribe(
        "c",
        "subscription { conversationChanged(topicId: \"c1\") { eventType node { userId messageCount } } }",
        json!({}),
    )
    .await;
    let mut admin_ws = support::Ws::connect(&s, &admin, "graphql-transport-ws").await;
    admin_ws
        .subscribe(
            "c",
            "subscription($o: String) { conversationChanged(topicId: \"c1\", ownerId: $o) { node { userId } } }",
            json!({"o": "alice"}),
        )
        .await;
    admin_ws
        .subscribe(
            "d",
            "subscription($o: String) { messageDeltas(topicId: \"c1\", ownerId: $o) { delta } }",
            json!({"o": "alice"}),
        )
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let publish = "mutation($d: String!) { publishMessageDelta(topicId: \"c1\", messageId: \"m\", delta: $d) }";
    s.data(Some(&alice), publish, json!({"d": "alice's delta"})).await;
    s.data(Some(&alice), APPEND_TO, json!({"t": "c1", "m": {"messageId": "m", "role": "user", "content": "a"}})).await;
    s.data(Some(&bob), publish, json!({"d": "bob's delta"})).await;
    s.data(Some(&bob), APPEND_TO, json!({"t": "c1", "m": {"messageId": "m", "role": "user", "content": "b"}})).await;
    let mut got: Vec<(String, Value)> = Vec::new();
    while got.len() < 3 {
        let msg = ws.next_json().await.expect("a message");
        assert_eq!(msg["type"], "next", "{msg}");
        got.push((msg["id"].as_str().unwrap_or_default().to_string(), msg["payload"]["data"].clone()));
    }
    for (id, data) in &got {
        match id.as_str() {
            "d" => assert!(
                data["messageDeltas"]["delta"] == "bob's delta" || data["messageDeltas"]["delta"] == "",
                "{got:?}"
            ),
            _ => assert_eq!(data["conversationChanged"]["node"]["userId"], "bob", "{got:?}"),
        }
    }
    // Alice's delta, its end, her append.
    let seen = [admin_ws.next_data().await, admin_ws.next_data().await, admin_ws.next_data().await];
    assert!(seen.iter().any(|d| d["data"]["messageDeltas"]["delta"] == "alice's delta"), "{seen:?}");
    assert!(seen.iter().any(|d| d["data"]["conversationChanged"]["node"]["userId"] == "alice"), "{seen:?}");

    // Owned streams in the log.
    let db = s.stop();
    let log = support::read_log(&db).await;
    let created: Vec<&str> =
        log.iter().filter(|e| e.event_type == "conversation.created").map(|e| e.stream_id.as_str()).collect();
    assert_eq!(
        created,
        ["conversation@alice/c1", "conversation@bob/c1", "conversation@alice/c2", "conversation@carol/c3"]
    );
    let attached: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e.event_type == "conversation.operation_attached")
        .map(|e| (e.stream_id.as_str(), e.payload["operationId"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(attached, [("conversation@bob/c1", "op-bob"), ("conversation@alice/c1", "op-alice")]);
    support::verify_read_models(&db).await;
}

/// A log written before topic ids were per owner: alice's topic `old` in the global stream
/// `conversation-old`. Alice still reads and writes it there; bob finds nothing and creates his.
async fn legacy_global_conversation_stays_its_owners(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let create = ConversationCommand::Create {
            topic_id: "old".into(),
            title: Some("legacy".into()),
            agent_id: None,
            group_id: None,
        };
        state.handler.execute_stream::<Conversation>("conversation-old", &create, &ctx).await.expect("legacy topic");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let q = "{ conversation(topicId: \"old\") { userId title messageCount } }";
    let mine = s.data(Some(&alice), q, json!({})).await;
    assert_eq!(mine["conversation"], json!({"userId": "alice", "title": "legacy", "messageCount": 0}), "{mine}");
    let m = json!({"messageId": "q", "role": "user", "content": "still mine"});
    s.data(Some(&alice), APPEND_TO, json!({"t": "old", "m": m})).await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    let run = json!({"i": {"operationId": "op-old", "kind": "CONVERSATION", "agentId": "inbox", "topicId": "old"}});
    s.data(Some(&alice), start, run).await;
    let r = s.gql(Some(&bob), q, json!({})).await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let r = s
        .gql(Some(&bob), APPEND_TO, json!({"t": "old", "m": {"messageId": "x", "role": "user", "content": "x"}}))
        .await;
    assert_eq!(support::error_code(&r).as_deref(), Some("NOT_FOUND"), "{r}");
    let create =
        "mutation { createConversation(topicId: \"old\", title: \"bob's\") { conversation { userId title } } }";
    assert_eq!(s.data(Some(&bob), create, json!({})).await["createConversation"]["conversation"]["title"], "bob's");
    let theirs = s.data(Some(&alice), q, json!({})).await;
    assert_eq!(theirs["conversation"], json!({"userId": "alice", "title": "legacy", "messageCount": 1}), "{theirs}");
    let db = s.stop();
    let log = support::read_log(&db).await;
    let streams = |t: &str| log.iter().filter(|e| e.event_type == t).map(|e| e.stream_id.clone()).collect::<Vec<_>>();
    assert_eq!(
        streams("conversation.message_appended"),
        ["conversation-old"],
        "alice's message lands in her global stream"
    );
    assert_eq!(streams("conversation.operation_attached"), ["conversation-old"]);
    assert_eq!(streams("conversation.created"), ["conversation-old", "conversation@bob/old"]);
    support::verify_read_models(&db).await;
}

both!(
    topic_ids_are_per_owner as topic_ids_per_owner,
    legacy_global_conversation_stays_its_owners as legacy_conversation_stays_its_owners
);
