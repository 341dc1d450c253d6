//! Virtual flat-list messages: what the parse decides for assistant groups (their JSON is in
//! `rows_json`), and the tasks and compare rows, built whole.

use crate::value::{Map, Value};

use super::collector::SignalBlock;
use super::fast_hash::FastMap;
use super::indexing::{Index, NONE};
use super::js::{Key, js_number, time_of};
use super::message::Node;
use super::rows::{BuiltRow, GroupRow, Item};

/// What only the full group rule (upstream priority 2) adds to a group.
#[derive(Default)]
pub(crate) struct GroupExtras<'x> {
    pub signal_blocks: &'x [SignalBlock],
    pub task_completions: &'x [u32],
    pub council: Option<Vec<Item>>,
}

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

/// `createAssistantGroupMessage` over a collected chain, as a row descriptor: which tool
/// message answers each call (results are looked up by `tool_call_id` across the whole chain,
/// last one wins) and the blocks around the steps. An empty chain (upstream spreads
/// `undefined`) yields the bare shell upstream produces.
pub(crate) fn assistant_group(ix: &Index<'_>, chain: &[u32], tools: &[u32], extras: GroupExtras<'_>) -> GroupRow {
    let mut results = Vec::new();
    let any_calls = chain.iter().any(|&a| !ix.calls(a).is_empty());
    if any_calls {
        // Upstream's map from `tool_call_id` (truthy ones; the last message wins). A chain
        // rarely has more than a few tools: below `MAP_FROM` a reverse scan finds the same
        // message without building the map.
        const MAP_FROM: usize = 16;
        let tool_map: Option<FastMap<Key<'_>, u32>> = (tools.len() >= MAP_FROM).then(|| {
            let mut map = FastMap::with_capacity_and_hasher(tools.len(), Default::default());
            for &t in tools {
                let key = ix.node(t).tool_call_id;
                if key.is_truthy() {
                    map.insert(key, t);
                }
            }
            map
        });
        let answering = |id: &Key<'_>| -> Option<u32> {
            match &tool_map {
                Some(map) => map.get(id).copied(),
                None => tools.iter().rev().copied().find(|&t| {
                    let key = ix.node(t).tool_call_id;
                    key.is_truthy() && key == *id
                }),
            }
        };
        // A repeated tool message found by `result_msg_id` is upstream's `messageMap` entry
        // (the last occurrence); one found by searching the input is the first occurrence.
        let repeats = tools.iter().any(|&t| ix.node(t).first_at != ix.node(t).at);
        let mut by_result_id: Vec<u32> = if repeats {
            chain.iter().flat_map(|&a| ix.calls(a).iter().filter_map(|c| c.result_tool)).collect()
        } else {
            Vec::new()
        };
        by_result_id.sort_unstable();
        let object_of = |t: u32| {
            let node = ix.node(t);
            if node.first_at == node.at || by_result_id.binary_search(&t).is_ok() { node.at } else { node.first_at }
        };
        for &a in chain {
            for call in ix.calls(a) {
                let answer = match answering(&call.id) {
                    Some(t) if call.id.is_truthy() && call.raw.is_object() => object_of(t),
                    _ => NONE,
                };
                results.push(answer);
            }
        }
    }
    GroupRow {
        // Steps after the head are continuation candidates: upstream takes them from the input
        // array, so a repeated id is its first occurrence.
        chain: chain
            .iter()
            .enumerate()
            .map(|(k, &a)| if k == 0 { ix.node(a).at } else { ix.node(a).first_at })
            .collect(),
        results,
        council: extras.council.filter(|m| m.len() > 1),
        signal_blocks: extras.signal_blocks.iter().map(|b| (ix.node(b.tool).at, b.callbacks.clone())).collect(),
        completions: extras.task_completions.to_vec(),
        supervisor: chain.first().is_some_and(|&h| ix.node(h).supervisor),
        branch: None,
    }
}

/// `Math.min`/`Math.max` over a timestamp field of several messages, as JSON: numbers combine
/// like JS; other timestamps yield the extreme member's own value; unknown ones yield `null`.
pub(crate) fn extreme_time(ix: &Index<'_>, ids: &[u32], key: &str, max: bool) -> Value {
    extreme_time_of(ids.iter().map(|&i| ix.node(i)), key, max)
}

/// [`extreme_time`] over messages given as nodes (copies of repeated ids included).
fn extreme_time_of<'n, 'a: 'n>(nodes: impl Iterator<Item = &'n Node<'a>>, key: &str, max: bool) -> Value {
    let values: Vec<Option<&Value>> = nodes.map(|n| n.get(key)).collect();
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
pub(crate) fn tasks_message(ix: &Index<'_>, parent: u32, tasks: &[u32], group: bool) -> BuiltRow {
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
    m.insert("updatedAt".to_owned(), extreme_time(ix, tasks, "updatedAt", true));
    let items = tasks.iter().map(|&t| Item::Message(ix.node(t).at)).collect();
    BuiltRow { fields: m, list_key: "tasks", items, columns: false }
}

/// The compare row built from a parent's children (`metadata.compare`).
pub(crate) fn compare_from_children(
    ix: &Index<'_>,
    parent: u32,
    column_ids: &[u32],
    columns: Vec<Item>,
    active_column: Option<u32>,
) -> BuiltRow {
    let parent_id = ix.node(parent).id;
    let ids: Vec<&str> = column_ids.iter().map(|&c| ix.node(c).id).collect();
    let mut m = Map::new();
    if let Some(a) = active_column {
        m.insert("activeColumnId".to_owned(), s(ix.node(a).id));
    }
    m.insert("content".to_owned(), s(""));
    m.insert("createdAt".to_owned(), extreme_time(ix, column_ids, "createdAt", false));
    let mut extra = Map::new();
    extra.insert("parentMessageId".to_owned(), s(parent_id));
    m.insert("extra".to_owned(), Value::Object(extra));
    m.insert("id".to_owned(), s(&format!("compare-{parent_id}-{}", ids.join("-"))));
    m.insert("role".to_owned(), s("compare"));
    m.insert("updatedAt".to_owned(), extreme_time(ix, column_ids, "updatedAt", true));
    BuiltRow { fields: m, list_key: "columns", items: columns, columns: true }
}

/// The compare row built from a `messageGroups` entry (`mode: 'compare'`): `members` are every
/// input message carrying the group id, copies of repeated ids included (upstream filters the
/// input array).
pub(crate) fn compare_from_group(
    group_id: &str,
    mode: Option<&Value>,
    parent_message_id: Option<&Value>,
    members: &[&Node<'_>],
) -> BuiltRow {
    let mut m = Map::new();
    if let Some(a) = members.iter().find(|x| x.active_column) {
        m.insert("activeColumnId".to_owned(), s(a.id));
    }
    m.insert("content".to_owned(), s(""));
    m.insert("createdAt".to_owned(), extreme_time_of(members.iter().copied(), "createdAt", false));
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
    m.insert("updatedAt".to_owned(), extreme_time_of(members.iter().copied(), "updatedAt", true));
    let items = members.iter().map(|x| Item::Message(x.at)).collect();
    BuiltRow { fields: m, list_key: "columns", items, columns: true }
}
