//! Output rows as descriptors over the input, and the JSON they stand for.
//!
//! A row is not a built `serde_json::Value`: it names input messages by position and records
//! only what the parse decided (which messages form a group, which tool result answers which
//! call, the branch marker). Its JSON — upstream's row, key for key — is produced when the
//! row is serialised, reading the input in place; nothing is copied, and a result holds no
//! borrowed pointers (positions only), so it can share its input instead of copying it.
//!
//! Objects are written with their keys in the order upstream's JavaScript gives them: a spread
//! message keeps its input order ([`Value`] keeps it), keys a row assigns go where JavaScript
//! puts them ([`Shape`]), and objects upstream writes as literals follow the literal.

use crate::value::{Map, Value};
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::js::{non_empty, truthy};
use super::message::sub_agent_override;
use super::usage::is_usage_key;

/// One flat-list row.
#[derive(Debug, Clone)]
pub(crate) enum Row {
    /// An input message; `finish`: with post-processing (re-roled supervisor, hoisted usage).
    Message { at: u32, finish: bool },
    /// `{...message, branch: {activeBranchIndex, count}}`, post-processed.
    Branch { at: u32, count: u32, index: u32 },
    /// `createAssistantGroupMessage`.
    Group(Box<GroupRow>),
    /// `createSupervisorContentMessage`: a toolless supervisor turn as a one-block bubble.
    Supervisor { at: u32 },
    /// A tasks or compare row.
    Built(Box<BuiltRow>),
}

/// A message (as given) or a group embedded in a row.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Message(u32),
    Group(GroupRow),
}

/// A tasks or compare row: its own small fields, and the messages or groups it embeds.
#[derive(Debug, Clone)]
pub(crate) struct BuiltRow {
    /// Every key but `list_key`.
    pub fields: Map<String, Value>,
    /// `tasks` or `columns`.
    pub list_key: &'static str,
    pub items: Vec<Item>,
    /// Compare columns: each item is a one-element array.
    pub columns: bool,
}

/// An assistant group: the chain and what the parse resolved about it.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupRow {
    /// Input positions of the chain's steps, in order (the first is the head).
    pub chain: Vec<u32>,
    /// For every tool call of every step, in order: the input position of the tool message
    /// that answers it (`NONE`: the call is written as given).
    pub results: Vec<u32>,
    /// The council block's members (only when there are several).
    pub council: Option<Vec<Item>>,
    /// Signal-callback blocks: the source tool and its callbacks by sequence.
    pub signal_blocks: Vec<(u32, Vec<u32>)>,
    /// Task-completion turns, by time.
    pub completions: Vec<u32>,
    /// The head is a supervisor: role `supervisor` and the supervisor metadata flags.
    pub supervisor: bool,
    /// The active-branch marker `(count, activeBranchIndex)`, when the group is a branch.
    pub branch: Option<(u32, u32)>,
}

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

/// The input message at `at` (rows only ever name object messages).
pub(crate) fn object(input: &[Value], at: u32) -> &Map<String, Value> {
    input.get(at as usize).and_then(Value::as_object).unwrap_or(&EMPTY)
}

/// The `id` of the input message at `at`.
pub(crate) fn id_of(input: &[Value], at: u32) -> &str {
    object(input, at).get("id").and_then(Value::as_str).unwrap_or_default()
}

/// How an input message is changed on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Only the `sub_agent` rewrite (nested copies, recovered task callbacks).
    AsGiven,
    /// A flat-list row: legacy supervisors re-roled, `metadata.usage` hoisted.
    FlatRow,
    /// A messageMap entry: legacy supervisors re-roled, tool-using assistants' metadata
    /// reduced to usage/performance keys.
    MapEntry,
}

/// `role: 'assistant'` + `metadata.isSupervisor` (truthy): re-roled to `supervisor`.
pub(crate) fn is_legacy_supervisor(m: &Map<String, Value>) -> bool {
    m.get("role").and_then(Value::as_str) == Some("assistant")
        && truthy(m.get("metadata").and_then(Value::as_object).and_then(|md| md.get("isSupervisor")))
}

/// `metadata.usage` when the row has no truthy top-level `usage` (upstream's usage hoisting).
pub(crate) fn hoisted_usage(m: &Map<String, Value>) -> Option<&Value> {
    if truthy(m.get("usage")) {
        return None;
    }
    m.get("metadata").and_then(Value::as_object).and_then(|md| md.get("usage")).filter(|u| truthy(Some(u)))
}

