//! LobeHub's conversation-flow parser: a topic's messages → `contextTree`, `flatList`,
//! `messageMap`, exactly as upstream `parse(messages, messageGroups?)` builds them
//! (`shared/reference/lobehub-spec.md` §1), plus a list of [`Diagnostic`]s.
//!
//! ```
//! use agentlog_projections::conversation;
//! use serde_json::json;
//!
//! let messages = vec![
//!     json!({"id": "u1", "role": "user", "content": "hi", "createdAt": 1}),
//!     json!({"id": "a1", "role": "assistant", "content": "hello", "parentId": "u1", "createdAt": 2}),
//! ];
//! let result = conversation::parse(&messages, None);
//! assert_eq!(result.flat_list.len(), 2);
//! assert!(result.diagnostics.is_empty());
//! ```
//!
//! Pure and total: no I/O, no recursion on input depth (a 100,000-deep parent chain parses),
//! every malformed graph (cycles, self-parents, missing parents, duplicate ids, orphan threads)
//! terminates with a diagnostic instead of a panic or a silent drop. Module map:
//! [`message`] typed view over input fields, [`indexing`] phases 1–2, `branch` branch
//! resolution, `collector` assistant chains, `context_tree` / `flat_list` phase 3, `finish`
//! post-processing, `virtual_message` and `usage` row shapes, `js` the JS semantics upstream
//! relies on.

mod branch;
mod collector;
mod context_tree;
mod diagnostics;
mod fast_hash;
mod finish;
mod flat_list;
mod indexing;
mod js;
mod message;
mod processed;
mod usage;
mod virtual_message;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

pub use context_tree::{
    AgentCouncilNode, AssistantGroupNode, BranchNode, CompareNode, ContextNode, MessageNode, SignalCallbacksNode,
    TasksNode,
};
pub use diagnostics::Diagnostic;

/// The parse output; serialises to upstream's `{contextTree, flatList, messageMap}`.
///
/// Rows and messageMap entries that upstream returns unchanged borrow the input messages
/// (`Cow::Borrowed`); only rows the parse builds or changes are owned. Use
/// [`ParseResult::into_owned`] to keep a result beyond its input.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParseResult<'a> {
    /// Semantic nodes of the main line (thread messages excluded).
    pub context_tree: Vec<ContextNode>,
    /// The active path as render rows, virtual rows included, sorted by `createdAt`.
    pub flat_list: Vec<Cow<'a, Value>>,
    /// Every kept input message by id (after upstream's clean-up), in key order.
    pub message_map: BTreeMap<Cow<'a, str>, Cow<'a, Value>>,
    /// What was wrong with the input and how it was handled (not part of upstream's shape).
    #[serde(skip)]
    pub diagnostics: Vec<Diagnostic>,
}

impl ParseResult<'_> {
    /// Copy the borrowed rows, so the result outlives its input.
    pub fn into_owned(self) -> ParseResult<'static> {
        ParseResult {
            context_tree: self.context_tree,
            flat_list: self.flat_list.into_iter().map(|r| Cow::Owned(r.into_owned())).collect(),
            message_map: self
                .message_map
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned())))
                .collect(),
            diagnostics: self.diagnostics,
        }
    }

    /// Write `{"contextTree","flatList","messageMap"}` as compact JSON. Unlike serde, this does
    /// not recurse on branch nesting, so any parse result can be written.
    pub fn write_json<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(b"{\"contextTree\":")?;
        context_tree::write_json(&mut w, &self.context_tree)?;
        w.write_all(b",\"flatList\":")?;
        serde_json::to_writer(&mut w, &self.flat_list)?;
        w.write_all(b",\"messageMap\":")?;
        serde_json::to_writer(&mut w, &self.message_map)?;
        w.write_all(b"}")
    }
}

/// Why a JSON document is not parser input.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The document is neither an array nor an object with a `messages` array.
    #[error("expected a JSON array of messages or an object with a \"messages\" array, got {0}")]
    Shape(&'static str),
    /// `messageGroups` is present but not an array.
    #[error("\"messageGroups\" must be an array when present")]
    MessageGroups,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parse a document that is either `[messages…]` or `{"messages": [...], "messageGroups": [...]}`.
pub fn parse_document(doc: &Value) -> Result<ParseResult<'_>, InputError> {
    match doc {
        Value::Array(messages) => Ok(parse(messages, None)),
        Value::Object(obj) => {
            let messages = obj
                .get("messages")
                .and_then(Value::as_array)
                .ok_or(InputError::Shape("an object without a \"messages\" array"))?;
            let groups = match obj.get("messageGroups") {
                None | Some(Value::Null) => None,
                Some(Value::Array(g)) => Some(g.as_slice()),
                Some(_) => return Err(InputError::MessageGroups),
            };
            Ok(parse(messages, groups))
        }
        other => Err(InputError::Shape(kind(other))),
    }
}

/// Upstream's `parse(messages, messageGroups?)`.
pub fn parse<'a>(messages: &'a [Value], message_groups: Option<&'a [Value]>) -> ParseResult<'a> {
    let mut diagnostics = Vec::new();
    let prepared = message::prepare(messages, &mut diagnostics);
    let index = indexing::Index::build(&prepared, message_groups.unwrap_or(&[]), &mut diagnostics);
    let context_tree = context_tree::build(&index);
    let rows = flat_list::build(&index);
    let flat_list = finish::flat_list(&index, rows);
    let message_map = finish::message_map(&index);
    ParseResult { context_tree, flat_list, message_map, diagnostics }
}

#[cfg(test)]
mod tests;
