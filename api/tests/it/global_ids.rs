//! Global object identification: every `Node` type's `globalId` refetches the object through
//! `node(id:)`; another user's global id answers exactly as an unknown one (`null`), and a string
//! that is no global id is VALIDATION.

use crate::support;

use serde_json::{Value, json};
use support::{Db, Server};

/// Each Node type: the query that reads alice's object, the path to the object in its answer,
/// and its id field.
const OBJECTS: &[(&str, &str, &str, &str)] = &[
    ("Task", "{ task(id: \"t-a\") { globalId taskId } }", "task", "taskId"),
    ("Operation", "{ operation(id: \"op-a\") { globalId id } }", "operation", "id"),
    ("Brief", "{ brief(id: \"b-a\") { globalId briefId } }", "brief", "briefId"),
    ("Notification", "{ notification(id: \"{N}\") { globalId notificationId } }", "notification", "notificationId"),
    ("Conversation", "{ conversation(topicId: \"c-a\") { globalId topicId } }", "conversation", "topicId"),
    ("Agent", "{ agent(id: \"ag-a\") { globalId id } }", "agent", "id"),
    ("Group", "{ group(id: \"g-a\") { globalId id } }", "group", "id"),
    ("CronJob", "{ cronJob(id: \"j-a\") { globalId jobId } }", "cronJob", "jobId"),
];

const NODE: &str = "query($id: ID!) { node(id: $id) { __typename globalId \
    ... on Task { taskId } ... on Operation { id } ... on Brief { briefId } \
    ... on Notification { notificationId } ... on Conversation { topicId } ... on Agent { id } \
    ... on Group { id } ... on CronJob { jobId } } }";

