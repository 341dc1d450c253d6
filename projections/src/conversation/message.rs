//! Input messages: the typed view over the fields `parse` reads.
//!
//! Messages stay `serde_json::Value` objects (they carry arbitrary extra fields that must pass
//! through untouched); a [`Node`] borrows one and caches every field a decision depends on,
//! already reduced to the JS semantics upstream applies to it.

use serde_json::{Map, Value};

use super::diagnostics::Diagnostic;
use super::fast_hash::FastMap;
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

/// A message after pre-processing: its input position, the input object and its id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared<'a> {
    pub input_index: usize,
    pub map: &'a Map<String, Value>,
    pub id: &'a str,
}

/// Validate the input array and drop duplicate ids (keeping the last, as upstream's
/// `messageMap` does), reporting what was skipped. Also returns id → position among the kept
/// messages.
pub(crate) fn prepare<'a>(
    messages: &'a [Value],
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Prepared<'a>>, FastMap<&'a str, u32>) {
    let mut out: Vec<Prepared<'a>> = Vec::with_capacity(messages.len());
    let mut by_id: FastMap<&'a str, u32> = FastMap::with_capacity_and_hasher(messages.len(), Default::default());
    let mut duplicates = false;
    for (i, v) in messages.iter().enumerate() {
        let Some(map) = v.as_object() else {
            diags.push(Diagnostic::InvalidMessage { index: i, reason: "not an object".to_owned() });
            continue;
        };
        let Some(id) = map.get("id").and_then(Value::as_str) else {
            diags.push(Diagnostic::InvalidMessage { index: i, reason: "no string `id`".to_owned() });
            continue;
        };
        duplicates |= by_id.insert(id, out.len() as u32).is_some();
        out.push(Prepared { input_index: i, map, id });
    }
    if duplicates {
        // Rare: keep only each id's last occurrence (`by_id` names it), then renumber.
        let valid = std::mem::take(&mut out);
        for p in &valid {
            let kept = by_id.get(p.id).map_or(p.input_index, |&k| valid[k as usize].input_index);
            if kept != p.input_index {
                diags.push(Diagnostic::DuplicateId {
                    id: p.id.to_owned(),
                    dropped_index: p.input_index,
                    kept_index: kept,
                });
                continue;
            }
            out.push(*p);
        }
        by_id = out.iter().enumerate().map(|(pos, p)| (p.id, pos as u32)).collect();
    }
    (out, by_id)
}

/// `metadata.scope === 'sub_agent'` with a `subAgentId`: the message is seen (and returned)
/// with `agentId = subAgentId`, so chains never merge across agents.
pub(crate) fn sub_agent_override(map: &Map<String, Value>) -> Option<&Value> {
    let meta = map.get("metadata");
    let is_sub = field(meta, "scope").and_then(Value::as_str) == Some("sub_agent");
    let sub_id = field(meta, "subAgentId");
    match (is_sub, sub_id) {
        (true, Some(sub)) if truthy(Some(sub)) => Some(sub),
        _ => None,
    }
}

/// Everything one message contributes to parser decisions.
#[derive(Debug)]
pub(crate) struct Node<'a> {
    /// Position of the message in the input (what rows name it by).
    pub at: u32,
    pub map: &'a Map<String, Value>,
    /// `agentId` after the `sub_agent` rewrite, when it applies.
    pub agent_override: Option<&'a Value>,
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
    /// The raw `parentId` value.
    pub parent_id: Option<&'a Value>,
    /// `role === 'compressedGroup'`.
    pub compressed_group: bool,
}

/// The top-level fields parse reads, found in one pass over the message's map.
#[derive(Default)]
struct Fields<'a> {
    id: Option<&'a Value>,
    role: Option<&'a Value>,
    metadata: Option<&'a Value>,
    tools: Option<&'a Value>,
    thread_id: Option<&'a Value>,
    created_at: Option<&'a Value>,
    group_id: Option<&'a Value>,
    agent_id: Option<&'a Value>,
    tool_call_id: Option<&'a Value>,
    parent_id: Option<&'a Value>,
}

