//! Post-processing (upstream `parse.ts` after the builders): hidden task-callback recovery and
//! the messageMap's order. Supervisor re-roling, usage hoisting and the messageMap clean-up
//! are per-message rewrites applied when rows are written (`rows::MessageJson`).

use super::flat_list::Placed;
use super::indexing::Index;
use super::js::cmp_time;
use super::message::{Node, Role};
use super::rows::Row;
use crate::value::{Value, array_index};

/// The flat list as returned: recovered task callbacks inserted by time.
pub(crate) fn flat_list(ix: &Index<'_>, rows: Vec<Placed>) -> Vec<Row> {
    let hidden_exist = ix.nodes.iter().chain(ix.dropped.iter()).any(|n| n.role == Role::TaskCallback);
    if !hidden_exist {
        return rows.into_iter().map(|r| r.row).collect();
    }
    // Upstream compares the ids rows show. A row that names a message shows that message's
    // id, and kept ids are unique, so it shows a callback's id exactly when it names the
    // callback's position: a flag per input position, no id hashing. Built rows (tasks,
    // compare) show ids of their own, compared as strings.
    let mut shown = vec![false; ix.input.len()];
    let mut built_ids: Vec<&str> = Vec::new();
    for r in &rows {
        match &r.row {
            Row::Message { at, .. } | Row::Branch { at, .. } | Row::Supervisor { at } => shown[*at as usize] = true,
            Row::Group(g) => {
                if let Some(&head) = g.chain.first() {
                    shown[head as usize] = true;
                }
            }
            Row::Built(b) => {
                if let Some(id) = b.fields.get("id").and_then(Value::as_str) {
                    built_ids.push(id);
                }
            }
        }
    }
    // Every input copy of a hidden callback id is recovered (upstream filters the input
    // array); a copy is shown when its id's kept message is.
    let shown_id = |n: &Node<'_>| match ix.by_id.get(n.id) {
        Some(&k) => shown[ix.node(k).at as usize],
        None => false,
    };
    let mut hidden: Vec<&Node<'_>> = ix
        .nodes
        .iter()
        .chain(ix.dropped.iter())
        .filter(|n| n.role == Role::TaskCallback && !shown_id(n) && !built_ids.contains(&n.id))
        .collect();
    if hidden.is_empty() {
        return rows.into_iter().map(|r| r.row).collect();
    }
    hidden.sort_by_key(|n| n.at);
    hidden.sort_by(|a, b| cmp_time(a.created, b.created));

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
    let mut at: Vec<(usize, &Node<'_>)> = hidden
        .into_iter()
        .map(|h| {
            let t = h.created;
            let pos = if t.is_nan() { rows.len() } else { prefix_max.partition_point(|&pm| pm <= t) };
            (pos, h)
        })
        .collect();
    at.sort_by_key(|&(pos, _)| pos);

    // Recovered callbacks are inserted after post-processing: written as given.
    let callback = |h: &Node<'_>| Row::Message { at: h.at, finish: false };
    let mut out = Vec::with_capacity(rows.len() + at.len());
    let mut next = at.into_iter().peekable();
    for (i, row) in rows.into_iter().enumerate() {
        while let Some(&(pos, h)) = next.peek() {
            if pos != i {
                break;
            }
            out.push(callback(h));
            next.next();
        }
        out.push(row.row);
    }
    out.extend(next.map(|(_, h)| callback(h)));
    out
}

/// messageMap: the input position of every kept message, in the order `JSON.stringify` writes
/// upstream's object: array-index ids (`"0"`, `"42"`) first in numeric order, then every other
/// id where it first occurs in the input.
pub(crate) fn message_map(ix: &Index<'_>) -> Vec<u32> {
    let mut order: Vec<u32> =
        if ix.first_seen.is_empty() { (0..ix.nodes.len() as u32).collect() } else { ix.first_seen.clone() };
    if order.iter().any(|&i| array_index(ix.node(i).id).is_some()) {
        order.sort_by_key(|&i| array_index(ix.node(i).id).map_or(u64::MAX, u64::from));
    }
    order.into_iter().map(|i| ix.node(i).at).collect()
}
