//! A topic's message groups (`conversation_message_groups`) and how they reach the parser, as
//! upstream LobeHub's message query hands its groups to `parse(messages, messageGroups)`:
//!
//! - A **compression** group's members leave the message list. In their place the list gets
//!   one `role: "compressedGroup"` row `{compressedMessages, content, createdAt, id,
//!   lastMessageId, metadata, pinnedMessages, role, topicId, updatedAt}`: `compressedMessages`
//!   is the members' own parsed `flatList`, `lastMessageId` the newest member (the parser
//!   re-parents its children under the group), `pinnedMessages` the pinned members as `{content,
//!   createdAt, id, model, provider, role}`. The row sorts in by its `createdAt` (the group's
//!   creation), after messages of the same millisecond, as upstream's stable sort puts it.
//! - A **parallel** group is a `messageGroups` entry `{id, mode: "compare", parentMessageId,
//!   title, description}`, and each member's `groupId` names it (the field upstream's parser
//!   matches groups by). The members' parent gets `metadata.compare: true`, upstream's compare
//!   mode: its children render as the columns of one `compare` node, and the conversation goes
//!   on under the column marked `metadata.activeColumn`. (Without it upstream's parser shows
//!   sibling members as branches, each holding a copy of the compare node.)
//!
//! Members that were deleted are gone from their group, as upstream's deleted rows are.

use std::collections::{HashMap, HashSet};

use agentlog_conversation_flow::{Map as ParserMap, Value as ParserValue, parse, value};
use agentlog_domain::conversations::{MessageGroupCreated, MessageGroupKind};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::{
    columns::{Columns, from_wire_name, json_text, micros, opt_json_text, wire_name},
    db::{ReadDb, Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A message group of a topic.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageGroupRow {
    /// The topic.
    pub topic_id: String,
    /// The group.
    pub group_id: String,
    /// Owner.
    pub user_id: String,
    /// Log position of its creation.
    pub seq: i64,
    /// Compression or parallel.
    pub kind: MessageGroupKind,
    /// Its members, as created.
    pub message_ids: Vec<String>,
    /// Compression: members shown beside the summary.
    pub pinned_message_ids: Vec<String>,
    /// Parallel: the message its members answer.
    pub parent_message_id: Option<String>,
    /// Compression: the summary.
    pub content: Option<String>,
    /// Parallel: title.
    pub title: Option<String>,
    /// Parallel: description.
    pub description: Option<String>,
    /// Compression: metadata.
    pub metadata: Option<Value>,
    /// Created.
    pub created_at: DateTime<Utc>,
}

impl MessageGroupRow {
    /// The row a `conversation.message_group_created` records.
    pub(crate) fn created(topic_id: &str, user_id: String, seq: i64, e: &MessageGroupCreated) -> Self {
        Self {
            topic_id: topic_id.to_string(),
            group_id: e.group_id.clone(),
            user_id,
            seq,
            kind: e.kind,
            message_ids: e.message_ids.clone(),
            pinned_message_ids: e.pinned_message_ids.clone(),
            parent_message_id: e.parent_message_id.clone(),
            content: e.content.clone(),
            title: e.title.clone(),
            description: e.description.clone(),
            metadata: e.metadata.clone(),
            created_at: e.at,
        }
    }
}

impl TableRow for MessageGroupRow {
    /// (owner, topic, group): topic ids are per owner.
    type Key = (String, String, String);
    const TABLE: &'static str = "conversation_message_groups";
    const COLUMNS: &'static [&'static str] = &[
        "topic_id",
        "group_id",
        "user_id",
        "seq",
        "kind",
        "message_ids",
        "pinned_message_ids",
        "parent_message_id",
        "content",
        "title",
        "description",
        "metadata",
        "created_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "topic_id", "group_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.topic_id.clone(), self.group_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.topic_id.as_str().into(),
            self.group_id.as_str().into(),
            self.user_id.as_str().into(),
            self.seq.into(),
            wire_name(&self.kind).into(),
            json_text(&self.message_ids),
            json_text(&self.pinned_message_ids),
            self.parent_message_id.as_deref().into(),
            self.content.as_deref().into(),
            self.title.as_deref().into(),
            self.description.as_deref().into(),
            opt_json_text(self.metadata.as_ref()),
            micros(self.created_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            topic_id: c.text()?,
            group_id: c.text()?,
            user_id: c.text()?,
            seq: c.int()?,
            kind: from_wire_name(Self::TABLE, &c.text()?)?,
            message_ids: c.json()?,
            pinned_message_ids: c.json()?,
            parent_message_id: c.opt_text(),
            content: c.opt_text(),
            title: c.opt_text(),
            description: c.opt_text(),
            metadata: c.opt_json()?,
            created_at: c.time()?,
        })
    }
}

