//! Input messages: the typed view over the fields `parse` reads.
//!
//! Messages stay `serde_json::Value` objects (they carry arbitrary extra fields that must pass
//! through untouched); a [`Node`] borrows one and caches every field a decision depends on,
//! already reduced to the JS semantics upstream applies to it.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::diagnostics::Diagnostic;
use super::js::{Key, field, non_empty, time_of, truthy};

/// The roles that change parser behaviour; everything else passes through as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
    Tool,
    Task,
    TaskCallback,
    Other,
}

/// One entry of an assistant's `tools` array.
#[derive(Debug)]
pub(crate) struct ToolCall<'a> {
    /// The call as given (spread into the group block).
    pub raw: &'a Value,
    /// `tool.id`.
    pub id: Key<'a>,
    /// The tool message named by `result_msg_id`, when it exists and is a `tool` message.
    pub result_tool: Option<u32>,
}

/// `metadata.signal` of a toolless assistant (upstream ignores it on tool-using ones).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signal<'a> {
    pub kind: Option<&'a str>,
    pub sequence: Option<&'a Value>,
    pub source_tool_call_id: Option<&'a Value>,
    pub source_tool_name: Option<&'a Value>,
}

impl Signal<'_> {
    /// `tool-stdout` / `tool-callback`: rendered inside the signal-callbacks block.
    pub(crate) fn is_callback(&self) -> bool {
        matches!(self.kind, Some("tool-stdout" | "tool-callback"))
    }

    /// `task-completion`: rendered after the callbacks block.
    pub(crate) fn is_task_completion(&self) -> bool {
        self.kind == Some("task-completion")
    }
}

/// A message after pre-processing, with its input position.
pub(crate) struct Prepared<'a> {
    pub input_index: usize,
    pub map: Cow<'a, Map<String, Value>>,
}

/// Validate the input array, apply the `sub_agent` rewrite and drop duplicate ids (keeping the
/// last, as upstream's `messageMap` does), reporting what was skipped.
pub(crate) fn prepare<'a>(messages: &'a [Value], diags: &mut Vec<Diagnostic>) -> Vec<Prepared<'a>> {
    let mut valid: Vec<(usize, &'a Map<String, Value>, &'a str)> = Vec::with_capacity(messages.len());
    for (i, v) in messages.iter().enumerate() {
        let Some(map) = v.as_object() else {
            diags.push(Diagnostic::InvalidMessage { index: i, reason: "not an object".to_owned() });
            continue;
        };
        let Some(id) = map.get("id").and_then(Value::as_str) else {
            diags.push(Diagnostic::InvalidMessage { index: i, reason: "no string `id`".to_owned() });
            continue;
        };
        valid.push((i, map, id));
    }

    let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(valid.len());
    for &(i, _, id) in &valid {
        last.insert(id, i);
    }

    let mut out = Vec::with_capacity(last.len());
    for (i, map, id) in valid {
        let kept = last[id];
        if kept != i {
            diags.push(Diagnostic::DuplicateId { id: id.to_owned(), dropped_index: i, kept_index: kept });
            continue;
        }
        out.push(Prepared { input_index: i, map: sub_agent_rewrite(map) });
    }
    out
}

/// `metadata.scope === 'sub_agent'` with a `subAgentId`: the message is seen (and returned)
/// with `agentId = subAgentId`, so chains never merge across agents.
fn sub_agent_rewrite(map: &Map<String, Value>) -> Cow<'_, Map<String, Value>> {
    let meta = map.get("metadata");
    let is_sub = field(meta, "scope").and_then(Value::as_str) == Some("sub_agent");
    let sub_id = field(meta, "subAgentId");
    match (is_sub, sub_id) {
        (true, Some(sub)) if truthy(Some(sub)) => {
            let mut owned = map.clone();
            owned.insert("agentId".to_owned(), sub.clone());
            Cow::Owned(owned)
        }
        _ => Cow::Borrowed(map),
    }
}