impl<'a> Fields<'a> {
    fn of(map: &'a Map<String, Value>) -> Fields<'a> {
        let mut f = Fields::default();
        for (k, v) in map {
            let slot = match k.as_str() {
                "id" => &mut f.id,
                "role" => &mut f.role,
                "metadata" => &mut f.metadata,
                "tools" => &mut f.tools,
                "threadId" => &mut f.thread_id,
                "createdAt" => &mut f.created_at,
                "groupId" => &mut f.group_id,
                "agentId" => &mut f.agent_id,
                "tool_call_id" => &mut f.tool_call_id,
                "parentId" => &mut f.parent_id,
                _ => continue,
            };
            *slot = Some(v);
        }
        f
    }
}

/// The `metadata` fields parse reads, found in one pass.
#[derive(Default)]
struct MetaFields<'a> {
    signal: Option<&'a Value>,
    active_branch_index: Option<&'a Value>,
    is_supervisor: Option<&'a Value>,
    compare: Option<&'a Value>,
    active_column: Option<&'a Value>,
    agent_council: Option<&'a Value>,
    orchestration_role: Option<&'a Value>,
    agent_dispatch: Option<&'a Value>,
    scope: Option<&'a Value>,
    sub_agent_id: Option<&'a Value>,
}

impl<'a> MetaFields<'a> {
    fn of(meta: Option<&'a Value>) -> MetaFields<'a> {
        let mut f = MetaFields::default();
        let Some(Value::Object(map)) = meta else {
            return f;
        };
        for (k, v) in map {
            let slot = match k.as_str() {
                "signal" => &mut f.signal,
                "activeBranchIndex" => &mut f.active_branch_index,
                "isSupervisor" => &mut f.is_supervisor,
                "compare" => &mut f.compare,
                "activeColumn" => &mut f.active_column,
                "agentCouncil" => &mut f.agent_council,
                "orchestrationRole" => &mut f.orchestration_role,
                "agentDispatch" => &mut f.agent_dispatch,
                "scope" => &mut f.scope,
                "subAgentId" => &mut f.sub_agent_id,
                _ => continue,
            };
            *slot = Some(v);
        }
        f
    }
}

impl<'a> Node<'a> {
    /// Read the fields of one prepared message (`pos` is its index among prepared messages).
    pub(crate) fn read(p: &Prepared<'a>, pos: usize) -> Node<'a> {
        let map = p.map;
        let f = Fields::of(map);
        let id = p.id;
        let role = match f.role.and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            Some("task") => Role::Task,
            Some("taskCallback") => Role::TaskCallback,
            _ => Role::Other,
        };
        let md = MetaFields::of(f.metadata);
        // `sub_agent_override`, from the fields already read.
        let agent_override = match (md.scope.and_then(Value::as_str), md.sub_agent_id) {
            (Some("sub_agent"), Some(sub)) if truthy(Some(sub)) => Some(sub),
            _ => None,
        };
        let tools_arr = f.tools.and_then(Value::as_array);
        let has_tools = tools_arr.is_some_and(|t| !t.is_empty());
        let signal = if role == Role::Assistant && !non_empty(f.tools) {
            let sig = md.signal;
            truthy(sig).then(|| Signal {
                kind: field(sig, "type").and_then(Value::as_str),
                sequence: field(sig, "sequence"),
                source_tool_call_id: field(sig, "sourceToolCallId"),
                source_tool_name: field(sig, "sourceToolName"),
            })
        } else {
            None
        };
        let is_true = |v: Option<&Value>| v == Some(&Value::Bool(true));
        Node {
            parent_id: f.parent_id,
            compressed_group: f.role.and_then(Value::as_str) == Some("compressedGroup"),
            at: p.input_index as u32,
            map,
            agent_override,
            id,
            role,
            created: time_of(f.created_at),
            parent: None,
            raw_parent: None,
            thread: truthy(f.thread_id),
            thread_id: f.thread_id.and_then(Value::as_str).filter(|s| !s.is_empty()),
            group_id: f.group_id.and_then(Value::as_str).filter(|s| !s.is_empty()),
            agent: Key::of(agent_override.or(f.agent_id), pos),
            tool_call_id: Key::of(f.tool_call_id, pos),
            tools: tools_arr
                .map(|arr| {
                    arr.iter().map(|t| ToolCall { raw: t, id: Key::of(t.get("id"), pos), result_tool: None }).collect()
                })
                .unwrap_or_default(),
            has_tools,
            active_branch_index: md.active_branch_index.and_then(Value::as_f64),
            compare: is_true(md.compare),
            active_column: is_true(md.active_column),
            agent_council: is_true(md.agent_council),
            supervisor: md.orchestration_role.and_then(Value::as_str) == Some("supervisor") || truthy(md.is_supervisor),
            dispatch_internal: field(md.agent_dispatch, "visibility").and_then(Value::as_str) == Some("internal"),
            signal,
        }
    }

    /// A field of the message (as the `sub_agent` rewrite leaves it).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        match self.agent_override {
            Some(agent) if key == "agentId" => Some(agent),
            _ => self.map.get(key),
        }
    }
}