async fn every_node_type_is_refetched_by_its_global_id(db: Db) {
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let setup = [
        "mutation { createTask(input: {taskId: \"t-a\", identifier: \"TA\", instruction: \"x\"}) { position } }",
        "mutation { runTask(id: \"t-a\", topicId: \"tp-a\", operationId: \"op-a\") { position } }",
        "mutation { createBrief(input: {briefId: \"b-a\", type: \"result\", title: \"t\", summary: \"s\", taskId: \"t-a\"}) { position } }",
        "mutation { registerAgent(input: {agentId: \"ag-a\", config: {slug: \"a\", title: \"A\"}}) { position } }",
        "mutation { createCronJob(input: {jobId: \"j-a\", agentId: \"ag-a\", pattern: \"0 9 * * *\", timezone: \"UTC\", content: \"c\", enabled: false}) { position } }",
        "mutation { createGroup(id: \"g-a\", title: \"G\", config: {}, members: [{agentId: \"ag-a\", role: \"supervisor\", enabled: true, order: 0}]) { position } }",
        "mutation { createConversation(topicId: \"c-a\") { position } }",
    ];
    for q in setup {
        s.data(Some(&alice), q, json!({})).await;
    }
    let made = s
        .data(
            Some(&alice),
            "mutation { createNotification(input: {category: \"c\", type: \"t\", title: \"T\", body: \"B\"}) { notification { notificationId } } }",
            json!({}),
        )
        .await;
    let notification_id =
        made["createNotification"]["notification"]["notificationId"].as_str().expect("id").to_string();
    // Bob holds objects of his own, so a miss cannot come from an empty read model.
    s.data(
        Some(&bob),
        "mutation { createTask(input: {taskId: \"t-b\", identifier: \"TB\", instruction: \"x\"}) { position } }",
        json!({}),
    )
    .await;
    let node = |token: String, id: Value| {
        let s = &s;
        async move { s.gql(Some(&token), NODE, json!({ "id": id })).await }
    };
    let mut seen = Vec::new();
    for (type_name, query, path, id_field) in OBJECTS {
        let query = query.replace("{N}", &notification_id);
        let object = s.data(Some(&alice), &query, json!({})).await[*path].clone();
        let global = object["globalId"].clone();
        let text = global.as_str().unwrap_or_else(|| panic!("{type_name}: no globalId in {object}"));
        assert!(!text.contains("alice") && !text.is_empty(), "{type_name}: opaque, got {text}");
        seen.push(text.to_string());

        let found = node(alice.clone(), global.clone()).await;
        assert_eq!(found["data"]["node"]["__typename"], *type_name, "{type_name}: {found}");
        assert_eq!(found["data"]["node"][*id_field], object[*id_field], "{type_name}: {found}");
        assert_eq!(found["data"]["node"]["globalId"], global, "{type_name}: {found}");
        // An admin refetches it too (admins see every user's objects).
        let by_admin = node(s.admin_token.clone(), global.clone()).await;
        assert_eq!(by_admin["data"]["node"][*id_field], object[*id_field], "{type_name} as admin: {by_admin}");

        // Bob: alice's global id answers exactly as the global id of an object that does not exist.
        let theirs = node(bob.clone(), global.clone()).await;
        let unknown_id = forge(text, "alice", "zz-unknown");
        let unknown = node(alice.clone(), json!(unknown_id)).await;
        assert_eq!(theirs, json!({"data": {"node": null}}), "{type_name}: bob got {theirs}");
        assert_eq!(unknown, theirs, "{type_name}: an unknown object answers alike");
        // Bob's own owner in alice's id does not lend him her object either.
        let relabelled = node(bob.clone(), json!(forge(text, "bob", &id_of(text)))).await;
        assert_eq!(relabelled, json!({"data": {"node": null}}), "{type_name}: relabelled {relabelled}");
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), OBJECTS.len(), "every global id differs");

    let seen_task = s.data(Some(&alice), OBJECTS[0].1, json!({})).await["task"]["globalId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The same global id in a list as from the single read.
    let listed = s.data(Some(&alice), "{ tasks { edges { node { globalId } } } }", json!({})).await;
    let task = s.data(Some(&alice), OBJECTS[0].1, json!({})).await;
    assert_eq!(listed["tasks"]["edges"][0]["node"]["globalId"], task["task"]["globalId"]);

    // A built-in agent (owned by `system`, everyone's to see) is refetched by any user, and
    // `system` named for another kind of object lends nothing.
    let inbox = s.data(Some(&bob), "{ agent(id: \"inbox\") { globalId id } }", json!({})).await;
    let found = node(bob.clone(), inbox["agent"]["globalId"].clone()).await;
    assert_eq!(found["data"]["node"]["__typename"], "Agent", "{found}");
    assert_eq!(found["data"]["node"]["id"], "inbox", "{found}");
    let task_as_system = node(bob.clone(), json!(forge(&seen_task, "system", "t-a"))).await;
    assert_eq!(task_as_system, json!({"data": {"node": null}}), "{task_as_system}");

    for garbage in ["", "t-a", "not base64!", "VGFzazp0LWE"] {
        let answer = node(alice.clone(), json!(garbage)).await;
        assert_eq!(support::error_code(&answer).as_deref(), Some("VALIDATION"), "{garbage}: {answer}");
    }
    let anonymous = s.gql(None, NODE, json!({"id": seen[0]})).await;
    assert_eq!(support::error_code(&anonymous).as_deref(), Some("UNAUTHENTICATED"), "{anonymous}");
    s.stop();
}

/// A global id like `global` (type kept) for `owner`'s object `id`, built as the server builds
/// them (base64url of `<Type>:<owner length>:<owner>:<id>`).
fn forge(global: &str, owner: &str, id: &str) -> String {
    let plain = decode(global);
    let type_name = plain.split(':').next().unwrap_or_default();
    encode(&format!("{type_name}:{}:{owner}:{id}", owner.len()))
}

/// The object id inside a global id.
fn id_of(global: &str) -> String {
    decode(global).splitn(4, ':').nth(3).unwrap_or_default().to_string()
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding (written out here so the test does not trust the server's codec).
fn encode(plain: &str) -> String {
    let bytes = plain.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn decode(text: &str) -> String {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c).expect("base64url") as u32;
        bits = (bits << 6) | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    String::from_utf8(out).expect("utf-8")
}

both!(every_node_type_is_refetched_by_its_global_id as node_refetches_every_type);
