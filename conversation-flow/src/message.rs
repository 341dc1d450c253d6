//! Input messages: the typed view over the fields `parse` reads.
//!
//! Messages stay `serde_json::Value` objects (they carry arbitrary extra fields that must pass
//! through untouched); a [`Node`] borrows one and caches every field a decision depends on,
//! already reduced to the JS semantics upstream applies to it.

use std::ops::Range;

use crate::value::{Map, Value};

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

/// What `metadata.signal.type` makes of a signal turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignalKind {
    /// `tool-stdout` / `tool-callback`.
    Callback,
    /// `task-completion`.
    TaskCompletion,
    Other,
}

/// `metadata.signal` of a toolless assistant (upstream ignores it on tool-using ones). Its
/// type is decided once; the fields only callback blocks show are read when they are built
/// (a `Node` stays small).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signal<'a> {
    kind: SignalKind,
    /// The (truthy) `metadata.signal` value.
    raw: &'a Value,
}

impl<'a> Signal<'a> {
    fn new(raw: &'a Value) -> Signal<'a> {
        let kind = match field(Some(raw), "type").and_then(Value::as_str) {
            Some("tool-stdout" | "tool-callback") => SignalKind::Callback,
            Some("task-completion") => SignalKind::TaskCompletion,
            _ => SignalKind::Other,
        };
        Signal { kind, raw }
    }

    /// `tool-stdout` / `tool-callback`: rendered inside the signal-callbacks block.
    pub(crate) fn is_callback(&self) -> bool {
        self.kind == SignalKind::Callback
    }

    /// `task-completion`: rendered after the callbacks block.
    pub(crate) fn is_task_completion(&self) -> bool {
        self.kind == SignalKind::TaskCompletion
    }

    /// `signal.sequence`.
    pub(crate) fn sequence(&self) -> Option<&'a Value> {
        field(Some(self.raw), "sequence")
    }

    /// `signal.sourceToolCallId`.
    pub(crate) fn source_tool_call_id(&self) -> Option<&'a Value> {
        field(Some(self.raw), "sourceToolCallId")
    }

    /// `signal.sourceToolName`.
    pub(crate) fn source_tool_name(&self) -> Option<&'a Value> {
        field(Some(self.raw), "sourceToolName")
    }
}

/// The kept messages, read: [`Node`]s in input order, the tool calls they own, and id →
/// position among the nodes.
pub(crate) struct Prepared<'a> {
    pub nodes: Vec<Node<'a>>,
    /// Every node's `tools` entries, one allocation for the whole input (`Node::tools` is a
    /// range into it).
    pub calls: Vec<ToolCall<'a>>,
    pub by_id: FastMap<&'a str, u32>,
    /// Earlier occurrences of a kept id with the same `parentId` as the kept one, as (input
    /// position, kept node), input order: upstream's `childrenMap` lists the id once per
    /// occurrence, so each is one more edge from the same parent to the kept message.
    pub repeats: Vec<(u32, u32)>,
    /// With duplicate ids: the kept nodes in the order their ids first occur (upstream's
    /// `messageMap` is a JS `Map`: a repeated `set` keeps the first place). Empty when no id
    /// repeats (the order is then the nodes' own).
    pub first_seen: Vec<u32>,
    /// The dropped copies of repeated ids, input order: upstream's scans of the input array
    /// (`allMessages.filter(m => m.parentId === …)`) still meet each of them.
    pub dropped: Vec<Node<'a>>,
}

