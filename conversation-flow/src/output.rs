//! The parse result: the context tree, and the flat list and messageMap as views over the
//! input messages.
//!
//! Rows are descriptors that name input messages by position (`rows`); their JSON is produced
//! when they are written or turned into `Value`s, so a parse copies no message. A result
//! borrows its input (`ParseResult<'a>`) or shares it ([`parse_shared`](super::parse_shared),
//! [`ParseResult::into_owned`]).

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use crate::value::{Map, Value};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};

use super::context_node::ContextNode;
use super::context_tree;
use super::diagnostics::Diagnostic;
use super::rows::{MessageJson, Mode, Row, id_of, object};
use super::rows_json::RowJson;

/// The messages a result points into.
#[derive(Debug, Clone)]
enum Input<'a> {
    Borrowed(&'a [Value]),
    Shared(Arc<Vec<Value>>),
}

impl Input<'_> {
    fn slice(&self) -> &[Value] {
        match self {
            Input::Borrowed(s) => s,
            Input::Shared(v) => v.as_slice(),
        }
    }
}

/// The parse output; serialises to upstream's `{contextTree, flatList, messageMap}`.
///
/// The flat list and messageMap are views over the input messages (see [`FlatList`],
/// [`MessageMap`]): nothing is copied while parsing. Use [`ParseResult::into_owned`] (or parse
/// with [`parse_shared`](super::parse_shared)) to keep a result beyond its input.
#[derive(Debug, Clone)]
pub struct ParseResult<'a> {
    /// Semantic nodes of the main line (thread messages excluded).
    pub context_tree: Vec<ContextNode>,
    /// What was wrong with the input and how it was handled (not part of upstream's shape).
    pub diagnostics: Vec<Diagnostic>,
    input: Input<'a>,
    rows: Vec<Row>,
    /// Input positions of the messageMap entries, in upstream's order.
    map: Vec<u32>,
}

impl<'a> ParseResult<'a> {
    /// A result over borrowed input.
    pub(crate) fn new(
        input: &'a [Value],
        context_tree: Vec<ContextNode>,
        rows: Vec<Row>,
        map: Vec<u32>,
        diagnostics: Vec<Diagnostic>,
    ) -> ParseResult<'a> {
        ParseResult { context_tree, diagnostics, input: Input::Borrowed(input), rows, map }
    }

    /// The same result over `shared`, which must hold the messages it was parsed from.
    pub(crate) fn over_shared(self, shared: Arc<Vec<Value>>) -> ParseResult<'static> {
        let ParseResult { context_tree, diagnostics, input: _, rows, map } = self;
        ParseResult { context_tree, diagnostics, input: Input::Shared(shared), rows, map }
    }

    /// The active path as render rows, virtual rows included, sorted by `createdAt`.
    pub fn flat_list(&self) -> FlatList<'_> {
        FlatList { input: self.input.slice(), rows: &self.rows }
    }

    /// Every kept input message by id (after upstream's clean-up), in upstream's key order.
    pub fn message_map(&self) -> MessageMap<'_> {
        MessageMap { input: self.input.slice(), positions: &self.map }
    }

    /// Keep the result beyond its input: a borrowed input is copied once (a shared one is not).
    pub fn into_owned(self) -> ParseResult<'static> {
        let shared = match &self.input {
            Input::Borrowed(s) => Arc::new(s.to_vec()),
            Input::Shared(v) => Arc::clone(v),
        };
        self.over_shared(shared)
    }

    /// The whole result as one JSON value (`{contextTree, flatList, messageMap}`).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Write `{"contextTree","flatList","messageMap"}` as compact JSON. Unlike serde, this does
    /// not recurse on branch nesting, so any parse result can be written.
    pub fn write_json<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(b"{\"contextTree\":")?;
        self.write_context_tree_json(&mut w)?;
        w.write_all(b",\"flatList\":")?;
        self.write_flat_list_json(&mut w)?;
        w.write_all(b",\"messageMap\":")?;
        self.write_message_map_json(&mut w)?;
        w.write_all(b"}")
    }

    /// Write `contextTree` alone, as in [`ParseResult::write_json`].
    pub fn write_context_tree_json<W: Write>(&self, mut w: W) -> io::Result<()> {
        context_tree::write_json(&mut w, &self.context_tree)
    }

    /// Write `flatList` alone, as in [`ParseResult::write_json`].
    pub fn write_flat_list_json<W: Write>(&self, w: W) -> io::Result<()> {
        crate::js_json::to_writer(w, &self.flat_list())
    }

    /// Write `messageMap` alone, as in [`ParseResult::write_json`].
    pub fn write_message_map_json<W: Write>(&self, w: W) -> io::Result<()> {
        crate::js_json::to_writer(w, &self.message_map())
    }
}

