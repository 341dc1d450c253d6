//! The rows of the conversations read model: topics, their messages (the parser's input) and
//! threads.

use agentlog_domain::conversations::ThreadKind;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::{
    columns::{Columns, from_wire_name, micros, wire_name},
    db::{Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A conversation (a topic).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationRow {
    /// The topic id.
    pub topic_id: String,
    /// Owner.
    pub user_id: String,
    /// Title.
    pub title: Option<String>,
    /// The agent it talks to.
    pub agent_id: Option<String>,
    /// The chat group it belongs to.
    pub group_id: Option<String>,
    /// Messages not deleted.
    pub message_count: i64,
    /// Log position of the last change to any of its messages (the tree's version).
    pub messages_version: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
}

impl TableRow for ConversationRow {
    /// (owner, topic): topic ids are per owner.
    type Key = (String, String);
    const TABLE: &'static str = "conversation_topics";
    const COLUMNS: &'static [&'static str] = &[
        "topic_id",
        "user_id",
        "title",
        "agent_id",
        "group_id",
        "message_count",
        "messages_version",
        "created_at",
        "updated_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "topic_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.topic_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.topic_id.as_str().into(),
            self.user_id.as_str().into(),
            self.title.as_deref().into(),
            self.agent_id.as_deref().into(),
            self.group_id.as_deref().into(),
            self.message_count.into(),
            self.messages_version.into(),
            micros(self.created_at),
            micros(self.updated_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            topic_id: c.text()?,
            user_id: c.text()?,
            title: c.opt_text(),
            agent_id: c.opt_text(),
            group_id: c.opt_text(),
            message_count: c.int()?,
            messages_version: c.int()?,
            created_at: c.time()?,
            updated_at: c.time()?,
        })
    }
}

/// One message of a topic.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRow {
    /// The topic.
    pub topic_id: String,
    /// The message.
    pub message_id: String,
    /// Owner.
    pub user_id: String,
    /// Log position of its append: the topic's creation order.
    pub seq: i64,
    /// Role.
    pub role: String,
    /// Tree parent as appended.
    pub parent_id: Option<String>,
    /// Thread it belongs to.
    pub thread_id: Option<String>,
    /// The LobeHub-shaped message object the parser reads.
    pub message: Value,
    /// Deleted (soft: kept for audit, not parser input).
    pub deleted: bool,
    /// Appended.
    pub created_at: DateTime<Utc>,
    /// Last edited (or appended).
    pub updated_at: DateTime<Utc>,
    /// Log position of its last change.
    pub changed_at: i64,
}

impl TableRow for MessageRow {
    /// (owner, topic, message).
    type Key = (String, String, String);
    const TABLE: &'static str = "conversation_messages";
    const COLUMNS: &'static [&'static str] = &[
        "topic_id",
        "message_id",
        "user_id",
        "seq",
        "role",
        "parent_id",
        "thread_id",
        "message",
        "deleted",
        "created_at",
        "updated_at",
        "changed_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "topic_id", "message_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.topic_id.clone(), self.message_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.topic_id.as_str().into(),
            self.message_id.as_str().into(),
            self.user_id.as_str().into(),
            self.seq.into(),
            self.role.as_str().into(),
            self.parent_id.as_deref().into(),
            self.thread_id.as_deref().into(),
            (&self.message).into(),
            self.deleted.into(),
            micros(self.created_at),
            micros(self.updated_at),
            self.changed_at.into(),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            topic_id: c.text()?,
            message_id: c.text()?,
            user_id: c.text()?,
            seq: c.int()?,
            role: c.text()?,
            parent_id: c.opt_text(),
            thread_id: c.opt_text(),
            message: c.json()?,
            deleted: c.flag()?,
            created_at: c.time()?,
            updated_at: c.time()?,
            changed_at: c.int()?,
        })
    }
}

/// A thread (side branch) of a topic.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRow {
    /// The topic.
    pub topic_id: String,
    /// The thread.
    pub thread_id: String,
    /// The topic's owner.
    pub user_id: String,
    /// The message it branches from.
    pub source_message_id: String,
    /// Continuation, standalone or isolation.
    pub kind: ThreadKind,
    /// Title.
    pub title: Option<String>,
    /// Opened.
    pub created_at: DateTime<Utc>,
}

impl TableRow for ThreadRow {
    /// (owner, topic, thread).
    type Key = (String, String, String);
    const TABLE: &'static str = "conversation_threads";
    const COLUMNS: &'static [&'static str] =
        &["topic_id", "thread_id", "user_id", "source_message_id", "kind", "title", "created_at"];
    const KEY: &'static [&'static str] = &["user_id", "topic_id", "thread_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.topic_id.clone(), self.thread_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.topic_id.as_str().into(),
            self.thread_id.as_str().into(),
            self.user_id.as_str().into(),
            self.source_message_id.as_str().into(),
            wire_name(&self.kind).into(),
            self.title.as_deref().into(),
            micros(self.created_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            topic_id: c.text()?,
            thread_id: c.text()?,
            user_id: c.text()?,
            source_message_id: c.text()?,
            kind: from_wire_name(Self::TABLE, &c.text()?)?,
            title: c.opt_text(),
            created_at: c.time()?,
        })
    }
}