/// An input message as one of the output shapes of [`Mode`], optionally with a branch marker.
pub(crate) struct MessageJson<'r> {
    pub map: &'r Map<String, Value>,
    pub mode: Mode,
    pub branch: Option<(u32, u32)>,
}

/// `{activeBranchIndex, count}` from `(count, activeBranchIndex)`.
pub(crate) struct BranchJson(pub u32, pub u32);

impl Serialize for BranchJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("activeBranchIndex", &self.1)?;
        m.serialize_entry("count", &self.0)?;
        m.end()
    }
}

/// `metadata` of a tool-using assistant in messageMap: its usage/performance keys only.
struct ReducedMetadata<'r>(&'r Map<String, Value>);

impl Serialize for ReducedMetadata<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| is_usage_key(k)) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Serialize for MessageJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map = self.map;
        let agent = sub_agent_override(map);
        let supervisor = self.mode != Mode::AsGiven && is_legacy_supervisor(map);
        let hoisted = if self.mode == Mode::FlatRow { hoisted_usage(map) } else { None };
        // messageMap: a still-assistant with tools and metadata keeps only usage keys (and
        // `metadata: undefined` when none remain or it is not an object).
        let reduce = self.mode == Mode::MapEntry
            && !supervisor
            && map.get("role").and_then(Value::as_str) == Some("assistant")
            && non_empty(map.get("tools"))
            && truthy(map.get("metadata"));
        let reduced = match map.get("metadata") {
            Some(Value::Object(md)) if reduce && md.keys().any(|k| is_usage_key(k)) => Some(md),
            _ => None,
        };
        // In upstream's order: the sub_agent rewrite, the branch marker, then post-processing.
        let mut shape = Shape::spread(map.iter().map(|(k, v)| (k.as_str(), v)));
        if agent.is_some() {
            shape.set("agentId");
        }
        if self.branch.is_some() {
            shape.set("branch");
        }
        if supervisor {
            shape.set("role");
        }
        if hoisted.is_some() {
            shape.set("usage");
        }
        if reduce {
            shape.set("metadata");
        }
        let mut m = s.serialize_map(None)?;
        shape.write(&mut m, |m, k| match k {
            "agentId" => m.serialize_entry(k, &agent),
            "branch" => match self.branch {
                Some((count, index)) => m.serialize_entry(k, &BranchJson(count, index)),
                None => Ok(()),
            },
            "metadata" => match reduced {
                Some(md) => m.serialize_entry(k, &ReducedMetadata(md)),
                None => Ok(()),
            },
            "role" => m.serialize_entry(k, "supervisor"),
            "usage" => m.serialize_entry(k, &hoisted),
            _ => Ok(()),
        })?;
        m.end()
    }
}

/// An object built as upstream builds it: a spread of given entries, then assignments (a key
/// already present keeps its place, a new one goes last, as in JavaScript) and deletions. Set
/// keys are written by the caller's `emit`, which may write nothing (`undefined`).
pub(crate) struct Shape<'b> {
    entries: Vec<(&'b str, Option<&'b Value>)>,
}

impl<'b> Shape<'b> {
    /// `{...entries}`.
    pub(crate) fn spread(entries: impl Iterator<Item = (&'b str, &'b Value)>) -> Shape<'b> {
        Shape { entries: entries.map(|(k, v)| (k, Some(v))).collect() }
    }

    /// `{}`.
    pub(crate) fn empty() -> Shape<'b> {
        Shape { entries: Vec::new() }
    }

    /// `obj[key] = …` (the value comes from `emit`).
    pub(crate) fn set(&mut self, key: &'b str) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = None,
            None => self.entries.push((key, None)),
        }
    }

    /// `delete obj[key]`.
    pub(crate) fn delete(&mut self, key: &str) {
        self.entries.retain(|(k, _)| *k != key);
    }

    /// Write the entries in order; `emit` writes each set key.
    pub(crate) fn write<M: SerializeMap>(
        &self,
        m: &mut M,
        mut emit: impl FnMut(&mut M, &'b str) -> Result<(), M::Error>,
    ) -> Result<(), M::Error> {
        for &(k, v) in &self.entries {
            match v {
                Some(v) => m.serialize_entry(k, v)?,
                None => emit(m, k)?,
            }
        }
        Ok(())
    }
}
