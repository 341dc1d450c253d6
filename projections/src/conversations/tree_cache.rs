//! Conversation trees served from memory, refreshed from only the messages that changed.
//!
//! Each cached topic keeps the parser's input (its live messages in creation order, as the
//! parser reads them) and the parse result, at a version: the log position of the last message
//! change it has seen. Serving a tree costs one indexed lookup of the topic's
//! `messages_version`; when it moved, only rows with `changed_at` above the cached version are
//! fetched, folded into the input, and the topic is parsed again. One appended message in a
//! 10,000-message topic therefore costs one row read and one parse, never a re-read of the
//! topic (figures: BENCHMARKS.md, "Conversation parse", one appended message). The tree shares
//! the cached input (`Arc`) instead of copying it: the parse result only points into it, and
//! the next refresh updates the input in place once no reader holds the previous tree.
//!
//! A topic's message groups (`message_groups`) are read again whenever its version moved, since
//! a group's creation or removal moves it too, and become the parser's compressed-group rows
//! and `messageGroups` argument. A topic without groups is parsed straight from the cached
//! input; one with groups from a grouped copy of it.
//!
//! Topics are evicted least recently used first once the cached messages exceed the capacity.
//! The cache is per process and holds nothing the tables do not: a stale or evicted entry only
//! costs a reload, and a version that went backwards (a rebuild) drops the entry.
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::conversations::ConversationTrees;
//! let trees = ConversationTrees::new(db, 200_000);
//! if let Some(tree) = trees.tree("user-1", "topic-1").await? {
//!     println!("{} rows in the flat list", tree.flat_list().len());
//! }
//! # Ok(()) }
//! ```

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, OnceLock},
};

use agentlog_conversation_flow::{ContextNode, FlatList, ParseResult, Value as ParserValue, parse_shared};
use serde_json::Value;

use super::{
    message_groups::{GroupedInput, MessageGroupRow, grouped_input, topic_groups},
    message_json::parse_view,
};
use crate::{
    columns::Columns,
    db::{ReadDb, SqlValue},
    error::ProjectionError,
};

/// A topic's parsed tree at a version.
#[derive(Debug)]
pub struct TopicTree {
    /// The topic.
    pub topic_id: String,
    /// Log position of the last message change the tree reflects.
    pub version: i64,
    /// The parse result (`contextTree`, `flatList`, `messageMap`, diagnostics).
    pub result: ParseResult<'static>,
    /// The result as JSON, written on first use and then served as is.
    json: OnceLock<Result<TreeJson, String>>,
}

/// A parsed tree's parts as compact JSON (numbers as JavaScript writes them), written once per
/// tree version.
#[derive(Debug)]
pub struct TreeJson {
    /// `contextTree`.
    pub context_tree: Box<[u8]>,
    /// `flatList`.
    pub flat_list: Box<[u8]>,
    /// `messageMap`.
    pub message_map: Box<[u8]>,
    /// The parser's diagnostics (`[{kind, …}]`).
    pub diagnostics: Box<[u8]>,
}

impl TreeJson {
    fn write(result: &ParseResult<'_>) -> Result<TreeJson, String> {
        let part = |f: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
            let mut buf = Vec::new();
            f(&mut buf).map(|()| buf.into_boxed_slice()).map_err(|e| e.to_string())
        };
        Ok(TreeJson {
            context_tree: part(&|b| result.write_context_tree_json(b))?,
            flat_list: part(&|b| result.write_flat_list_json(b))?,
            message_map: part(&|b| result.write_message_map_json(b))?,
            diagnostics: serde_json::to_vec(&result.diagnostics).map_err(|e| e.to_string())?.into_boxed_slice(),
        })
    }
}

impl TopicTree {
    /// A tree over a parse result at a version.
    pub fn new(topic_id: String, version: i64, result: ParseResult<'static>) -> TopicTree {
        TopicTree { topic_id, version, result, json: OnceLock::new() }
    }

    /// The tree as JSON: written by the first caller, shared by every later one.
    pub fn json(&self) -> Result<&TreeJson, String> {
        self.json.get_or_init(|| TreeJson::write(&self.result)).as_ref().map_err(Clone::clone)
    }

    /// Upstream's `contextTree`.
    pub fn context_tree(&self) -> &[ContextNode] {
        &self.result.context_tree
    }
    /// Upstream's `flatList`.
    pub fn flat_list(&self) -> FlatList<'_> {
        self.result.flat_list()
    }
}

