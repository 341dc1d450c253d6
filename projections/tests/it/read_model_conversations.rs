//! The conversations read model on both backends: topics, messages kept current through edits,
//! deletes and branch switches, threads, and the conversation tree served from the cache equal
//! to a fresh parse of the stored messages, before and after more messages arrive.

use crate::support;

use agentlog_domain::conversations::{ChatMessage, Conversation, ConversationCommand as C, ThreadKind};
use agentlog_eventlog::testing::TestLog;
use agentlog_projections::{conversations, page::PageRequest};
use serde_json::json;
use support::Harness;

const U: &str = "user-1";
const T: &str = "topic-1";

fn message(id: &str, role: &str, parent: Option<&str>, thread: Option<&str>) -> C {
    let m: ChatMessage = serde_json::from_value(json!({
        "messageId": id, "requestId": format!("req-{id}"), "role": role, "content": format!("text of {id}"),
        "parentId": parent, "threadId": thread,
    }))
    .unwrap();
    C::AppendMessage(m)
}

fn ids(rows: agentlog_conversation_flow::FlatList<'_>) -> Vec<String> {
    rows.iter().filter_map(|r| r.id().map(str::to_string)).collect()
}

/// The cached tree and a fresh parse of the stored rows agree.
async fn assert_tree_is_fresh(h: &Harness, trees: &conversations::ConversationTrees) -> Vec<String> {
    let cached = trees.tree(U, T).await.unwrap().expect("tree");
    let fresh = conversations::fresh_tree(&h.db, U, T).await.unwrap().expect("fresh tree");
    assert_eq!(cached.version, fresh.version);
    let as_json = |t: &conversations::TopicTree| serde_json::to_value(&t.result).unwrap();
    assert_eq!(as_json(&cached), as_json(&fresh));
    ids(cached.flat_list())
}

async fn conversations_fold_and_query(log: TestLog) {
    let mut h = Harness::new(log);
    h.exec::<Conversation>(
        U,
        T,
        C::Create { topic_id: T.into(), title: Some("Trip".into()), agent_id: Some("agent-a".into()), group_id: None },
    )
    .await;
    h.exec::<Conversation>(U, T, message("u1", "user", None, None)).await;
    h.exec::<Conversation>(U, T, message("a1", "assistant", Some("u1"), None)).await;
    h.exec::<Conversation>(U, T, message("u1", "user", None, None)).await; // same request id: nothing
    h.exec::<Conversation>(U, T, message("a1b", "assistant", Some("u1"), None)).await; // a second branch
    h.exec::<Conversation>(U, T, message("u2", "user", Some("a1"), None)).await;
    h.exec::<Conversation>(U, T, message("gone", "user", Some("u2"), None)).await;
    h.exec::<Conversation>(U, T, C::DeleteMessage { message_id: "gone".into() }).await;
    h.exec::<Conversation>(
        U,
        T,
        C::EditMessage {
            message_id: "u1".into(),
            content: Some("edited".into()),
            metadata: None,
            extra: Default::default(),
        },
    )
    .await;
    h.exec::<Conversation>(
        U,
        T,
        C::CreateThread {
            thread_id: "th-1".into(),
            source_message_id: "a1".into(),
            kind: ThreadKind::Continuation,
            title: Some("side".into()),
        },
    )
    .await;
    h.exec::<Conversation>(U, T, message("tm", "user", Some("a1"), Some("th-1"))).await;
    h.exec::<Conversation>(
        "user-2",
        "topic-2",
        C::Create { topic_id: "topic-2".into(), title: None, agent_id: None, group_id: None },
    )
    .await;
    h.sync().await;

    let db = &h.db;
    let topic = conversations::conversation(db, U, T).await.unwrap().expect("topic");
    assert_eq!((topic.title.as_deref(), topic.agent_id.as_deref()), (Some("Trip"), Some("agent-a")));
    assert_eq!(topic.message_count, 5, "u1, a1, a1b, u2, tm (gone is deleted)");
    assert!(conversations::conversation(db, "user-2", T).await.unwrap().is_none());
    assert_eq!(conversations::conversations(db, None, &PageRequest::default()).await.unwrap().items.len(), 2);

    let live = conversations::topic_messages(db, U, T, false, &PageRequest::default()).await.unwrap();
    let live_ids: Vec<&str> = live.items.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(live_ids, ["u1", "a1", "a1b", "u2", "tm"], "creation order, no duplicate, no deleted");
    let all = conversations::topic_messages(db, U, T, true, &PageRequest::first(3)).await.unwrap();
    assert!(all.has_next_page);
    let rest =
        conversations::topic_messages(db, U, T, true, &PageRequest::first(3).after(all.end_cursor)).await.unwrap();
    assert_eq!(rest.items.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["u2", "gone", "tm"]);
    assert!(rest.items[1].deleted);
    assert_eq!(live.items[0].message.get("content"), Some(&json!("edited")));
    assert_eq!(live.items[4].thread_id.as_deref(), Some("th-1"));
    let threads = conversations::topic_threads(db, U, T).await.unwrap();
    assert_eq!(
        threads.iter().map(|t| (t.thread_id.as_str(), t.source_message_id.as_str())).collect::<Vec<_>>(),
        [("th-1", "a1")]
    );
    assert!(conversations::topic_threads(db, "user-2", T).await.unwrap().is_empty());

    // the tree: u1's first branch (a1) is active until switched to a1b
    let trees = conversations::ConversationTrees::new(h.db.clone(), 10_000);
    let flat = assert_tree_is_fresh(&h, &trees).await;
    for id in ["u1", "a1", "u2"] {
        assert!(flat.iter().any(|f| f == id), "{id} on the active path: {flat:?}");
    }
    assert!(!flat.iter().any(|f| f == "a1b"), "the other branch is off the path: {flat:?}");
    h.exec::<Conversation>(U, T, C::SwitchBranch { message_id: "u1".into(), active_branch_index: 1 }).await;
    h.exec::<Conversation>(U, T, message("a2", "assistant", Some("a1b"), None)).await;
    h.sync().await;
    let switched = conversations::topic_messages(&h.db, U, T, false, &PageRequest::default()).await.unwrap();
    assert_eq!(switched.items[0].message.pointer("/metadata/activeBranchIndex"), Some(&json!(1)));
    let flat = assert_tree_is_fresh(&h, &trees).await;
    for id in ["u1", "a1b", "a2"] {
        assert!(flat.iter().any(|f| f == id), "{id} on the active path: {flat:?}");
    }
    assert!(!flat.iter().any(|f| f == "a1" || f == "u2"), "the other branch is off the path: {flat:?}");

    let before = conversations::topic_messages(&h.db, U, T, true, &PageRequest::default()).await.unwrap();
    let topic_before = conversations::conversation(&h.db, U, T).await.unwrap();
    h.rebuild().await;
    assert_eq!(before, conversations::topic_messages(&h.db, U, T, true, &PageRequest::default()).await.unwrap());
    assert_eq!(topic_before, conversations::conversation(&h.db, U, T).await.unwrap());
    // a rebuilt table is served fresh by a cache that saw the old one
    assert_tree_is_fresh(&h, &trees).await;
}

both!(conversations_fold_and_query as conversations_read_model);
