//! What a conversation records.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::model::{ChatMessage, MessageGroupKind, ThreadKind};
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::operations::OperationKind;

/// `conversation.created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationCreated {
    /// Topic id.
    pub topic_id: String,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `conversation.message_appended`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageAppended {
    /// The message.
    #[serde(flatten)]
    pub message: ChatMessage,
    /// When (the message's createdAt).
    pub at: DateTime<Utc>,
}

/// `conversation.message_edited`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageEdited {
    /// The message.
    pub message_id: String,
    /// New content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// New metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Extra fields set.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// When (the message's updatedAt).
    pub at: DateTime<Utc>,
}

/// `conversation.message_deleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageDeleted {
    /// The message.
    pub message_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `conversation.branch_switched`: sets `metadata.activeBranchIndex` on the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSwitched {
    /// The parent message.
    pub message_id: String,
    /// The new index.
    pub active_branch_index: u32,
    /// When.
    pub at: DateTime<Utc>,
}

/// `conversation.thread_created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadCreated {
    /// The thread.
    pub thread_id: String,
    /// Its source message.
    pub source_message_id: String,
    /// Its kind.
    pub kind: ThreadKind,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `conversation.message_group_created`: messages grouped (upstream `message_groups`), one group
/// per message at most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageGroupCreated {
    /// The group (in the topic's message id space).
    pub group_id: String,
    /// Compression or parallel.
    pub kind: MessageGroupKind,
    /// Its members, as the command listed them.
    pub message_ids: Vec<String>,
    /// Compression: members shown beside the summary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_message_ids: Vec<String>,
    /// Parallel: the message the members answer (their common parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
    /// Compression: the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Parallel: title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Parallel: description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Compression: metadata (a JSON object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// When (the group's createdAt).
    pub at: DateTime<Utc>,
}

/// `conversation.message_group_removed`: the members are ungrouped (upstream's cancelled
/// compression).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageGroupRemoved {
    /// The group.
    pub group_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `conversation.operation_attached`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationAttached {
    /// The operation.
    pub operation_id: String,
    /// Its kind.
    pub kind: OperationKind,
    /// A background sub-agent.
    pub background: bool,
    /// Tracked operations found finished and dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<String>,
}

crate::domain_events! {
    /// Everything a conversation records.
    pub enum ConversationEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// Opened.
        Created(ConversationCreated) = "conversation.created" v 1,
        /// A message was appended.
        MessageAppended(MessageAppended) = "conversation.message_appended" v 1,
        /// A message was edited.
        MessageEdited(MessageEdited) = "conversation.message_edited" v 1,
        /// A message was deleted.
        MessageDeleted(MessageDeleted) = "conversation.message_deleted" v 1,
        /// A parent's active branch changed.
        BranchSwitched(BranchSwitched) = "conversation.branch_switched" v 1,
        /// A thread was opened.
        ThreadCreated(ThreadCreated) = "conversation.thread_created" v 1,
        /// Messages were grouped.
        MessageGroupCreated(MessageGroupCreated) = "conversation.message_group_created" v 1,
        /// A message group was removed.
        MessageGroupRemoved(MessageGroupRemoved) = "conversation.message_group_removed" v 1,
        /// An operation is tracked.
        OperationAttached(OperationAttached) = "conversation.operation_attached" v 1,
    }
}