/// One message as the cache receives it.
pub(crate) struct ChangedMessage {
    pub(crate) seq: i64,
    pub(crate) message_id: String,
    pub(crate) deleted: bool,
    pub(crate) message: Value,
    pub(crate) changed_at: i64,
}

const CHANGE_COLUMNS: &[&str] = &["seq", "message_id", "deleted", "message", "changed_at"];

/// The parser input of one topic, kept current from changed rows.
#[derive(Default)]
pub(crate) struct TopicInput {
    /// Live messages in creation order, as the parser reads them (shared with the tree parsed
    /// from them; changed in place when no reader holds that tree any more, else copied).
    pub(crate) messages: Arc<Vec<ParserValue>>,
    seqs: Vec<i64>,
    index: HashMap<String, usize>,
    deleted: HashSet<String>,
    /// The topic's message groups, in creation order.
    pub(crate) groups: Vec<MessageGroupRow>,
    /// The highest `changed_at` folded in.
    pub(crate) version: i64,
}

impl TopicInput {
    /// Parse the input: with its groups when it has any.
    pub(crate) fn parse(&self, topic_id: &str) -> ParseResult<'static> {
        if self.groups.is_empty() {
            return parse_shared(Arc::clone(&self.messages), None);
        }
        let GroupedInput { messages, message_groups } = grouped_input(topic_id, &self.messages, &self.groups);
        parse_shared(Arc::new(messages), Some(&message_groups))
    }

    /// Fold changed rows (in `seq` order) into the input.
    pub(crate) fn apply(&mut self, rows: Vec<ChangedMessage>) {
        if rows.is_empty() {
            return;
        }
        let messages = Arc::make_mut(&mut self.messages);
        let newly_deleted: HashSet<String> = rows
            .iter()
            .filter(|r| r.deleted && self.deleted.insert(r.message_id.clone()))
            .map(|r| r.message_id.clone())
            .collect();
        if !newly_deleted.is_empty() {
            // Rare: drop the deleted messages and cut their children loose, then re-index.
            let mut kept = Vec::with_capacity(messages.len());
            let mut seqs = Vec::with_capacity(self.seqs.len());
            for (m, s) in messages.drain(..).zip(self.seqs.drain(..)) {
                let id = m.get("id").and_then(ParserValue::as_str).unwrap_or_default();
                if !newly_deleted.contains(id) {
                    kept.push(parse_view(m, &newly_deleted));
                    seqs.push(s);
                }
            }
            *messages = kept;
            self.seqs = seqs;
            self.index = index_of(messages);
        }
        for row in rows {
            self.version = self.version.max(row.changed_at);
            if row.deleted {
                continue;
            }
            let view = parse_view(ParserValue::from(row.message), &self.deleted);
            match self.index.get(&row.message_id) {
                Some(&i) => messages[i] = view,
                None if self.seqs.last().is_none_or(|&last| last < row.seq) => {
                    self.index.insert(row.message_id, messages.len());
                    messages.push(view);
                    self.seqs.push(row.seq);
                }
                None => {
                    let at = self.seqs.partition_point(|&s| s < row.seq);
                    messages.insert(at, view);
                    self.seqs.insert(at, row.seq);
                    self.index = index_of(messages);
                }
            }
        }
    }
}

/// Message id → position.
fn index_of(messages: &[ParserValue]) -> HashMap<String, usize> {
    messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.get("id").and_then(ParserValue::as_str).map(|id| (id.to_string(), i)))
        .collect()
}

/// Rows of `owner`'s topic `topic_id` changed after `since`, in creation order.
pub(crate) async fn changed_messages(
    db: &ReadDb,
    owner: &str,
    topic_id: &str,
    since: i64,
) -> Result<Vec<ChangedMessage>, ProjectionError> {
    let sql = format!(
        "SELECT {} FROM conversation_messages WHERE user_id = $1 AND topic_id = $2 AND changed_at > $3 ORDER BY seq",
        CHANGE_COLUMNS.join(", ")
    );
    let rows = db.fetch(&sql, &[owner.into(), topic_id.into(), since.into()]).await?;
    rows.iter()
        .map(|row| {
            let mut c = Columns::new(row, "conversation_messages", CHANGE_COLUMNS);
            Ok(ChangedMessage {
                seq: c.int()?,
                message_id: c.text()?,
                deleted: c.flag()?,
                message: c.json()?,
                changed_at: c.int()?,
            })
        })
        .collect()
}