/// Validate the input array, read every message's fields (one pass over each map: the id is
/// found in the same pass as the rest) and drop duplicate ids (keeping the last, as upstream's
/// `messageMap` does), reporting what was skipped.
pub(crate) fn prepare<'a>(messages: &'a [Value], diags: &mut Vec<Diagnostic>) -> Prepared<'a> {
    let mut nodes: Vec<Node<'a>> = Vec::with_capacity(messages.len());
    let mut calls: Vec<ToolCall<'a>> = Vec::new();
    let mut by_id: FastMap<&'a str, u32> = FastMap::with_capacity_and_hasher(messages.len(), Default::default());
    let mut duplicates = false;
    for (i, v) in messages.iter().enumerate() {
        let Some(map) = v.as_object() else {
            diags.push(Diagnostic::InvalidMessage { index: i, reason: "not an object".to_owned() });
            continue;
        };
        let f = Fields::of(map);
        let Some(id) = f.id.and_then(Value::as_str) else {
            diags.push(Diagnostic::InvalidMessage { index: i, reason: "no string `id`".to_owned() });
            continue;
        };
        duplicates |= by_id.insert(id, nodes.len() as u32).is_some();
        nodes.push(Node::read(map, f, id, i as u32, &mut calls));
    }
    let mut repeats = Vec::new();
    let mut first_seen = Vec::new();
    let mut dropped = Vec::new();
    if duplicates {
        // Rare: keep only each id's last occurrence (`by_id` names it), then renumber. The
        // dropped copies' tool calls stay in `calls`, unreferenced.
        let mut all = std::mem::take(&mut nodes);
        let kept: Vec<u32> = all.iter().map(|n| by_id.get(n.id).copied().unwrap_or(0)).collect();
        // Same-parent repeats, by old position of the kept node (renumbered below).
        let mut pending: Vec<(u32, u32)> = Vec::new();
        for (old, (node, &k)) in all.iter().zip(&kept).enumerate() {
            let k_node = &all[k as usize];
            if k as usize == old {
                continue;
            }
            diags.push(Diagnostic::DuplicateId {
                id: node.id.to_owned(),
                dropped_index: node.at as usize,
                kept_index: k_node.at as usize,
            });
            if node.parent_id == k_node.parent_id {
                pending.push((node.at, k));
            }
        }
        for &(at, k) in &pending {
            let kept_node = &mut all[k as usize];
            kept_node.first_at = kept_node.first_at.min(at);
        }
        let mut new_pos = vec![u32::MAX; all.len()];
        for (old, node) in all.into_iter().enumerate() {
            if kept[old] as usize == old {
                new_pos[old] = nodes.len() as u32;
                nodes.push(node);
            } else {
                dropped.push(node);
            }
        }
        repeats = pending.into_iter().map(|(at, k)| (at, new_pos[k as usize])).collect();
        let mut seen = vec![false; nodes.len()];
        for &k in &kept {
            let p = new_pos[k as usize];
            if let Some(s) = seen.get_mut(p as usize)
                && !*s
            {
                *s = true;
                first_seen.push(p);
            }
        }
        by_id = nodes.iter().enumerate().map(|(pos, n)| (n.id, pos as u32)).collect();
    }
    Prepared { nodes, calls, by_id, repeats, first_seen, dropped }
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
    /// Position of this id's first occurrence with the same `parentId` (`at` unless the id
    /// repeats): what upstream's searches over the input array (`messages.find`, the
    /// continuation candidates) return, where its `messageMap` returns the last.
    pub first_at: u32,
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
    pub group_id: Option<&'a str>,
    pub agent: Key<'a>,
    pub tool_call_id: Key<'a>,
    /// This message's entries in the shared tool-call list (`Index::calls`).
    pub tools: Range<u32>,
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
#[derive(Default, Clone, Copy)]
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
    /// Read the fields of one message (`at`: its input position; objects as `===` operands
    /// are keyed by it), appending its tool calls to `calls`.
    fn read(
        map: &'a Map<String, Value>,
        f: Fields<'a>,
        id: &'a str,
        at: u32,
        calls: &mut Vec<ToolCall<'a>>,
    ) -> Node<'a> {
        let owner = at as usize;
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
        let first_call = calls.len() as u32;
        if let Some(arr) = tools_arr {
            calls.extend(arr.iter().map(|t| ToolCall { raw: t, id: Key::of(t.get("id"), owner), result_tool: None }));
        }
        let tools = first_call..calls.len() as u32;
        let signal = if role == Role::Assistant && !non_empty(f.tools) {
            md.signal.filter(|&sig| truthy(Some(sig))).map(Signal::new)
        } else {
            None
        };
        let is_true = |v: Option<&Value>| v == Some(&Value::Bool(true));
        Node {
            parent_id: f.parent_id,
            compressed_group: f.role.and_then(Value::as_str) == Some("compressedGroup"),
            at,
            first_at: at,
            map,
            agent_override,
            id,
            role,
            created: time_of(f.created_at),
            parent: None,
            raw_parent: None,
            thread: truthy(f.thread_id),
            group_id: f.group_id.and_then(Value::as_str).filter(|s| !s.is_empty()),
            agent: Key::of(agent_override.or(f.agent_id), owner),
            tool_call_id: Key::of(f.tool_call_id, owner),
            tools,
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
