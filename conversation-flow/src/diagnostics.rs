//! What the parser found wrong with its input, reported instead of silently dropped.
//!
//! Upstream either loops, overflows the stack or quietly hides such messages. The Rust parser
//! repairs the graph deterministically (documented per kind below) and lists every repair here,
//! so a caller can show or log it.

use crate::value::Value;
use serde::Serialize;

/// One problem in the input and how the parser dealt with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Diagnostic {
    /// An array entry that is not an object with a string `id`; it is skipped.
    InvalidMessage {
        /// Position in the input array.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A `messageGroups` entry that is not an object with a string `id`; it is skipped.
    InvalidMessageGroup {
        /// Position in the `messageGroups` array.
        index: usize,
    },
    /// Two messages share an id; the later one's fields are kept (as upstream's
    /// `messageMap`). An earlier one with the same `parentId` still lists the id under that
    /// parent once more (as upstream's `childrenMap`), so the tree shows it as a branch.
    DuplicateId {
        /// The shared id.
        id: String,
        /// Input position of the dropped message.
        dropped_index: usize,
        /// Input position of the kept message.
        kept_index: usize,
    },
    /// `parentId` names no message in the input; the message becomes a root (as upstream).
    MissingParent {
        /// The message.
        id: String,
        /// Its `parentId` as given.
        parent_id: Value,
    },
    /// A message is its own parent; it becomes a root.
    SelfParent {
        /// The message.
        id: String,
    },
    /// Parent links form a cycle; the cycle is cut at its member that comes first in the input,
    /// which becomes a root.
    ParentCycle {
        /// The messages on the cycle, each the parent of the next (the first one's parent is
        /// the last).
        ids: Vec<String>,
        /// The member whose parent link was cut.
        broken_at: String,
    },
    /// Duplicate ids nested under duplicate ids would copy their subtrees into a tree this
    /// large; each id is listed once instead (upstream runs out of memory on such input).
    DuplicatesNotRepeated {
        /// Tree nodes the repeated listings would have made.
        tree_nodes: u64,
        /// The most allowed (a small multiple of the input's size).
        limit: u64,
    },
    /// Thread messages that hang off nothing in the input (no main-flow message anchors the
    /// thread); they stay in the flat list, as upstream shows a thread view.
    OrphanThread {
        /// The thread.
        thread_id: String,
        /// The thread's messages that are roots.
        root_ids: Vec<String>,
    },
}

impl Diagnostic {
    /// The message id this diagnostic is about, if it is about one message.
    pub fn message_id(&self) -> Option<&str> {
        match self {
            Diagnostic::DuplicateId { id, .. }
            | Diagnostic::MissingParent { id, .. }
            | Diagnostic::SelfParent { id } => Some(id),
            Diagnostic::ParentCycle { broken_at, .. } => Some(broken_at),
            _ => None,
        }
    }
}