/// The groups of `owner`'s topic `topic_id`, in the order they were created.
pub(crate) async fn topic_groups(
    db: &ReadDb,
    owner: &str,
    topic_id: &str,
) -> Result<Vec<MessageGroupRow>, ProjectionError> {
    let sql = format!(
        "SELECT {} FROM {} WHERE user_id = $1 AND topic_id = $2 ORDER BY seq",
        MessageGroupRow::COLUMNS.join(", "),
        MessageGroupRow::TABLE
    );
    db.fetch(&sql, &[owner.into(), topic_id.into()]).await?.iter().map(MessageGroupRow::from_row).collect()
}

/// The parser's arguments for a topic with groups: the message list (compressed members
/// replaced by their group's row, parallel members naming their group) and `messageGroups`.
pub(crate) struct GroupedInput {
    /// `messages`.
    pub(crate) messages: Vec<ParserValue>,
    /// `messageGroups`.
    pub(crate) message_groups: Vec<ParserValue>,
}

fn id_of(m: &ParserValue) -> &str {
    m.get("id").and_then(ParserValue::as_str).unwrap_or_default()
}

fn created_at(m: &ParserValue) -> f64 {
    m.get("createdAt").and_then(ParserValue::as_f64).unwrap_or(0.0)
}

fn string(s: &str) -> ParserValue {
    ParserValue::String(s.to_string())
}

/// The members' parsed flat list, as a value that keeps upstream's key order and numbers.
fn flat_list_value(members: &[ParserValue]) -> ParserValue {
    let mut text = Vec::new();
    // Writing to memory does not fail, and the parser writes valid JSON; should either ever
    // fail, the group shows with no compressed messages rather than failing the tree.
    if parse(members, None).write_flat_list_json(&mut text).is_err() {
        return ParserValue::Array(Vec::new());
    }
    std::str::from_utf8(&text).ok().and_then(|t| value::from_str(t).ok()).unwrap_or(ParserValue::Array(Vec::new()))
}

/// A pinned member as upstream lists it: `{content, createdAt, id, model, provider, role}`,
/// fields it lacks left out.
fn pinned(m: &ParserValue) -> ParserValue {
    let mut out = ParserMap::new();
    for key in ["content", "createdAt", "id", "model", "provider", "role"] {
        if let Some(v) = m.get(key) {
            out.insert(key.to_string(), v.clone());
        }
    }
    ParserValue::Object(out)
}

fn compressed_group(topic_id: &str, group: &MessageGroupRow, members: &[ParserValue]) -> ParserValue {
    let at = ParserValue::from(group.created_at.timestamp_millis());
    let pins: HashSet<&str> = group.pinned_message_ids.iter().map(String::as_str).collect();
    let mut row = ParserMap::new();
    row.insert("compressedMessages".into(), flat_list_value(members));
    if let Some(content) = &group.content {
        row.insert("content".into(), string(content));
    }
    row.insert("createdAt".into(), at.clone());
    row.insert("id".into(), string(&group.group_id));
    if let Some(last) = members.last() {
        row.insert("lastMessageId".into(), string(id_of(last)));
    }
    if let Some(metadata) = &group.metadata {
        row.insert("metadata".into(), ParserValue::from(metadata.clone()));
    }
    let pinned_rows = members.iter().filter(|m| pins.contains(id_of(m))).map(pinned).collect();
    row.insert("pinnedMessages".into(), ParserValue::Array(pinned_rows));
    row.insert("role".into(), string("compressedGroup"));
    row.insert("topicId".into(), string(topic_id));
    row.insert("updatedAt".into(), at);
    ParserValue::Object(row)
}

