//! Post-processing (upstream `parse.ts` after the builders): supervisor roles, usage hoisting,
//! hidden task-callback recovery and the messageMap clean-up.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::flat_list::Row;
use super::indexing::Index;
use super::js::{cmp_time, truthy};
use super::message::Role;
use super::usage::is_usage_key;

/// `role: 'assistant'` + `metadata.isSupervisor` → `role: 'supervisor'`.
fn supervisor_role(m: &mut Map<String, Value>) {
    let is_assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
    let flag = m.get("metadata").and_then(Value::as_object).and_then(|md| md.get("isSupervisor"));
    if is_assistant && truthy(flag) {
        m.insert("role".to_owned(), Value::String("supervisor".to_owned()));
    }
}

/// The flat list as returned: re-roled supervisors, hoisted usage, recovered task callbacks.
pub(crate) fn flat_list(ix: &Index<'_>, rows: Vec<Row>) -> Vec<Value> {
    let mut rows = rows;
    for row in &mut rows {
        if let Value::Object(m) = &mut row.value {
            supervisor_role(m);
            if !truthy(m.get("usage")) {
                let meta_usage = m
                    .get("metadata")
                    .and_then(Value::as_object)
                    .and_then(|md| md.get("usage"))
                    .filter(|u| truthy(Some(u)))
                    .cloned();
                if let Some(u) = meta_usage {
                    m.insert("usage".to_owned(), u);
                }
            }
        }
    }

    let visible: HashSet<&str> = rows.iter().filter_map(|r| r.value.get("id").and_then(Value::as_str)).collect();
    let mut hidden: Vec<u32> = (0..ix.nodes.len() as u32)
        .filter(|&i| {
            let n = ix.node(i);
            n.role == Role::TaskCallback && !visible.contains(n.id)
        })
        .collect();
    if hidden.is_empty() {
        return rows.into_iter().map(|r| r.value).collect();
    }
    hidden.sort_by(|&a, &b| cmp_time(ix.node(a).created, ix.node(b).created));

    // Each callback goes before the first row strictly newer than it. Inserted callbacks are
    // never newer than later ones (they are inserted oldest first), so the insertion point is
    // the first *original* row newer than the callback: a prefix maximum makes that a binary
    // search.
    let mut prefix_max = Vec::with_capacity(rows.len());
    let mut m = f64::NEG_INFINITY;
    for r in &rows {
        if r.time > m {
            m = r.time;
        }
        prefix_max.push(m);
    }
    let mut at: Vec<(usize, u32)> = hidden
        .into_iter()
        .map(|h| {
            let t = ix.node(h).created;
            let pos = if t.is_nan() { rows.len() } else { prefix_max.partition_point(|&pm| pm <= t) };
            (pos, h)
        })
        .collect();
    at.sort_by_key(|&(pos, _)| pos);

    let mut out = Vec::with_capacity(rows.len() + at.len());
    let mut next = at.into_iter().peekable();
    for (i, row) in rows.into_iter().enumerate() {
        while let Some(&(pos, h)) = next.peek() {
            if pos != i {
                break;
            }
            out.push(ix.node(h).to_value());
            next.next();
        }
        out.push(row.value);
    }
    out.extend(next.map(|(_, h)| ix.node(h).to_value()));
    out
}

/// messageMap: every kept message by id, supervisors re-roled, and tool-using assistants'
/// metadata reduced to usage/performance keys (dropped when none remain).
pub(crate) fn message_map(ix: &Index<'_>) -> Map<String, Value> {
    let mut out = Map::new();
    for node in &ix.nodes {
        let mut m = node.map.clone();
        supervisor_role(&mut m);
        let still_assistant = m.get("role").and_then(Value::as_str) == Some("assistant");
        if still_assistant && super::js::non_empty(m.get("tools")) && truthy(m.get("metadata")) {
            let kept: Map<String, Value> = match m.get("metadata") {
                Some(Value::Object(md)) => {
                    md.iter().filter(|(k, _)| is_usage_key(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
                }
                _ => Map::new(),
            };
            if kept.is_empty() {
                m.remove("metadata");
            } else {
                m.insert("metadata".to_owned(), Value::Object(kept));
            }
        }
        out.insert(node.id.to_owned(), Value::Object(m));
    }
    out
}