/// The message version of `owner`'s topic `topic_id`, if it exists.
pub(crate) async fn topic_version(db: &ReadDb, owner: &str, topic_id: &str) -> Result<Option<i64>, ProjectionError> {
    let sql = "SELECT messages_version FROM conversation_topics WHERE user_id = $1 AND topic_id = $2";
    let args: Vec<SqlValue> = vec![owner.into(), topic_id.into()];
    Ok(db.fetch(sql, &args).await?.first().map(|r| r.i64(0).unwrap_or(0)))
}

struct CachedTopic {
    input: TopicInput,
    tree: Arc<TopicTree>,
}

type Slot = Arc<tokio::sync::Mutex<Option<CachedTopic>>>;

struct Entry {
    slot: Slot,
    last_used: u64,
    size: usize,
}

/// A cached topic: (owner, topic id), as topic ids are per owner.
type TopicKey = (String, String);

#[derive(Default)]
struct Entries {
    map: HashMap<TopicKey, Entry>,
    clock: u64,
    messages: usize,
}

/// Parsed conversation trees, cached per topic (least recently used out).
pub struct ConversationTrees {
    db: ReadDb,
    capacity: usize,
    entries: Mutex<Entries>,
}

impl ConversationTrees {
    /// A cache over `db` holding about `capacity_messages` messages' worth of topics (at least
    /// the topic last served, whatever its size).
    pub fn new(db: ReadDb, capacity_messages: usize) -> Self {
        Self { db, capacity: capacity_messages, entries: Mutex::new(Entries::default()) }
    }

    fn slot(&self, key: &TopicKey) -> Slot {
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        e.clock += 1;
        let clock = e.clock;
        let entry = e.map.entry(key.clone()).or_insert_with(|| Entry {
            slot: Arc::new(tokio::sync::Mutex::new(None)),
            last_used: clock,
            size: 0,
        });
        entry.last_used = clock;
        Arc::clone(&entry.slot)
    }

    fn resize(&self, key: &TopicKey, size: usize) {
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = e.map.get_mut(key) else { return };
        let old = std::mem::replace(&mut entry.size, size);
        e.messages = e.messages.saturating_sub(old) + size;
        while e.messages > self.capacity && e.map.len() > 1 {
            let victim = e
                .map
                .iter()
                .filter(|(id, _)| *id != key)
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(id, _)| id.clone());
            let Some(victim) = victim else { break };
            if let Some(gone) = e.map.remove(&victim) {
                e.messages = e.messages.saturating_sub(gone.size);
            }
        }
    }

    /// How many messages the cached topics hold.
    pub fn cached_messages(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).messages
    }

    /// The tree of `owner`'s topic `topic_id` as of the committed read model, or `None` when
    /// the owner has no such topic.
    pub async fn tree(&self, owner: &str, topic_id: &str) -> Result<Option<Arc<TopicTree>>, ProjectionError> {
        self.tree_in(&self.db, owner, topic_id).await
    }

    /// [`ConversationTrees::tree`] as `db` shows it: a query's read snapshot (a snapshot older
    /// than the cached tree builds it again from its own rows, as after a rebuild).
    pub async fn tree_in(
        &self,
        db: &ReadDb,
        owner: &str,
        topic_id: &str,
    ) -> Result<Option<Arc<TopicTree>>, ProjectionError> {
        let key = (owner.to_string(), topic_id.to_string());
        let slot = self.slot(&key);
        let mut cached = slot.lock().await;
        // Read the version under the topic's lock, so concurrent readers refresh once.
        let Some(version) = topic_version(db, owner, topic_id).await? else { return Ok(None) };
        let mut input = match cached.take() {
            Some(c) if c.input.version == version => {
                let tree = Arc::clone(&c.tree);
                *cached = Some(c);
                return Ok(Some(tree));
            }
            // Behind: fetch what changed since (the old tree is dropped here, so unless a
            // reader still holds it the input is updated in place). Ahead (the read model was
            // rebuilt): start over.
            Some(c) if c.input.version < version => c.input,
            _ => TopicInput::default(),
        };
        input.apply(changed_messages(db, owner, topic_id, input.version).await?);
        input.groups = topic_groups(db, owner, topic_id).await?;
        input.version = input.version.max(version);
        let tree = Arc::new(TopicTree::new(topic_id.to_string(), input.version, input.parse(topic_id)));
        let size = input.messages.len();
        *cached = Some(CachedTopic { input, tree: Arc::clone(&tree) });
        drop(cached);
        self.resize(&key, size);
        Ok(Some(tree))
    }
}
