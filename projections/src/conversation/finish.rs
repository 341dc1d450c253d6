//! Post-processing (upstream `parse.ts` after the builders): supervisor roles, usage hoisting,
//! hidden task-callback recovery and the messageMap clean-up.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fast_hash::FastSet;
use super::flat_list::Row;
use super::indexing::Index;
use super::js::{cmp_time, truthy};
use super::message::{Node, Role};
use super::usage::is_usage_key;

/// `role: 'assistant'` + `metadata.isSupervisor` (truthy): re-roled to `supervisor`.
fn is_legacy_supervisor(m: &Map<String, Value>) -> bool {
    m.get("role").and_then(Value::as_str) == Some("assistant")
        && truthy(m.get("metadata").and_then(Value::as_object).and_then(|md| md.get("isSupervisor")))
}

/// `metadata.usage` when the row has no truthy top-level `usage` (upstream's usage hoisting).
fn hoisted_usage(m: &Map<String, Value>) -> Option<&Value> {
    if truthy(m.get("usage")) {
        return None;
    }
    m.get("metadata").and_then(Value::as_object).and_then(|md| md.get("usage")).filter(|u| truthy(Some(u)))
}

/// Re-role and hoist on one row built by the parse (raw rows use the flags read in indexing).
fn finish_owned_row(m: &mut Map<String, Value>) {
    if is_legacy_supervisor(m) {
        m.insert("role".to_owned(), Value::String("supervisor".to_owned()));
    }
    if let Some(u) = hoisted_usage(m).cloned() {
        m.insert("usage".to_owned(), u);
    }
}

/// Re-role and hoist on one input message's row; the input is copied only when one applies.
fn finish_raw_row(node: &Node<'_>, row: &mut Cow<'_, Value>) {
    if !node.legacy_supervisor && !node.hoist_usage {
        return;
    }
    if let Value::Object(m) = row.to_mut() {
        finish_owned_row(m);
    }
}

/// The flat list as returned: re-roled supervisors, hoisted usage, recovered task callbacks.
pub(crate) fn flat_list<'a>(ix: &Index<'a>, rows: Vec<Row<'a>>) -> Vec<Cow<'a, Value>> {
    let mut rows = rows;
    for row in &mut rows {
        match (row.node, &mut row.value) {
            (Some(i), value @ Cow::Borrowed(_)) => finish_raw_row(ix.node(i), value),
            (_, Cow::Owned(Value::Object(m))) => finish_owned_row(m),
            _ => {}
        }
    }

    let hidden_exist = ix.nodes.iter().any(|n| n.role == Role::TaskCallback);
    if !hidden_exist {
        return rows.into_iter().map(|r| r.value).collect();
    }
    let visible: FastSet<&str> = rows.iter().filter_map(|r| r.value.get("id").and_then(Value::as_str)).collect();
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
            out.push(ix.node(h).row());
            next.next();
        }
        out.push(row.value);
    }
    out.extend(next.map(|(_, h)| ix.node(h).row()));
    out
}

/// messageMap: every kept message by id, supervisors re-roled, and tool-using assistants'
/// metadata reduced to usage/performance keys (dropped when none remain). Unchanged messages
/// borrow the input.
pub(crate) fn message_map<'a>(ix: &Index<'a>) -> BTreeMap<Cow<'a, str>, Cow<'a, Value>> {
    let mut entries: Vec<(Cow<'a, str>, Cow<'a, Value>)> = Vec::with_capacity(ix.nodes.len());
    for node in &ix.nodes {
        // Re-roled first, so a supervisor with tools keeps its full metadata.
        let (supervisor, reduce) = (node.legacy_supervisor, node.reduce_metadata);
        let value = if !supervisor && !reduce {
            node.row()
        } else {
            let mut m = node.owned_map(&["metadata"]);
            if supervisor {
                m.insert("role".to_owned(), Value::String("supervisor".to_owned()));
            }
            match node.get("metadata") {
                Some(Value::Object(md)) if reduce => {
                    let kept: Map<String, Value> =
                        md.iter().filter(|(k, _)| is_usage_key(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                    if !kept.is_empty() {
                        m.insert("metadata".to_owned(), Value::Object(kept));
                    }
                }
                Some(_) if reduce => {}
                Some(md) => {
                    m.insert("metadata".to_owned(), md.clone());
                }
                None => {}
            }
            Cow::Owned(Value::Object(m))
        };
        entries.push((Cow::Borrowed(node.id), value));
    }
    // Ids are unique after `prepare`; collecting sorts once and bulk-builds the tree.
    entries.into_iter().collect()
}
