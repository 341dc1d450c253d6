//! Phase 1 (indexing) and phase 2 (structuring): the maps every later phase reads.
//!
//! Upstream builds `messageMap`, `childrenMap` (with the compressed-group redirect and the
//! orphan fallback) and a recursive id tree. Here the same relations are flat arrays indexed by
//! message position: effective children, raw-`parentId` children (upstream's collector filters
//! by the raw field), the main-line tree (thread messages excluded) and, per message, the
//! newest user turn below it (so branch resolution is O(branches), not O(subtree)).
//! Cycles are cut here, once, so everything downstream walks a forest.

use std::cell::Cell;

use crate::value::{Map, Value};

use super::diagnostics::Diagnostic;
use super::fast_hash::FastMap;
use super::js::truthy;
use super::message::{Node, Prepared, Role, ToolCall};

/// `u32` marker for "none" in dense per-message arrays.
pub(crate) const NONE: u32 = u32::MAX;

/// Adjacency lists in one allocation (compressed sparse rows).
#[derive(Debug, Default)]
pub(crate) struct Csr {
    offsets: Vec<u32>,
    items: Vec<u32>,
}

impl Csr {
    fn build(n: usize, edges: impl Iterator<Item = (u32, u32)> + Clone) -> Csr {
        let mut counts = vec![0u32; n + 1];
        for (p, _) in edges.clone() {
            counts[p as usize + 1] += 1;
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut items = vec![0u32; counts[n] as usize];
        for (p, c) in edges {
            let slot = &mut fill[p as usize];
            items[*slot as usize] = c;
            *slot += 1;
        }
        Csr { offsets: counts, items }
    }

    pub(crate) fn of(&self, n: u32) -> &[u32] {
        let n = n as usize;
        &self.items[self.offsets[n] as usize..self.offsets[n + 1] as usize]
    }
}

/// A `messageGroups` entry.
#[derive(Debug)]
pub(crate) struct Group<'a> {
    pub id: &'a str,
    pub mode: Option<&'a Value>,
    pub parent_message_id: Option<&'a Value>,
}

impl Group<'_> {
    pub(crate) fn is_compare(&self) -> bool {
        self.mode.and_then(Value::as_str) == Some("compare")
    }
}

/// Everything parse reads, indexed by message position.
pub(crate) struct Index<'a> {
    /// The input messages (rows name them by position).
    pub input: &'a [Value],
    pub nodes: Vec<Node<'a>>,
    /// Every node's tool calls (`Node::tools` ranges into it).
    calls: Vec<ToolCall<'a>>,
    pub by_id: FastMap<&'a str, u32>,
    /// Nodes in the order their ids first occur, when an id repeats (else empty: node order).
    pub first_seen: Vec<u32>,
    /// Dropped copies of repeated ids (input order), `raw_parent` resolved.
    pub dropped: Vec<Node<'a>>,
    /// Effective roots (children of `null`), input order.
    pub roots: Vec<u32>,
    children: Csr,
    raw_children: Csr,
    tree_children: Csr,
    /// Main-line roots (no `threadId`).
    pub tree_roots: Vec<u32>,
    /// Newest non-thread user `createdAt` in each subtree (threads block the walk), or -inf.
    pub latest_user: Vec<f64>,
    pub groups: FastMap<&'a str, Group<'a>>,
    /// `groupId` → kept messages carrying it, in messageMap order.
    pub group_members: FastMap<&'a str, Vec<u32>>,
    /// Effective `task` children per message.
    pub task_children: Vec<u32>,
    head_memo: Vec<Cell<u8>>,
}

impl<'a> Index<'a> {
    /// Build the index over prepared messages and message groups.
    pub(crate) fn build(
        input: &'a [Value],
        prepared: Prepared<'a>,
        groups: &'a [Value],
        diags: &mut Vec<Diagnostic>,
    ) -> Index<'a> {
        let Prepared { mut nodes, mut calls, by_id, repeats, first_seen, mut dropped } = prepared;
        for d in &mut dropped {
            d.raw_parent = d.parent_id.and_then(Value::as_str).and_then(|p| by_id.get(p).copied());
        }
        let n = nodes.len();

