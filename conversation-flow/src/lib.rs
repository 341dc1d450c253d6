//! LobeHub's conversation-flow parser: a topic's messages → `contextTree`, `flatList`,
//! `messageMap`, exactly as upstream `parse(messages, messageGroups?)` builds them
//! (`shared/reference/lobehub-spec.md` §1), plus a list of [`Diagnostic`]s.
//!
//! ```
//! use agentlog_conversation_flow as conversation;
//!
//! // JSON text keeps its key order, as upstream's `JSON.parse` does.
//! let doc = conversation::value::from_str(
//!     r#"[{"id": "u1", "role": "user", "content": "hi", "createdAt": 1},
//!         {"id": "a1", "role": "assistant", "content": "hello", "parentId": "u1", "createdAt": 2}]"#,
//! )?;
//! let result = conversation::parse_document(&doc)?;
//! assert_eq!(result.flat_list().len(), 2);
//! assert_eq!(result.flat_list().get(1).and_then(|row| row.id()), Some("a1"));
//! assert!(result.diagnostics.is_empty());
//! let mut out = Vec::new();
//! result.write_json(&mut out)?;
//! assert!(out.starts_with(br#"{"contextTree":[{"id":"u1","type":"message"}"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Pure and total: no I/O, no recursion on input depth (a 100,000-deep parent chain parses),
//! every malformed graph (cycles, self-parents, missing parents, duplicate ids, orphan threads)
//! terminates with a diagnostic instead of a panic or a silent drop. Module map:
//! `message` typed view over input fields, `indexing` phases 1–2, `branch` branch
//! resolution, `collector` assistant chains, `context_tree` / `flat_list` phase 3, `finish`
//! post-processing, `virtual_message` the decisions behind virtual rows, `rows` / `rows_json` /
//! `usage` the JSON the rows stand for, `output` the result's public views, `js` the JS
//! semantics upstream relies on, `node_id` the context tree's inline ids.

/// `serde_json::json!` as the parser's [`Value`], for the crate's unit tests.
#[cfg(test)]
macro_rules! json {
    ($($t:tt)+) => {
        crate::value::Value::from(serde_json::json!($($t)+))
    };
}

mod branch;
mod collector;
mod context_node;
mod context_tree;
mod diagnostics;
mod fast_hash;
mod finish;
mod flat_list;
mod indexing;
mod js;
mod js_json;
mod message;
mod node_id;
mod output;
mod processed;
mod rows;
mod rows_json;
mod usage;
pub mod value;
mod virtual_message;

use std::sync::Arc;

pub use value::{Map, Value};

pub use context_node::{
    AgentCouncilNode, AssistantGroupNode, BranchNode, CompareNode, ContextNode, MessageNode, SignalCallbacksNode,
    TasksNode,
};
pub use diagnostics::Diagnostic;
pub use node_id::NodeId;
pub use output::{FlatList, FlatRow, MessageEntry, MessageMap, ParseResult};

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
    let index = indexing::Index::build(messages, prepared, message_groups.unwrap_or(&[]), &mut diagnostics);
    let context_tree = context_tree::build(&index);
    let placed = flat_list::build(&index);
    let rows = finish::flat_list(&index, placed);
    let message_map = finish::message_map(&index);
    ParseResult::new(messages, context_tree, rows, message_map, diagnostics)
}

/// [`parse`] over shared messages: the result keeps them (no copy) and outlives the caller's
/// handle.
pub fn parse_shared(messages: Arc<Vec<Value>>, message_groups: Option<&[Value]>) -> ParseResult<'static> {
    let result = parse(&messages, message_groups);
    result.over_shared(Arc::clone(&messages))
}

#[cfg(test)]
mod tests;