/// Everything one message contributes to parser decisions.
#[derive(Debug)]
pub(crate) struct Node<'a> {
    pub map: &'a Map<String, Value>,
    pub id: &'a str,
    pub role: Role,
    /// `role === 'assistant'` as a string check (post-processing re-roles only those).
    pub created: f64,
    /// Effective parent after compressed-group redirect, orphan fallback and cycle cuts.
    pub parent: Option<u32>,
    /// The message named by the raw `parentId` (upstream's `m.parentId === x` checks).
    pub raw_parent: Option<u32>,
    pub thread: bool,
    pub thread_id: Option<&'a str>,
    pub group_id: Option<&'a str>,
    pub agent: Key<'a>,
    pub tool_call_id: Key<'a>,
    pub tools: Vec<ToolCall<'a>>,
    /// `tools` is a non-empty array.
    pub has_tools: bool,
    pub active_branch_index: Option<f64>,
    pub compare: bool,
    pub active_column: bool,
    pub agent_council: bool,
    /// `orchestrationRole === 'supervisor' || isSupervisor` (what the flat builder checks).
    pub supervisor: bool,
    pub dispatch_internal: bool,
    pub signal: Option<Signal<'a>>,
}

impl<'a> Node<'a> {
    /// Read the fields of one prepared message (`pos` is its index among prepared messages).
    pub(crate) fn read(map: &'a Map<String, Value>, pos: usize) -> Node<'a> {
        let id = map.get("id").and_then(Value::as_str).unwrap_or_default();
        let role = match map.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            Some("task") => Role::Task,
            Some("taskCallback") => Role::TaskCallback,
            _ => Role::Other,
        };
        let meta = map.get("metadata");
        let tools_arr = map.get("tools").and_then(Value::as_array);
        let has_tools = tools_arr.is_some_and(|t| !t.is_empty());
        let thread_id = map.get("threadId");
        let signal = if role == Role::Assistant && !non_empty(map.get("tools")) {
            let sig = field(meta, "signal");
            truthy(sig).then(|| Signal {
                kind: field(sig, "type").and_then(Value::as_str),
                sequence: field(sig, "sequence"),
                source_tool_call_id: field(sig, "sourceToolCallId"),
                source_tool_name: field(sig, "sourceToolName"),
            })
        } else {
            None
        };
        let abi = field(meta, "activeBranchIndex").and_then(Value::as_f64);
        let is_supervisor_flag = truthy(field(meta, "isSupervisor"));
        Node {
            map,
            id,
            role,
            created: time_of(map.get("createdAt")),
            parent: None,
            raw_parent: None,
            thread: truthy(thread_id),
            thread_id: thread_id.and_then(Value::as_str).filter(|s| !s.is_empty()),
            group_id: map.get("groupId").and_then(Value::as_str).filter(|s| !s.is_empty()),
            agent: Key::of(map.get("agentId"), pos),
            tool_call_id: Key::of(map.get("tool_call_id"), pos),
            tools: tools_arr
                .map(|arr| {
                    arr.iter().map(|t| ToolCall { raw: t, id: Key::of(t.get("id"), pos), result_tool: None }).collect()
                })
                .unwrap_or_default(),
            has_tools,
            active_branch_index: abi,
            compare: field(meta, "compare") == Some(&Value::Bool(true)),
            active_column: field(meta, "activeColumn") == Some(&Value::Bool(true)),
            agent_council: field(meta, "agentCouncil") == Some(&Value::Bool(true)),
            supervisor: field(meta, "orchestrationRole").and_then(Value::as_str) == Some("supervisor")
                || is_supervisor_flag,
            dispatch_internal: field(field(meta, "agentDispatch"), "visibility").and_then(Value::as_str)
                == Some("internal"),
            signal,
        }
    }

    /// A field of the message.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// The message as an owned JSON value (what the flat list and messageMap carry).
    pub(crate) fn to_value(&self) -> Value {
        Value::Object(self.map.clone())
    }
}
