//! Queries over the conversations read model. Topic ids are per owner: a topic is named with
//! its owner; the list is owner-scoped (`owner: None` = admin).

use super::{
    message_groups::{MessageGroupRow, topic_groups},
    rows::{ConversationRow, MessageRow, ThreadRow},
    tree_cache::{TopicInput, TopicTree, changed_messages, topic_version},
};
use crate::{
    db::ReadDb,
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    select::{Order, Select},
    staging::TableRow,
};

/// `owner`'s conversation `topic_id`.
pub async fn conversation(
    db: &ReadDb,
    owner: &str,
    topic_id: &str,
) -> Result<Option<ConversationRow>, ProjectionError> {
    let mut q = Select::new(ConversationRow::COLUMNS, ConversationRow::TABLE);
    q.eq("user_id", owner).eq("topic_id", topic_id);
    q.one(db).await?.as_ref().map(ConversationRow::from_row).transpose()
}

/// Conversations, newest first.
pub async fn conversations(
    db: &ReadDb,
    owner: Option<&str>,
    page: &PageRequest,
) -> Result<Page<ConversationRow>, ProjectionError> {
    let mut q = Select::new(ConversationRow::COLUMNS, ConversationRow::TABLE);
    q.owner(owner);
    q.page(db, "created_at", "topic_id", Order::Desc, page, ConversationRow::from_row, |c| {
        Cursor::new(c.created_at.timestamp_micros(), &c.topic_id)
    })
    .await
}

/// The messages of `owner`'s topic in creation order (deleted ones only when asked for).
pub async fn topic_messages(
    db: &ReadDb,
    owner: &str,
    topic_id: &str,
    include_deleted: bool,
    page: &PageRequest,
) -> Result<Page<MessageRow>, ProjectionError> {
    let mut q = Select::new(MessageRow::COLUMNS, MessageRow::TABLE);
    q.eq("user_id", owner).eq("topic_id", topic_id);
    if !include_deleted {
        q.condition("deleted = 0");
    }
    q.page(db, "seq", "message_id", Order::Asc, page, MessageRow::from_row, |m| Cursor::new(m.seq, &m.message_id)).await
}

/// The threads of `owner`'s topic, in the order they were opened.
pub async fn topic_threads(db: &ReadDb, owner: &str, topic_id: &str) -> Result<Vec<ThreadRow>, ProjectionError> {
    let mut q = Select::new(ThreadRow::COLUMNS, ThreadRow::TABLE);
    q.eq("user_id", owner).eq("topic_id", topic_id);
    q.all(db, "created_at, thread_id").await?.iter().map(ThreadRow::from_row).collect()
}

/// The message groups of `owner`'s topic, in the order they were created.
pub async fn topic_message_groups(
    db: &ReadDb,
    owner: &str,
    topic_id: &str,
) -> Result<Vec<MessageGroupRow>, ProjectionError> {
    topic_groups(db, owner, topic_id).await
}

/// The parser input of a topic's messages (any order; deleted ones included): the live
/// messages in creation order, each as the parser reads it.
pub fn parse_input(messages: &[MessageRow]) -> Vec<agentlog_conversation_flow::Value> {
    let mut sorted: Vec<&MessageRow> = messages.iter().collect();
    sorted.sort_by_key(|m| m.seq);
    let mut input = TopicInput::default();
    input.apply(
        sorted
            .into_iter()
            .map(|m| super::tree_cache::ChangedMessage {
                seq: m.seq,
                message_id: m.message_id.clone(),
                deleted: m.deleted,
                message: m.message.clone(),
                changed_at: m.changed_at,
            })
            .collect(),
    );
    std::sync::Arc::unwrap_or_clone(input.messages)
}

/// A topic's tree parsed from all its stored messages, bypassing any cache (for verification
/// and as the baseline the cache is measured against).
pub async fn fresh_tree(db: &ReadDb, owner: &str, topic_id: &str) -> Result<Option<TopicTree>, ProjectionError> {
    let Some(version) = topic_version(db, owner, topic_id).await? else { return Ok(None) };
    let mut input = TopicInput::default();
    input.apply(changed_messages(db, owner, topic_id, 0).await?);
    input.groups = topic_groups(db, owner, topic_id).await?;
    Ok(Some(TopicTree::new(topic_id.to_string(), input.version.max(version), input.parse(topic_id))))
}
