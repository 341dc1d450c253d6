//! Virtual flat-list messages: assistant groups, supervisor bubbles, tasks and compare rows.
//!
//! Shapes follow upstream key for key: a group is the chain head spread with `role` replaced,
//! `content: ''`, one content block per step, and the keys upstream deletes removed; keys upstream
//! leaves `undefined` are simply absent.

use serde_json::{Map, Value};

use super::collector::SignalBlock;
use super::fast_hash::FastMap;
use super::indexing::Index;
use super::js::{Key, js_number, non_empty, time_of, truthy};
use super::usage::{aggregate, is_usage_key, split_metadata};

/// Keys of the head message a group or supervisor row replaces or deletes (never copied).
const REPLACED_KEYS: [&str; 7] = ["children", "content", "imageList", "metadata", "reasoning", "role", "tools"];

/// What only the full group rule (upstream priority 2) adds to a group.
#[derive(Default)]
pub(crate) struct GroupExtras<'x> {
    pub signal_blocks: &'x [SignalBlock],
    pub task_completions: &'x [u32],
    pub council: Option<Vec<Value>>,
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

/// `content || ''`.
fn content_or_empty(v: Option<&Value>) -> Value {
    match v {
        Some(c) if truthy(Some(c)) => c.clone(),
        _ => s(""),
    }
}

/// `content ?? ''`.
fn content_or_empty_nullish(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => s(""),
        Some(c) => c.clone(),
    }
}