        resolve_tool_results(&nodes, &mut calls, &by_id);
        let redirect = compressed_redirects(&nodes, &by_id);
        assign_parents(&mut nodes, &by_id, &redirect, diags);
        cut_cycles(&mut nodes, diags);

        // Edges to each message, one per occurrence in the input (upstream's `childrenMap`
        // pushes an id every time it meets it), in input order.
        let repeats = expandable_repeats(&nodes, repeats, diags);
        let mut edges: Vec<(u32, u32)> = (0..n as u32).map(|i| (nodes[i as usize].at, i)).collect();
        if !repeats.is_empty() {
            edges.extend(repeats);
            edges.sort_by_key(|&(at, _)| at);
        }
        let children = Csr::build(n, edges.iter().filter_map(|&(_, i)| nodes[i as usize].parent.map(|p| (p, i))));
        let raw_children =
            Csr::build(n, nodes.iter().enumerate().filter_map(|(i, node)| node.raw_parent.map(|p| (p, i as u32))));
        let tree_children = Csr::build(
            n,
            edges.iter().filter_map(|&(_, i)| {
                let node = &nodes[i as usize];
                node.parent.filter(|_| !node.thread).map(|p| (p, i))
            }),
        );
        let roots: Vec<u32> = edges.iter().map(|&(_, i)| i).filter(|&i| nodes[i as usize].parent.is_none()).collect();
        let tree_roots: Vec<u32> = roots.iter().copied().filter(|&i| !nodes[i as usize].thread).collect();

        let latest_user = latest_user_turns(&nodes, &roots, &children);
        report_orphan_threads(&nodes, &roots, diags);

        let mut group_map = FastMap::default();
        for (i, g) in groups.iter().enumerate() {
            match g.as_object().and_then(|m| m.get("id")).and_then(Value::as_str) {
                Some(id) => {
                    group_map
                        .insert(id, Group { id, mode: g.get("mode"), parent_message_id: g.get("parentMessageId") });
                }
                None => diags.push(Diagnostic::InvalidMessageGroup { index: i }),
            }
        }
        // In messageMap order (a JS `Map`: where each id first occurs), as upstream's tree
        // builder scans `messageMap.values()`.
        let mut group_members: FastMap<&'a str, Vec<u32>> = FastMap::default();
        let in_map_order: Box<dyn Iterator<Item = u32>> =
            if first_seen.is_empty() { Box::new(0..n as u32) } else { Box::new(first_seen.iter().copied()) };
        for i in in_map_order {
            if let Some(g) = nodes[i as usize].group_id {
                group_members.entry(g).or_default().push(i);
            }
        }
        // Per listing, like `childrenMap`: a repeated task counts once per occurrence.
        let mut task_children = vec![0u32; n];
        for p in 0..n as u32 {
            task_children[p as usize] =
                children.of(p).iter().filter(|&&c| nodes[c as usize].role == Role::Task).count() as u32;
        }

