//! The LobeHub-shaped message object the conversation-flow parser reads, built from
//! `conversation.*` events, and the parser input of a topic.
//!
//! A message is `{id, role, content, parentId?, threadId?, agentId?, groupId?, tools?,
//! tool_call_id?, model?, provider?, metadata?, topicId, createdAt, updatedAt, …extra}`, times
//! in epoch milliseconds as upstream. `extra` (reasoning, error, usage, pluginState, …) passes
//! through but never overrides a field the log owns.
//!
//! Deleting is soft in the log (the row stays, flagged) and a deleted message is not parser
//! input. Its children lose their `parentId`, exactly as upstream's `messages.parent_id`
//! foreign key (`ON DELETE SET NULL`) leaves them: a front end renders what upstream would.

use std::collections::HashSet;

use agentlog_conversation_flow::Value as ParserValue;
use agentlog_domain::conversations::{ChatMessage, MessageEdited};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

/// Fields the log owns: `extra` never sets them.
const OWNED: &[&str] = &[
    "id",
    "role",
    "content",
    "parentId",
    "threadId",
    "agentId",
    "groupId",
    "tools",
    "tool_call_id",
    "model",
    "provider",
    "metadata",
    "topicId",
    "createdAt",
    "updatedAt",
];

fn set_opt(map: &mut Map<String, Value>, key: &str, value: Option<&String>) {
    if let Some(v) = value {
        map.insert(key.to_string(), Value::String(v.clone()));
    }
}

fn merge_extra(map: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (k, v) in extra {
        if !OWNED.contains(&k.as_str()) {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// The message a `conversation.message_appended` records.
pub(crate) fn appended(topic_id: &str, m: &ChatMessage, at: DateTime<Utc>) -> Map<String, Value> {
    let mut map = Map::new();
    merge_extra(&mut map, &m.extra);
    map.insert("id".into(), Value::String(m.message_id.clone()));
    map.insert("role".into(), Value::String(m.role.clone()));
    map.insert("content".into(), Value::String(m.content.clone()));
    set_opt(&mut map, "parentId", m.parent_id.as_ref());
    set_opt(&mut map, "threadId", m.thread_id.as_ref());
    set_opt(&mut map, "agentId", m.agent_id.as_ref());
    set_opt(&mut map, "groupId", m.group_id.as_ref());
    if let Some(tools) = &m.tools {
        map.insert("tools".into(), Value::Array(tools.clone()));
    }
    set_opt(&mut map, "tool_call_id", m.tool_call_id.as_ref());
    set_opt(&mut map, "model", m.model.as_ref());
    set_opt(&mut map, "provider", m.provider.as_ref());
    if let Some(metadata) = &m.metadata {
        map.insert("metadata".into(), metadata.clone());
    }
    map.insert("topicId".into(), Value::String(topic_id.to_string()));
    map.insert("createdAt".into(), json!(at.timestamp_millis()));
    map.insert("updatedAt".into(), json!(at.timestamp_millis()));
    map
}

/// Apply a `conversation.message_edited`.
pub(crate) fn edit(map: &mut Map<String, Value>, e: &MessageEdited) {
    if let Some(content) = &e.content {
        map.insert("content".into(), Value::String(content.clone()));
    }
    if let Some(metadata) = &e.metadata {
        map.insert("metadata".into(), metadata.clone());
    }
    merge_extra(map, &e.extra);
    map.insert("updatedAt".into(), json!(e.at.timestamp_millis()));
}

/// Apply a `conversation.branch_switched` to the parent message.
pub(crate) fn switch_branch(map: &mut Map<String, Value>, index: u32, at: DateTime<Utc>) {
    let metadata = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    if let Value::Object(m) = metadata {
        m.insert("activeBranchIndex".into(), json!(index));
    }
    map.insert("updatedAt".into(), json!(at.timestamp_millis()));
}

/// A stored message as the parser reads it, given the topic's deleted message ids: its
/// `parentId` is dropped when it names a deleted message.
pub(crate) fn parse_view(mut message: ParserValue, deleted: &HashSet<String>) -> ParserValue {
    let orphaned = message.get("parentId").and_then(ParserValue::as_str).is_some_and(|p| deleted.contains(p));
    if orphaned && let Some(m) = message.as_object_mut() {
        m.remove("parentId");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[test]
    fn extra_passes_through_but_never_overrides_owned_fields() {
        let mut m = ChatMessage {
            message_id: "m1".into(),
            role: "assistant".into(),
            content: "hi".into(),
            ..Default::default()
        };
        m.extra.insert("usage".into(), json!({"totalTokens": 3}));
        m.extra.insert("createdAt".into(), json!(1));
        m.extra.insert("id".into(), json!("evil"));
        let map = appended("t1", &m, at(1_700_000_000_000));
        assert_eq!(map["id"], "m1");
        assert_eq!(map["createdAt"], 1_700_000_000_000i64);
        assert_eq!(map["usage"]["totalTokens"], 3);
        assert_eq!(map["topicId"], "t1");
        assert!(!map.contains_key("parentId"));
    }

    #[test]
    fn branch_switch_sets_metadata_and_deleted_parents_are_cut() {
        let mut map = Map::new();
        map.insert("metadata".into(), json!("not an object"));
        switch_branch(&mut map, 2, at(5));
        assert_eq!(map["metadata"]["activeBranchIndex"], 2);
        let child = ParserValue::from(json!({"id": "c", "parentId": "gone"}));
        let deleted = HashSet::from(["gone".to_string()]);
        assert!(parse_view(child.clone(), &deleted).get("parentId").is_none());
        assert_eq!(parse_view(child, &HashSet::new()).get("parentId").and_then(ParserValue::as_str), Some("gone"));
    }
}