/// `m` with `metadata.compare: true`, as `{...m, metadata: {...m.metadata, compare: true}}`
/// builds it (other metadata kept, in place).
fn in_compare_mode(mut m: ParserValue) -> ParserValue {
    if let Some(map) = m.as_object_mut() {
        let mut metadata = match map.get("metadata") {
            Some(ParserValue::Object(old)) => old.clone(),
            _ => ParserMap::new(),
        };
        metadata.insert("compare".into(), ParserValue::Bool(true));
        map.insert("metadata".into(), ParserValue::Object(metadata));
    }
    m
}

fn compare_entry(group: &MessageGroupRow) -> ParserValue {
    let mut entry = ParserMap::new();
    entry.insert("id".into(), string(&group.group_id));
    entry.insert("mode".into(), string("compare"));
    let optional =
        [("parentMessageId", &group.parent_message_id), ("title", &group.title), ("description", &group.description)];
    for (key, v) in optional {
        if let Some(v) = v {
            entry.insert(key.into(), string(v));
        }
    }
    ParserValue::Object(entry)
}

/// The parser's arguments for `messages` (live, in creation order, as the parser reads them)
/// under `groups` (in creation order).
pub(crate) fn grouped_input(topic_id: &str, messages: &[ParserValue], groups: &[MessageGroupRow]) -> GroupedInput {
    let member_of: HashMap<&str, &MessageGroupRow> =
        groups.iter().flat_map(|g| g.message_ids.iter().map(move |id| (id.as_str(), g))).collect();
    let compared: HashSet<&str> = groups
        .iter()
        .filter(|g| g.kind == MessageGroupKind::Parallel)
        .filter_map(|g| g.parent_message_id.as_deref())
        .collect();
    let mut members: HashMap<&str, Vec<ParserValue>> = HashMap::new();
    let mut list = Vec::with_capacity(messages.len());
    for m in messages {
        match member_of.get(id_of(m)) {
            None if compared.contains(id_of(m)) => list.push(in_compare_mode(m.clone())),
            Some(g) if g.kind == MessageGroupKind::Compression => {
                members.entry(g.group_id.as_str()).or_default().push(m.clone());
            }
            Some(g) => {
                let mut m = m.clone();
                if let Some(map) = m.as_object_mut() {
                    map.insert("groupId".into(), string(&g.group_id));
                }
                list.push(m);
            }
            None => list.push(m.clone()),
        }
    }
    let mut rows: Vec<ParserValue> = groups
        .iter()
        .filter(|g| g.kind == MessageGroupKind::Compression)
        .map(|g| compressed_group(topic_id, g, members.get(g.group_id.as_str()).map_or(&[], Vec::as_slice)))
        .collect();
    // Upstream appends the groups to the messages and sorts stably by createdAt: each group
    // goes after every message of its millisecond or before.
    rows.sort_by(|a, b| created_at(a).total_cmp(&created_at(b)));
    let mut merged = Vec::with_capacity(list.len() + rows.len());
    let mut rows = rows.into_iter().peekable();
    for m in list {
        while rows.peek().is_some_and(|r| created_at(r) < created_at(&m)) {
            merged.extend(rows.next());
        }
        merged.push(m);
    }
    merged.extend(rows);
    let message_groups = groups.iter().filter(|g| g.kind == MessageGroupKind::Parallel).map(compare_entry).collect();
    GroupedInput { messages: merged, message_groups }
}