        Index {
            input,
            nodes,
            calls,
            by_id,
            first_seen,
            dropped,
            roots,
            children,
            raw_children,
            tree_children,
            tree_roots,
            latest_user,
            groups: group_map,
            group_members,
            task_children,
            head_memo: (0..n).map(|_| Cell::new(0)).collect(),
        }
    }

    /// The message at position `i`.
    pub(crate) fn node(&self, i: u32) -> &Node<'a> {
        &self.nodes[i as usize]
    }

    /// The `tools` entries of message `i`, in order.
    pub(crate) fn calls(&self, i: u32) -> &[ToolCall<'a>] {
        let r = &self.nodes[i as usize].tools;
        &self.calls[r.start as usize..r.end as usize]
    }

    /// Effective children (upstream `childrenMap`), input order.
    pub(crate) fn children(&self, i: u32) -> &[u32] {
        self.children.of(i)
    }

    /// Messages whose raw `parentId` is this message, input order.
    pub(crate) fn raw_children(&self, i: u32) -> &[u32] {
        self.raw_children.of(i)
    }

    /// Every input message carrying `group_id`, copies of repeated ids included, input order
    /// (upstream's `messages.filter(m => m.groupId === id)`).
    pub(crate) fn group_occurrences(&self, group_id: &str) -> Vec<&Node<'a>> {
        let mut out: Vec<&Node<'a>> =
            self.group_members.get(group_id).into_iter().flatten().map(|&i| self.node(i)).collect();
        out.extend(self.dropped.iter().filter(|d| d.group_id == Some(group_id)));
        out.sort_by_key(|n| n.at);
        out
    }

    /// The kept node with the id of the input message at `at`.
    pub(crate) fn kept_at(&self, at: u32) -> Option<u32> {
        let id = self.input.get(at as usize).and_then(|m| m.get("id")).and_then(Value::as_str)?;
        self.by_id.get(id).copied()
    }

    /// Every input message whose raw `parentId` is this message's id, dropped copies of
    /// repeated ids included, input order (upstream's `allMessages.filter(...)`).
    pub(crate) fn raw_occurrences(&self, i: u32) -> Vec<&Node<'a>> {
        let mut out: Vec<&Node<'a>> = self.raw_children(i).iter().map(|&c| self.node(c)).collect();
        if !self.dropped.is_empty() {
            out.extend(self.dropped.iter().filter(|d| d.raw_parent == Some(i)));
            out.sort_by_key(|n| n.at);
        }
        out
    }

    /// Main-line tree children (thread messages excluded), input order.
    pub(crate) fn tree_children(&self, i: u32) -> &[u32] {
        self.tree_children.of(i)
    }

    /// The messageGroups entry a message's `groupId` names, if it is a compare group.
    pub(crate) fn compare_group(&self, i: u32) -> Option<&Group<'a>> {
        self.node(i).group_id.and_then(|g| self.groups.get(g)).filter(|g| g.is_compare())
    }

    /// Cached `isToolChainHead` (a pure function of the graph).
    pub(crate) fn head_memo(&self, i: u32) -> Option<bool> {
        match self.head_memo[i as usize].get() {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        }
    }

    pub(crate) fn set_head_memo(&self, i: u32, v: bool) {
        self.head_memo[i as usize].set(if v { 2 } else { 1 });
    }
}

/// `result_msg_id` → the tool message with that id (upstream's `toolMessagesById`).
fn resolve_tool_results(nodes: &[Node<'_>], calls: &mut [ToolCall<'_>], by_id: &FastMap<&str, u32>) {
    for call in calls {
        let explicit = call.raw.get("result_msg_id");
        if !truthy(explicit) {
            continue;
        }
        call.result_tool = explicit
            .and_then(Value::as_str)
            .and_then(|id| by_id.get(id).copied())
            .filter(|&t| nodes[t as usize].role == Role::Tool);
    }
}

/// Compressed groups: the last message each one hides → the group's position. Looked up by
/// the hidden message's position when it is in the input (no second hash of every parent
/// id), else by its id.
struct Redirects<'a> {
    by_pos: Vec<u32>,
    by_id: FastMap<&'a str, u32>,
}

impl Redirects<'_> {
    /// The group that takes the children of `id` (at position `pos`, when it exists).
    fn get(&self, id: &str, pos: Option<u32>) -> Option<u32> {
        match pos {
            Some(p) => self.by_pos.get(p as usize).copied().filter(|&g| g != NONE),
            None if self.by_id.is_empty() => None,
            None => self.by_id.get(id).copied(),
        }
    }
}

fn compressed_redirects<'a>(nodes: &[Node<'a>], ids: &FastMap<&'a str, u32>) -> Redirects<'a> {
    let mut out = Redirects { by_pos: Vec::new(), by_id: FastMap::default() };
    for (i, node) in nodes.iter().enumerate() {
        if !node.compressed_group {
            continue;
        }
        let Some(last) = last_hidden_message_id(node.map) else {
            continue;
        };
        // A later group hiding the same message replaces an earlier one (a map insert).
        match ids.get(last) {
            Some(&p) => {
                if out.by_pos.is_empty() {
                    out.by_pos = vec![NONE; nodes.len()];
                }
                out.by_pos[p as usize] = i as u32;
            }
            None => {
                out.by_id.insert(last, i as u32);
            }
        }
    }
    out
}