impl Serialize for ParseResult<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ParseResult", 3)?;
        st.serialize_field("contextTree", &self.context_tree)?;
        st.serialize_field("flatList", &self.flat_list())?;
        st.serialize_field("messageMap", &self.message_map())?;
        st.end()
    }
}

/// The flat list: rows over the input messages.
#[derive(Clone, Copy)]
pub struct FlatList<'r> {
    input: &'r [Value],
    rows: &'r [Row],
}

impl<'r> FlatList<'r> {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row at `i`.
    pub fn get(&self, i: usize) -> Option<FlatRow<'r>> {
        self.rows.get(i).map(|row| FlatRow { input: self.input, row })
    }

    /// The rows in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = FlatRow<'r>> + use<'r> {
        let input = self.input;
        self.rows.iter().map(move |row| FlatRow { input, row })
    }

    /// Every row as an owned JSON value.
    pub fn to_values(&self) -> Vec<serde_json::Value> {
        self.iter().map(|r| r.to_value()).collect()
    }
}

impl Serialize for FlatList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.rows.len()))?;
        for row in self.rows {
            seq.serialize_element(&RowJson { input: self.input, row })?;
        }
        seq.end()
    }
}

impl fmt::Debug for FlatList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One flat-list row.
#[derive(Clone, Copy)]
pub struct FlatRow<'r> {
    input: &'r [Value],
    row: &'r Row,
}

impl<'r> FlatRow<'r> {
    /// The row's `id` (a group shows its head's).
    pub fn id(&self) -> Option<&'r str> {
        match self.row {
            Row::Message { at, .. } | Row::Branch { at, .. } | Row::Supervisor { at } => Some(id_of(self.input, *at)),
            Row::Group(g) => g.chain.first().map(|&h| id_of(self.input, h)),
            Row::Built(b) => b.fields.get("id").and_then(Value::as_str),
        }
    }

    /// The row as an owned JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Serialize for FlatRow<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RowJson { input: self.input, row: self.row }.serialize(s)
    }
}

impl fmt::Debug for FlatRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

/// messageMap: every kept input message by id, in upstream's order.
#[derive(Clone, Copy)]
pub struct MessageMap<'r> {
    input: &'r [Value],
    positions: &'r [u32],
}

impl<'r> MessageMap<'r> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The entry of message `id` (a scan: the map is written whole, rarely searched).
    pub fn get(&self, id: &str) -> Option<MessageEntry<'r>> {
        let at = self.positions.iter().copied().find(|&at| id_of(self.input, at) == id)?;
        Some(MessageEntry { map: object(self.input, at) })
    }

    /// Is there an entry for `id`?
    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// `(id, entry)` in upstream's order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'r str, MessageEntry<'r>)> + use<'r> {
        let input = self.input;
        self.positions.iter().map(move |&at| (id_of(input, at), MessageEntry { map: object(input, at) }))
    }

    /// The map as an owned JSON object.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Serialize for MessageMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.positions.len()))?;
        for (id, entry) in self.iter() {
            m.serialize_entry(id, &entry)?;
        }
        m.end()
    }
}

impl fmt::Debug for MessageMap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// One messageMap entry: the input message after upstream's clean-up.
#[derive(Clone, Copy)]
pub struct MessageEntry<'r> {
    map: &'r Map<String, Value>,
}

impl MessageEntry<'_> {
    /// The entry as an owned JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Serialize for MessageEntry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        MessageJson { map: self.map, mode: Mode::MapEntry, branch: None }.serialize(s)
    }
}

impl fmt::Debug for MessageEntry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_value())
    }
}