/// Metadata entries that are not usage/performance.
fn other_metadata(meta: Option<&Value>) -> Map<String, Value> {
    match meta {
        Some(Value::Object(m)) => {
            m.iter().filter(|(k, _)| !is_usage_key(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        _ => Map::new(),
    }
}

/// Step usage/performance: top-level wins entirely, else read from metadata.
fn step_usage(msg: &Map<String, Value>) -> (Option<Value>, Option<Value>) {
    let (meta_usage, meta_perf) = split_metadata(msg.get("metadata"));
    let usage = msg.get("usage").filter(|u| truthy(Some(u))).cloned().or(meta_usage);
    let perf = msg.get("performance").filter(|p| truthy(Some(p))).cloned().or(meta_perf);
    (usage, perf)
}

/// The block fields shared by steps, supervisor bubbles and task completions.
fn base_block(msg: &Map<String, Value>, content: Value) -> Map<String, Value> {
    let mut b = Map::new();
    b.insert("content".to_owned(), content);
    if let Some(id) = msg.get("id") {
        b.insert("id".to_owned(), id.clone());
    }
    if let Some(e) = msg.get("error").filter(|e| truthy(Some(e))) {
        b.insert("error".to_owned(), e.clone());
    }
    for key in ["fileList", "imageList"] {
        if non_empty(msg.get(key)) {
            b.insert(key.to_owned(), msg[key].clone());
        }
    }
    b
}

/// `createAssistantGroupMessage` over a collected chain. An empty chain (upstream spreads
/// `undefined`) yields the bare shell upstream produces.
pub(crate) fn assistant_group(ix: &Index<'_>, chain: &[u32], tools: &[u32], extras: GroupExtras<'_>) -> Value {
    // Results are looked up by tool_call_id across the whole chain (last one wins).
    let mut tool_map: FastMap<Key<'_>, u32> = FastMap::default();
    for &t in tools {
        let key = ix.node(t).tool_call_id;
        if key.is_truthy() {
            tool_map.insert(key, t);
        }
    }

    let mut children: Vec<Map<String, Value>> = Vec::with_capacity(chain.len() + 1);
    for &a in chain {
        let node = ix.node(a);
        let msg = node.map;
        let tools_with_results: Vec<Value> = node
            .tools
            .iter()
            .map(|call| match (tool_map.get(&call.id), call.raw.as_object()) {
                (Some(&t), Some(raw)) if call.id.is_truthy() => {
                    let tm = ix.node(t).map;
                    let mut result = Map::new();
                    result.insert("content".to_owned(), content_or_empty(tm.get("content")));
                    result.insert("id".to_owned(), s(ix.node(t).id));
                    if let Some(e) = tm.get("error").filter(|e| truthy(Some(e))) {
                        result.insert("error".to_owned(), e.clone());
                    }
                    if let Some(e) = tm.get("pluginError").filter(|e| truthy(Some(e))) {
                        result.insert("error".to_owned(), e.clone());
                    }
                    if let Some(st) = tm.get("pluginState").filter(|e| truthy(Some(e))) {
                        result.insert("state".to_owned(), st.clone());
                    }
                    let mut with = raw.clone();
                    match tm.get("pluginIntervention") {
                        Some(iv) => with.insert("intervention".to_owned(), iv.clone()),
                        None => with.remove("intervention"),
                    };
                    with.insert("result".to_owned(), Value::Object(result));
                    with.insert("result_msg_id".to_owned(), s(ix.node(t).id));
                    Value::Object(with)
                }
                _ => call.raw.clone(),
            })
            .collect();

        let (usage, perf) = step_usage(msg);
        let other = other_metadata(msg.get("metadata"));
        let mut block = base_block(msg, content_or_empty(msg.get("content")));
        if let Some(p) = perf {
            block.insert("performance".to_owned(), p);
        }
        if let Some(r) = msg.get("reasoning").filter(|r| truthy(Some(r))) {
            block.insert("reasoning".to_owned(), r.clone());
        }
        if !tools_with_results.is_empty() {
            block.insert("tools".to_owned(), Value::Array(tools_with_results));
        }
        if let Some(u) = usage {
            block.insert("usage".to_owned(), u);
        }
        if !other.is_empty() {
            block.insert("metadata".to_owned(), Value::Object(other));
        }
        children.push(block);
    }

    let head = chain.first().map(|&h| ix.node(h));
    if let Some(members) = extras.council.filter(|m| m.len() > 1) {
        let mut block = Map::new();
        block.insert("content".to_owned(), s(""));
        block.insert("council".to_owned(), Value::Array(members));
        block.insert("id".to_owned(), s(&format!("council-{}", head.map_or("undefined", |h| h.id))));
        children.push(block);
    }

    let (agg_usage, agg_perf) = aggregate(children.iter());

    // Non-usage metadata of all steps, merged in order, lives on the first block only.
    let mut group_meta = Map::new();
    for c in &children {
        if let Some(Value::Object(m)) = c.get("metadata") {
            for (k, v) in m {
                group_meta.insert(k.clone(), v.clone());
            }
        }
    }
    if !group_meta.is_empty() && !children.is_empty() {
        let first_meta = children[0].entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = first_meta {
            for (k, v) in &group_meta {
                m.insert(k.clone(), v.clone());
            }
        }
        for c in children.iter_mut().skip(1) {
            c.remove("metadata");
        }
    }

    let is_supervisor = head.is_some_and(|h| h.supervisor);
    let mut result = head.map(|h| h.owned_map(&REPLACED_KEYS)).unwrap_or_default();
    result.insert("children".to_owned(), Value::Array(children.into_iter().map(Value::Object).collect()));
    result.insert("content".to_owned(), s(""));
    result.insert("role".to_owned(), s(if is_supervisor { "supervisor" } else { "assistantGroup" }));
    if let Some(p) = agg_perf {
        result.insert("performance".to_owned(), p);
    }
    if let Some(u) = agg_usage {
        result.insert("usage".to_owned(), u);
    }
    if !group_meta.is_empty() {
        result.insert("metadata".to_owned(), Value::Object(group_meta));
    }
    if is_supervisor {
        let mut m = match result.remove("metadata") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        m.insert("isSupervisor".to_owned(), Value::Bool(true));
        m.insert("orchestrationRole".to_owned(), s("supervisor"));
        result.insert("metadata".to_owned(), Value::Object(m));
    }

    if !extras.signal_blocks.is_empty() {
        let blocks = extras
            .signal_blocks
            .iter()
            .map(|block| {
                let first = ix.node(block.callbacks[0]).signal;
                let mut b = Map::new();
                b.insert(
                    "callbacks".to_owned(),
                    Value::Array(
                        block
                            .callbacks
                            .iter()
                            .map(|&c| {
                                let cn = ix.node(c);
                                let mut cb = Map::new();
                                cb.insert("content".to_owned(), content_or_empty_nullish(cn.get("content")));
                                cb.insert("id".to_owned(), s(cn.id));
                                for key in ["model", "provider"] {
                                    if let Some(v) = cn.get(key).filter(|v| !v.is_null()) {
                                        cb.insert(key.to_owned(), v.clone());
                                    }
                                }
                                if let Some(seq) = cn.signal.and_then(|sg| sg.sequence) {
                                    cb.insert("sequence".to_owned(), seq.clone());
                                }
                                Value::Object(cb)
                            })
                            .collect(),
                    ),
                );
                if let Some(v) = first.and_then(|f| f.source_tool_call_id) {
                    b.insert("sourceToolCallId".to_owned(), v.clone());
                }
                b.insert("sourceToolMessageId".to_owned(), s(ix.node(block.tool).id));
                if let Some(v) = first.and_then(|f| f.source_tool_name) {
                    b.insert("sourceToolName".to_owned(), v.clone());
                }
                Value::Object(b)
            })
            .collect();
        result.insert("signalCallbacks".to_owned(), Value::Array(blocks));
    }

    if !extras.task_completions.is_empty() {
        let blocks = extras
            .task_completions
            .iter()
            .map(|&c| {
                let m = ix.node(c).map;
                let mut b = base_block(m, content_or_empty_nullish(m.get("content")));
                for key in ["performance", "reasoning", "usage"] {
                    if let Some(v) = m.get(key).filter(|v| truthy(Some(v))) {
                        b.insert(key.to_owned(), v.clone());
                    }
                }
                Value::Object(b)
            })
            .collect();
        result.insert("taskCompletions".to_owned(), Value::Array(blocks));
    }

    Value::Object(result)
}

/// `createSupervisorContentMessage`: a toolless supervisor turn as a one-block bubble.
pub(crate) fn supervisor_content(ix: &Index<'_>, i: u32) -> Value {
    let msg = ix.node(i).map;
    let (usage, perf) = step_usage(msg);
    let other = other_metadata(msg.get("metadata"));
    let mut block = base_block(msg, content_or_empty(msg.get("content")));
    if let Some(p) = &perf {
        block.insert("performance".to_owned(), p.clone());
    }
    if let Some(r) = msg.get("reasoning").filter(|r| truthy(Some(r))) {
        block.insert("reasoning".to_owned(), r.clone());
    }
    if let Some(u) = &usage {
        block.insert("usage".to_owned(), u.clone());
    }
    if !other.is_empty() {
        block.insert("metadata".to_owned(), Value::Object(other.clone()));
    }
    let mut result = ix.node(i).owned_map(&REPLACED_KEYS);
    result.insert("children".to_owned(), Value::Array(vec![Value::Object(block)]));
    result.insert("content".to_owned(), s(""));
    result.insert("role".to_owned(), s("supervisor"));
    if let Some(p) = perf {
        result.insert("performance".to_owned(), p);
    }
    if let Some(u) = usage {
        result.insert("usage".to_owned(), u);
    }
    let mut meta = Map::new();
    meta.insert("isSupervisor".to_owned(), Value::Bool(true));
    meta.insert("orchestrationRole".to_owned(), s("supervisor"));
    for (k, v) in other {
        meta.insert(k, v);
    }
    result.insert("metadata".to_owned(), Value::Object(meta));
    Value::Object(result)
}

/// `Math.min`/`Math.max` over a timestamp field of several messages, as JSON: numbers combine
/// like JS; other timestamps yield the extreme member's own value; unknown ones yield `null`.
pub(crate) fn extreme_time(ix: &Index<'_>, ids: &[u32], key: &str, max: bool) -> Value {
    let values: Vec<Option<&Value>> = ids.iter().map(|&i| ix.node(i).get(key)).collect();
    if values.is_empty() {
        return js_number(if max { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    let mut best: Option<(f64, &Value)> = None;
    for v in values {
        let Some(v) = v else {
            return Value::Null;
        };
        let t = time_of(Some(v));
        if t.is_nan() {
            return Value::Null;
        }
        let better = match best {
            None => true,
            Some((b, _)) => {
                if max {
                    t > b
                } else {
                    t < b
                }
            }
        };
        if better {
            best = Some((t, v));
        }
    }
    match best {
        Some((t, Value::Number(_))) => js_number(t),
        Some((_, v)) => v.clone(),
        None => Value::Null,
    }
}

/// `createTasksMessage` / `createGroupTasksMessage` over tasks already sorted by time.
pub(crate) fn tasks_message(ix: &Index<'_>, parent: u32, tasks: &[u32], group: bool) -> Value {
    let prefix = if group { "groupTasks" } else { "tasks" };
    let ids: Vec<&str> = tasks.iter().map(|&t| ix.node(t).id).collect();
    let parent_id = ix.node(parent).id;
    let mut m = Map::new();
    m.insert("content".to_owned(), s(""));
    m.insert("createdAt".to_owned(), extreme_time(ix, tasks, "createdAt", false));
    let mut extra = Map::new();
    extra.insert("parentMessageId".to_owned(), s(parent_id));
    m.insert("extra".to_owned(), Value::Object(extra));
    m.insert("id".to_owned(), s(&format!("{prefix}-{parent_id}-{}", ids.join("-"))));
    m.insert("role".to_owned(), s(prefix));
    m.insert("tasks".to_owned(), Value::Array(tasks.iter().map(|&t| ix.node(t).to_value()).collect()));
    m.insert("updatedAt".to_owned(), extreme_time(ix, tasks, "updatedAt", true));
    Value::Object(m)
}

/// `{...message, branch: {activeBranchIndex, count}}`.
pub(crate) fn with_branch(mut v: Value, count: usize, active: usize) -> Value {
    if let Value::Object(m) = &mut v {
        let mut b = Map::new();
        b.insert("activeBranchIndex".to_owned(), Value::from(active));
        b.insert("count".to_owned(), Value::from(count));
        m.insert("branch".to_owned(), Value::Object(b));
    }
    v
}

/// The compare row built from a parent's children (`metadata.compare`).
pub(crate) fn compare_from_children(
    ix: &Index<'_>,
    parent: u32,
    column_ids: &[u32],
    columns: Vec<Value>,
    active_column: Option<u32>,
) -> Value {
    let parent_id = ix.node(parent).id;
    let ids: Vec<&str> = column_ids.iter().map(|&c| ix.node(c).id).collect();
    let mut m = Map::new();
    if let Some(a) = active_column {
        m.insert("activeColumnId".to_owned(), s(ix.node(a).id));
    }
    m.insert("columns".to_owned(), Value::Array(columns.into_iter().map(|c| Value::Array(vec![c])).collect()));
    m.insert("content".to_owned(), s(""));
    m.insert("createdAt".to_owned(), extreme_time(ix, column_ids, "createdAt", false));
    let mut extra = Map::new();
    extra.insert("parentMessageId".to_owned(), s(parent_id));
    m.insert("extra".to_owned(), Value::Object(extra));
    m.insert("id".to_owned(), s(&format!("compare-{parent_id}-{}", ids.join("-"))));
    m.insert("role".to_owned(), s("compare"));
    m.insert("updatedAt".to_owned(), extreme_time(ix, column_ids, "updatedAt", true));
    Value::Object(m)
}

/// The compare row built from a `messageGroups` entry (`mode: 'compare'`).
pub(crate) fn compare_from_group(
    ix: &Index<'_>,
    group_id: &str,
    mode: Option<&Value>,
    parent_message_id: Option<&Value>,
    members: &[u32],
) -> Value {
    let mut m = Map::new();
    if let Some(&a) = members.iter().find(|&&x| ix.node(x).active_column) {
        m.insert("activeColumnId".to_owned(), s(ix.node(a).id));
    }
    m.insert(
        "columns".to_owned(),
        Value::Array(members.iter().map(|&x| Value::Array(vec![ix.node(x).to_value()])).collect()),
    );
    m.insert("content".to_owned(), s(""));
    m.insert("createdAt".to_owned(), extreme_time(ix, members, "createdAt", false));
    let mut extra = Map::new();
    if let Some(mode) = mode {
        extra.insert("groupMode".to_owned(), mode.clone());
    }
    if let Some(p) = parent_message_id {
        extra.insert("parentMessageId".to_owned(), p.clone());
    }
    m.insert("extra".to_owned(), Value::Object(extra));
    m.insert("id".to_owned(), s(group_id));
    m.insert("role".to_owned(), s("compare"));
    m.insert("updatedAt".to_owned(), extreme_time(ix, members, "updatedAt", true));
    Value::Object(m)
}
