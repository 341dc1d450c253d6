//! Folding `conversation.*` events into `conversation_topics`, `conversation_messages`,
//! `conversation_threads` and `conversation_message_groups`.
//!
//! A message row holds the LobeHub-shaped object the parser reads, kept current through edits,
//! deletes and branch switches. Every change stamps the row's `changed_at` and the topic's
//! `messages_version` with the event's position, which is how a cached tree knows what to
//! fetch (see `tree_cache`); a message group's creation or removal stamps it too. Nothing is parsed here: an append costs one row write whatever
//! the topic's size, and a rebuild runs at the speed of the log.

use agentlog_domain::{conversations::ConversationEvent as E, envelope::RecordedEvent};
use async_trait::async_trait;
use serde_json::Value;

use super::{
    message_groups::MessageGroupRow,
    message_json,
    rows::{ConversationRow, MessageRow, ThreadRow},
};
use crate::{
    db::ReadTx,
    decoding::{DecodedEvent, decode_owned_batch},
    error::ProjectionError,
    projection::Projection,
    staging::{Staged, TableRow},
};

/// Projects conversations: topics, messages, threads.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConversationsProjection;

#[derive(Default)]
struct Batch {
    topics: Staged<ConversationRow>,
    messages: Staged<MessageRow>,
    threads: Staged<ThreadRow>,
    groups: Staged<MessageGroupRow>,
}

/// The message an event changes, if it changes one that exists already.
fn changed_message(event: &E) -> Option<&str> {
    match event {
        E::MessageEdited(e) => Some(&e.message_id),
        E::MessageDeleted(e) => Some(&e.message_id),
        E::BranchSwitched(e) => Some(&e.message_id),
        _ => None,
    }
}

#[async_trait]
impl Projection for ConversationsProjection {
    fn name(&self) -> &'static str {
        "conversations"
    }
    fn version(&self) -> i32 {
        2
    }
    fn tables(&self) -> &'static [&'static str] {
        &[ConversationRow::TABLE, MessageRow::TABLE, ThreadRow::TABLE, MessageGroupRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        // Tracked operations are the operations read model's business.
        event_type.starts_with("conversation.") && event_type != "conversation.operation_attached"
    }
    fn bulk_kept_indexes(&self) -> &'static [&'static str] {
        // The tree cache reads a topic's messages changed since its cached version.
        &["conversation_messages_by_change"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        // Topic ids are per owner: every row is keyed by its stream's owner and topic.
        let decoded = decode_owned_batch::<E>(events)?;
        let mut b = Batch::default();
        b.topics.load_keys(tx, decoded.iter().map(|(_, key, _)| key.clone())).await?;
        let changed = decoded.iter().filter_map(|(_, (owner, topic), e)| {
            changed_message(e).map(|m| (owner.clone(), topic.clone(), m.to_string()))
        });
        b.messages.load_keys(tx, changed).await?;
        for (recorded, key, event) in &decoded {
            fold(&mut b, recorded, key, event);
        }
        b.topics.flush(tx).await?;
        b.messages.flush(tx).await?;
        b.threads.flush(tx).await?;
        b.groups.flush(tx).await
    }
}

fn fold(b: &mut Batch, recorded: &RecordedEvent, key: &(String, String), event: &E) {
    let at = recorded.recorded_at;
    let position = recorded.position;
    let (owner, topic_id) = (&key.0, key.1.as_str());
    let topic_key = key.clone();
    if b.topics.get(&topic_key).is_none() {
        // A topic is created first; should a stream ever start otherwise, the row still exists.
        b.topics.put(ConversationRow {
            topic_id: topic_id.to_string(),
            user_id: owner.clone(),
            title: None,
            agent_id: None,
            group_id: None,
            message_count: 0,
            messages_version: 0,
            created_at: at,
            updated_at: at,
        });
    }
    let mut messages_changed = false;
    let mut count_delta = 0;
    match event {
        E::Created(e) => {
            // The row's owner stays the stream's: the key it is loaded by next time.
            if let Some(t) = b.topics.get_mut(&topic_key) {
                t.title = e.title.clone();
                t.agent_id = e.agent_id.clone();
                t.group_id = e.group_id.clone();
                t.created_at = e.at;
            }
        }
        E::MessageAppended(e) => {
            let m = &e.message;
            b.messages.put(MessageRow {
                topic_id: topic_id.to_string(),
                message_id: m.message_id.clone(),
                user_id: owner.clone(),
                seq: position,
                role: m.role.clone(),
                parent_id: m.parent_id.clone(),
                thread_id: m.thread_id.clone(),
                message: Value::Object(message_json::appended(topic_id, m, e.at)),
                deleted: false,
                created_at: e.at,
                updated_at: e.at,
                changed_at: position,
            });
            messages_changed = true;
            count_delta = 1;
        }
        E::MessageEdited(e) => {
            if let Some(row) = b.messages.get_mut(&(owner.clone(), topic_id.to_string(), e.message_id.clone())) {
                if let Value::Object(map) = &mut row.message {
                    message_json::edit(map, e);
                }
                row.updated_at = e.at;
                row.changed_at = position;
                messages_changed = true;
            }
        }
        E::MessageDeleted(e) => {
            if let Some(row) = b.messages.get_mut(&(owner.clone(), topic_id.to_string(), e.message_id.clone()))
                && !row.deleted
            {
                row.deleted = true;
                row.changed_at = position;
                messages_changed = true;
                count_delta = -1;
            }
        }
        E::BranchSwitched(e) => {
            if let Some(row) = b.messages.get_mut(&(owner.clone(), topic_id.to_string(), e.message_id.clone())) {
                if let Value::Object(map) = &mut row.message {
                    message_json::switch_branch(map, e.active_branch_index, e.at);
                }
                row.updated_at = e.at;
                row.changed_at = position;
                messages_changed = true;
            }
        }
        E::ThreadCreated(e) => b.threads.put(ThreadRow {
            topic_id: topic_id.to_string(),
            thread_id: e.thread_id.clone(),
            user_id: owner.clone(),
            source_message_id: e.source_message_id.clone(),
            kind: e.kind,
            title: e.title.clone(),
            created_at: e.at,
        }),
        E::MessageGroupCreated(e) => {
            b.groups.put(MessageGroupRow::created(topic_id, owner.clone(), position, e));
            messages_changed = true;
        }
        E::MessageGroupRemoved(e) => {
            b.groups.remove(&(owner.clone(), topic_id.to_string(), e.group_id.clone()));
            messages_changed = true;
        }
        E::OperationAttached(_) => {}
    }
    if let Some(t) = b.topics.get_mut(&topic_key) {
        if messages_changed {
            t.messages_version = position;
            t.message_count += count_delta;
        }
        t.updated_at = at;
    }
}