/// Upstream's `getLastMessageIdFromCompressedDisplay`, as a loop (the display nesting is data).
fn last_hidden_message_id(map: &Map<String, Value>) -> Option<&str> {
    let mut cur = map;
    loop {
        if let Some(last) = cur.get("lastMessageId").filter(|v| truthy(Some(v))) {
            return last.as_str();
        }
        let last_of = |key: &str| cur.get(key).and_then(Value::as_array).and_then(|a| a.last());
        if let Some(next) = last_of("compressedMessages").or_else(|| last_of("children")) {
            match next.as_object() {
                Some(obj) => {
                    cur = obj;
                    continue;
                }
                None => return None,
            }
        }
        if let Some(tools) = cur.get("tools").and_then(Value::as_array).filter(|t| !t.is_empty()) {
            let result = tools.last().and_then(|t| t.get("result_msg_id"));
            return match result {
                Some(Value::Null) | None => cur.get("id").and_then(Value::as_str),
                Some(v) => v.as_str(),
            };
        }
        return cur.get("id").and_then(Value::as_str);
    }
}

/// Effective parents: redirect into compressed groups, else orphan fallback to root.
fn assign_parents(
    nodes: &mut [Node<'_>],
    by_id: &FastMap<&str, u32>,
    redirect: &Redirects<'_>,
    diags: &mut Vec<Diagnostic>,
) {
    for (i, node) in nodes.iter_mut().enumerate() {
        let raw = node.parent_id;
        let raw_id = raw.and_then(Value::as_str);
        node.raw_parent = raw_id.and_then(|p| by_id.get(p).copied());
        // Ids are unique, so naming oneself is naming one's own position.
        if node.raw_parent == Some(i as u32) {
            // A message naming itself as parent is a root; a compressed-group redirect of
            // that id still applies, as upstream.
            diags.push(Diagnostic::SelfParent { id: node.id.to_owned() });
            node.raw_parent = None;
            node.parent = raw_id.and_then(|p| redirect.get(p, Some(i as u32)));
            continue;
        }
        node.parent = match raw {
            None | Some(Value::Null) => None,
            Some(v) if !truthy(Some(v)) => {
                // Upstream files "" / 0 / false under a parent that never exists, so the
                // message would vanish; it becomes a root instead.
                diags.push(Diagnostic::MissingParent { id: node.id.to_owned(), parent_id: v.clone() });
                None
            }
            Some(v) => match raw_id.and_then(|p| redirect.get(p, node.raw_parent)) {
                Some(g) => Some(g),
                None => match node.raw_parent {
                    Some(p) => Some(p),
                    None => {
                        diags.push(Diagnostic::MissingParent { id: node.id.to_owned(), parent_id: v.clone() });
                        None
                    }
                },
            },
        };
    }
}

/// Find every cycle of effective parent links and cut it at its earliest member.
///
/// Each message has at most one parent, so a walk upwards either reaches a root, a message
/// already known to be fine, or its own path (a cycle). Linear overall.
fn cut_cycles(nodes: &mut [Node<'_>], diags: &mut Vec<Diagnostic>) {
    const UNSEEN: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let n = nodes.len();
    let mut state = vec![UNSEEN; n];
    let mut path: Vec<u32> = Vec::new();
    for start in 0..n {
        if state[start] != UNSEEN {
            continue;
        }
        path.clear();
        let mut cur = Some(start as u32);
        while let Some(c) = cur {
            match state[c as usize] {
                DONE => break,
                ON_PATH => {
                    let from = path.iter().position(|&p| p == c).unwrap_or(0);
                    let mut cycle: Vec<u32> = path[from..].to_vec();
                    // `path` runs child → parent; report parent → child order.
                    cycle.reverse();
                    let cut = cycle.iter().copied().min_by_key(|&m| nodes[m as usize].at).unwrap_or(c);
                    let cut_node = &mut nodes[cut as usize];
                    cut_node.parent = None;
                    cut_node.raw_parent = None;
                    if cycle.len() == 1 {
                        diags.push(Diagnostic::SelfParent { id: cut_node.id.to_owned() });
                    } else {
                        diags.push(Diagnostic::ParentCycle {
                            ids: cycle.iter().map(|&m| nodes[m as usize].id.to_owned()).collect(),
                            broken_at: nodes[cut as usize].id.to_owned(),
                        });
                    }
                    break;
                }
                _ => {
                    state[c as usize] = ON_PATH;
                    path.push(c);
                    cur = nodes[c as usize].parent;
                }
            }
        }
        for &p in &path {
            state[p as usize] = DONE;
        }
    }
}

/// Most tree nodes the repeated edges of duplicate ids may expand the input to, per message.
const EXPANSION_PER_MESSAGE: u64 = 4;

/// The repeat edges to keep: all of them, unless the subtrees they copy would make the tree
/// more than [`EXPANSION_PER_MESSAGE`] times the input (duplicates nested under duplicates
/// grow it exponentially, where upstream runs out of memory); then none.
fn expandable_repeats(nodes: &[Node<'_>], repeats: Vec<(u32, u32)>, diags: &mut Vec<Diagnostic>) -> Vec<(u32, u32)> {
    if repeats.is_empty() {
        return repeats;
    }
    let n = nodes.len();
    let mut copies = vec![1u64; n];
    for &(_, k) in &repeats {
        copies[k as usize] += 1;
    }
    // Size of each subtree counting repeated edges: children before parents.
    let kids = Csr::build(n, nodes.iter().enumerate().filter_map(|(i, node)| node.parent.map(|p| (p, i as u32))));
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut stack: Vec<u32> = (0..n as u32).filter(|&i| nodes[i as usize].parent.is_none()).collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(kids.of(i).iter().copied());
    }
    let mut size = vec![1u64; n];
    let mut total = 0u64;
    for &i in order.iter().rev() {
        let s = kids
            .of(i)
            .iter()
            .fold(1u64, |acc, &c| acc.saturating_add(size[c as usize].saturating_mul(copies[c as usize])));
        size[i as usize] = s;
        if nodes[i as usize].parent.is_none() {
            total = total.saturating_add(s.saturating_mul(copies[i as usize]));
        }
    }
    let limit = EXPANSION_PER_MESSAGE.saturating_mul(n as u64).max(1024);
    if total > limit {
        diags.push(Diagnostic::DuplicatesNotRepeated { tree_nodes: total, limit });
        return Vec::new();
    }
    repeats
}

/// Newest user turn per subtree, bottom-up over the forest (iterative).
fn latest_user_turns(nodes: &[Node<'_>], roots: &[u32], children: &Csr) -> Vec<f64> {
    let mut order: Vec<u32> = Vec::with_capacity(nodes.len());
    let mut stack: Vec<u32> = roots.iter().rev().copied().collect();
    // A repeated id is listed under its parent more than once; its subtree is walked once.
    let mut seen = vec![false; nodes.len()];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i as usize], true) {
            continue;
        }
        order.push(i);
        stack.extend(children.of(i).iter().copied());
    }
    let mut best = vec![f64::NEG_INFINITY; nodes.len()];
    for &i in order.iter().rev() {
        let node = &nodes[i as usize];
        if node.thread {
            // The walk skips a thread message and never descends through it.
            continue;
        }
        let mut b = if node.role == Role::User && !node.created.is_nan() { node.created } else { f64::NEG_INFINITY };
        for &c in children.of(i) {
            if best[c as usize] > b {
                b = best[c as usize];
            }
        }
        best[i as usize] = b;
    }
    best
}

/// Threads whose root messages hang off nothing (a thread view without its source message).
fn report_orphan_threads(nodes: &[Node<'_>], roots: &[u32], diags: &mut Vec<Diagnostic>) {
    let mut by_thread: Vec<(&str, Vec<String>)> = Vec::new();
    for &r in roots {
        let node = &nodes[r as usize];
        if !node.thread {
            continue;
        }
        // Read here, not kept per message: only orphan thread roots need it.
        let tid = node.map.get("threadId").and_then(Value::as_str).unwrap_or("");
        match by_thread.iter_mut().find(|(t, _)| *t == tid) {
            Some((_, ids)) => ids.push(node.id.to_owned()),
            None => by_thread.push((tid, vec![node.id.to_owned()])),
        }
    }
    for (thread_id, root_ids) in by_thread {
        diags.push(Diagnostic::OrphanThread { thread_id: thread_id.to_owned(), root_ids });
    }
}
