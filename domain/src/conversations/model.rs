//! A conversation's value types: messages as appended, thread kinds, group kinds, and the facts a
//! decision keeps per message.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::DomainError;

/// At most this many unfinished background sub-agents per conversation.
pub const MAX_BACKGROUND_SUBAGENTS: usize = 3;

/// A message as appended (the fields the conversation-flow parser reads, plus pass-through).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    /// Its id.
    pub message_id: String,
    /// The client's request id (idempotency key of the append).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// `user`, `assistant`, `tool`, `system`, `task`, `taskCallback`, … (others pass through).
    pub role: String,
    /// Text content.
    #[serde(default)]
    pub content: String,
    /// Tree parent; `None` = root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Thread (side branch) it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Agent that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Chat group it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Operation that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// Tool calls of an assistant message (upstream `ChatToolPayload` objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// On a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Free metadata (`activeBranchIndex`, `compare`, `signal`, `usage`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Any other upstream fields (`reasoning`, `error`, `usage`, `pluginState`, …), passed through.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// How a thread relates to its source message (upstream thread types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadKind {
    /// Sees the main line up to its source message.
    Continuation,
    /// Sees only its source message.
    Standalone,
    /// Sees nothing of the main line.
    Isolation,
}

/// What a message group is for (upstream `message_groups.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageGroupKind {
    /// The members are summarised: the tree shows the group (`role: compressedGroup`) in their
    /// place, with its pinned members.
    Compression,
    /// The members are alternative answers to one message, shown as columns (`compare`).
    Parallel,
}

impl MessageGroupKind {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Compression => "compression",
            Self::Parallel => "parallel",
        }
    }
}

/// What a decision needs to know about one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageFacts {
    /// Role.
    pub role: String,
    /// Parent.
    pub parent_id: Option<String>,
    /// Thread.
    pub thread_id: Option<String>,
    /// Deleted.
    pub deleted: bool,
    /// Children that are not tool messages (the branch index space).
    pub non_tool_children: u32,
    /// The message group it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_group: Option<String>,
}

/// VALIDATION unless `value` has content.
pub(crate) fn non_empty(field: &str, value: &str) -> Result<(), DomainError> {
    if value.trim().is_empty() {
        return Err(DomainError::validation(field, "must not be empty"));
    }
    Ok(())
}
