//! MessageCollector: assistant chains (assistant → tools → assistant …), their tool results,
//! signal callbacks and task completions — in both the flat-list and the context-tree form.
//!
//! Every walk here is a loop: a chain is as long as an agent run, and upstream's recursion
//! overflowed the JS stack on long ones.

use std::cmp::Ordering;

use crate::value::Value;

use super::branch::{View, non_tool, resolve_flat};
use super::context_node::{ContextNode, MessageNode, SignalCallbacksNode};
use super::fast_hash::SmallSet;
use super::indexing::Index;
use super::js::{Key, cmp_time, to_number};
use super::message::{Node, Role};
use super::node_id::NodeId;

/// A set of messages already placed (upstream's `processedIds`) or visited.
pub(crate) trait Marks {
    /// Is `i` in the set?
    fn has(&self, i: u32) -> bool;
    /// Put `i` in the set.
    fn mark(&mut self, i: u32);
}

impl Marks for SmallSet {
    fn has(&self, i: u32) -> bool {
        self.contains(i)
    }
    fn mark(&mut self, i: u32) {
        self.insert(i);
    }
}

/// One source tool's signal callbacks (flat form).
pub(crate) struct SignalBlock {
    pub tool: u32,
    /// Input positions of the callbacks (a repeated id is met once per copy).
    pub callbacks: Vec<u32>,
}

/// `collectToolMessages`: each call's result — by `result_msg_id` first, else the first tool
/// message under this assistant answering the call id. Deduplicated, call order; appended to
/// `out` (the chain's tool list).
fn tool_messages(ix: &Index<'_>, a: u32, out: &mut Vec<u32>) {
    let mut seen = SmallSet::default();
    for call in ix.calls(a) {
        if let Some(t) = call.result_tool {
            if seen.insert(t) {
                out.push(t);
            }
            continue;
        }
        let found = ix.raw_children(a).iter().copied().find(|&m| {
            let mn = ix.node(m);
            mn.role == Role::Tool && mn.tool_call_id.strict_eq(&call.id)
        });
        if let Some(f) = found
            && seen.insert(f)
        {
            out.push(f);
        }
    }
}

/// A tool whose result fans out (council broadcast or async tasks) ends a linear chain.
fn fans_out(ix: &Index<'_>, tool: u32) -> bool {
    ix.node(tool).agent_council || ix.raw_children(tool).iter().any(|&c| ix.node(c).role == Role::Task)
}

/// `findFlatChainContinuation`: the next same-agent assistant step, hung off the step itself
/// (new form) or off one of its tool results (old form). Marks every unselected candidate.
/// `candidates` is scratch space (one buffer serves a whole chain walk).
fn continuation<M: Marks>(
    ix: &Index<'_>,
    view: View<'_>,
    current: u32,
    tools: &[u32],
    marks: &mut M,
    group_agent: &Key<'_>,
    candidates: &mut Vec<u32>,
) -> Option<u32> {
    // Candidates hang off the step's tool results that do not fan out, and off the step
    // itself unless one does. A parent listed twice only repeats candidates, which the dedup
    // below removes, so the parents need no list of their own.
    let fan_out = tools.iter().any(|&t| fans_out(ix, t));
    let own = if fan_out { None } else { Some(current) };
    candidates.clear();
    candidates.extend(
        tools
            .iter()
            .copied()
            .filter(|&t| !fans_out(ix, t))
            .chain(own)
            .flat_map(|p| ix.raw_children(p).iter().copied())
            .filter(|&m| {
                let n = ix.node(m);
                n.role == Role::Assistant && !marks.has(m) && n.agent.strict_eq(group_agent) && n.signal.is_none()
            }),
    );
    // Upstream filters the whole input array (input order), then sorts stably by time.
    candidates.sort_unstable();
    candidates.dedup();
    candidates.sort_by(|&a, &b| by_time_then_position(ix, a, b));

    let active = resolve_active_continuation(ix, view, candidates, Some(current)).filter(|a| candidates.contains(a));
    for &c in candidates.iter() {
        if Some(c) != active {
            marks.mark(c);
        }
    }
    active
}

fn by_time_then_position(ix: &Index<'_>, a: u32, b: u32) -> Ordering {
    cmp_time(ix.node(a).created, ix.node(b).created).then(a.cmp(&b))
}

/// `resolveActiveContinuationId`: first pick the active direct child of the step (candidates
/// under different tool results compete), then resolve regenerated siblings under one parent.
pub(crate) fn resolve_active_continuation(
    ix: &Index<'_>,
    view: View<'_>,
    sorted: &[u32],
    owner: Option<u32>,
) -> Option<u32> {
    match sorted {
        [] => return None,
        // One candidate: it is the earliest, and alone among its siblings.
        [only] => return Some(*only),
        _ => {}
    }
    let mut narrowed: Option<Vec<u32>> = None;
    if let Some(o) = owner {
        let direct = view.kids(ix, o);
        let direct_set: SmallSet = direct.iter().copied().collect();
        let mut branch_ids = SmallSet::default();
        for &c in sorted {
            let rp = ix.node(c).raw_parent;
            let b = if rp == Some(o) { Some(c) } else { rp };
            if let Some(b) = b
                && direct_set.contains(b)
            {
                branch_ids.insert(b);
            }
        }
        if branch_ids.len() > 1 {
            let ordered: Vec<u32> = direct.iter().copied().filter(|&d| branch_ids.contains(d)).collect();
            let index_space = non_tool(ix, direct);
            let active = resolve_flat(ix, view, o, &ordered, &index_space)?;
            let kept: Vec<u32> =
                sorted.iter().copied().filter(|&c| c == active || ix.node(c).raw_parent == Some(active)).collect();
            if kept.is_empty() {
                return None;
            }
            narrowed = Some(kept);
        }
    }
    let candidates: &[u32] = narrowed.as_deref().unwrap_or(sorted);
    let earliest = candidates[0];
    let Some(parent) = ix.node(earliest).raw_parent else {
        return Some(earliest);
    };
    let eligible: SmallSet = candidates.iter().copied().collect();
    let direct_siblings = view.kids(ix, parent);
    let siblings: Vec<u32> = direct_siblings.iter().copied().filter(|&s| eligible.contains(s)).collect();
    if siblings.len() <= 1 {
        return Some(earliest);
    }
    let index_space = non_tool(ix, direct_siblings);
    resolve_flat(ix, view, parent, &siblings, &index_space)
}

/// `collectAssistantChain`: the steps of one run and all their tool results. Marks the steps
/// (and unselected continuations) in `marks`.
pub(crate) fn assistant_chain<M: Marks>(
    ix: &Index<'_>,
    view: View<'_>,
    start: u32,
    marks: &mut M,
) -> (Vec<u32>, Vec<u32>) {
    let mut chain: Vec<u32> = Vec::new();
    let mut tools: Vec<u32> = Vec::new();
    let mut scratch: Vec<u32> = Vec::new();
    let mut current = Some(start);
    while let Some(a) = current.take() {
        if marks.has(a) {
            break;
        }
        marks.mark(a);
        chain.push(a);
        let group_agent = ix.node(chain[0]).agent;
        let first_tool = tools.len();
        tool_messages(ix, a, &mut tools);
        let Some(mut next) = continuation(ix, view, a, &tools[first_tool..], marks, &group_agent, &mut scratch) else {
            break;
        };
        // Toolless continuations are prose steps of the same run: keep walking until the
        // next tool-using step (which starts the next round) or the end.
        loop {
            if ix.node(next).has_tools {
                current = Some(next);
                break;
            }
            chain.push(next);
            marks.mark(next);
            match continuation(ix, view, next, &[], marks, &group_agent, &mut scratch) {
                Some(n) => next = n,
                None => break,
            }
        }
    }
    (chain, tools)
}

/// `isToolChainHead`: a toolless assistant answering a user whose same-agent continuation
/// path reaches a tool-using step opens the group itself (memoised).
pub(crate) fn is_tool_chain_head(ix: &Index<'_>, a: u32) -> bool {
    if let Some(v) = ix.head_memo(a) {
        return v;
    }
    let node = ix.node(a);
    let result = node.role == Role::Assistant
        && !node.has_tools
        && node.raw_parent.is_some_and(|p| ix.node(p).role == Role::User)
        && {
            let agent = node.agent;
            let mut visited: SmallSet = SmallSet::from_iter([a]);
            let mut scratch: Vec<u32> = Vec::new();
            let mut current = a;
            loop {
                match continuation(ix, View::BASE, current, &[], &mut visited, &agent, &mut scratch) {
                    None => break false,
                    Some(next) if ix.node(next).has_tools => break true,
                    Some(next) => {
                        visited.insert(next);
                        current = next;
                    }
                }
            }
        };
    ix.set_head_memo(a, result);
    result
}

/// Sequence order of callbacks; a missing sequence sorts last.
fn by_sequence(a: &Node<'_>, b: &Node<'_>) -> Ordering {
    let key = |n: &Node<'_>| {
        let seq = n.signal.and_then(|s| s.sequence());
        let f = match seq {
            None | Some(Value::Null) => f64::INFINITY,
            Some(v) => to_number(Some(v)),
        };
        if f.is_nan() { f64::INFINITY } else { f }
    };
    key(a).total_cmp(&key(b))
}

/// `collectFlatSignalCallbacks`: one block per chain tool that has callback children (every
/// input copy of a repeated id, as upstream filters the input array).
pub(crate) fn flat_signal_callbacks(ix: &Index<'_>, tools: &[u32]) -> Vec<SignalBlock> {
    let mut blocks = Vec::new();
    for &t in tools {
        let mut callbacks: Vec<&Node<'_>> =
            ix.raw_occurrences(t).into_iter().filter(|c| c.signal.is_some_and(|s| s.is_callback())).collect();
        if callbacks.is_empty() {
            continue;
        }
        callbacks.sort_by(|a, b| by_sequence(a, b));
        blocks.push(SignalBlock { tool: t, callbacks: callbacks.iter().map(|c| c.at).collect() });
    }
    blocks
}

/// `collectFlatTaskCompletions`: task-completion turns under chain tools, by time (input
/// positions; every copy of a repeated id).
pub(crate) fn flat_task_completions(ix: &Index<'_>, tools: &[u32]) -> Vec<u32> {
    let mut out: Vec<&Node<'_>> = tools
        .iter()
        .flat_map(|&t| ix.raw_occurrences(t))
        .filter(|c| c.signal.is_some_and(|s| s.is_task_completion()))
        .collect();
    out.sort_by(|a, b| cmp_time(a.created, b.created));
    out.into_iter().map(|c| c.at).collect()
}

/// `findChainContinuationNode` (tree variant): candidates from tool results' tree children
/// first, then the step's own non-tool children; stable by time. `candidates` is scratch.
fn tree_continuation(ix: &Index<'_>, node: u32, agent: &Key<'_>, candidates: &mut Vec<u32>) -> Option<u32> {
    let kids = ix.tree_children(node);
    candidates.clear();
    let mut fan_out = false;
    for &t in kids {
        if ix.node(t).role != Role::Tool {
            continue;
        }
        let has_task = ix.tree_children(t).iter().any(|&c| ix.node(c).role == Role::Task);
        if ix.node(t).agent_council || has_task {
            fan_out = true;
            continue;
        }
        candidates.extend_from_slice(ix.tree_children(t));
    }
    if !fan_out {
        candidates.extend(kids.iter().copied().filter(|&c| ix.node(c).role != Role::Tool));
    }
    candidates.retain(|&c| {
        let n = ix.node(c);
        n.role == Role::Assistant && n.agent.strict_eq(agent) && n.signal.is_none()
    });
    candidates.sort_by(|&a, &b| cmp_time(ix.node(a).created, ix.node(b).created));
    let active = resolve_active_continuation(ix, View::BASE, candidates, Some(node))?;
    candidates.contains(&active).then_some(active)
}

/// `collectAssistantGroupMessages`: one message node per chain step, with its tool children;
/// also the last step (where `findNextAfterTools` starts).
pub(crate) fn tree_group_steps(ix: &Index<'_>, head: u32) -> (Vec<ContextNode>, u32) {
    let agent = ix.node(head).agent;
    let mut out = Vec::new();
    let mut last = head;
    let mut scratch: Vec<u32> = Vec::new();
    let mut current = Some(head);
    while let Some(step) = current {
        let tools: Vec<NodeId> = ix
            .tree_children(step)
            .iter()
            .filter(|&&c| ix.node(c).role == Role::Tool)
            .map(|&c| NodeId::new(ix.node(c).id))
            .collect();
        out.push(ContextNode::Message(MessageNode {
            id: NodeId::new(ix.node(step).id),
            tools: (!tools.is_empty()).then_some(tools),
        }));
        last = step;
        current = tree_continuation(ix, step, &agent, &mut scratch);
    }
    (out, last)
}

/// Visit every tool result on the group's main chain in upstream's walk order: a step's tool
/// children in order, descending into each tool's first same-agent non-signal follower before
/// the next sibling tool. Explicit stack.
fn for_each_main_chain_tool(ix: &Index<'_>, head: u32, mut visit: impl FnMut(u32)) {
    let agent = ix.node(head).agent;
    let mut visited: SmallSet = SmallSet::from_iter([head]);
    let mut stack: Vec<(u32, usize)> = vec![(head, 0)];
    while let Some(top) = stack.last_mut() {
        let kids = ix.tree_children(top.0);
        if top.1 >= kids.len() {
            stack.pop();
            continue;
        }
        let child = kids[top.1];
        top.1 += 1;
        if ix.node(child).role != Role::Tool {
            continue;
        }
        visit(child);
        let follower = ix.tree_children(child).iter().copied().find(|&f| {
            let n = ix.node(f);
            n.role == Role::Assistant && n.agent.strict_eq(&agent) && n.signal.is_none()
        });
        if let Some(f) = follower
            && visited.insert(f)
        {
            stack.push((f, 0));
        }
    }
}

/// `collectSignalCallbacks` and `collectTaskCompletions` (tree variants), from one walk over
/// the main chain's tools: one signal-callbacks node per source tool, and the same-agent
/// task-completion turns, both at the group's end.
pub(crate) fn tree_tool_extras(ix: &Index<'_>, head: u32) -> (Vec<ContextNode>, Vec<ContextNode>) {
    let agent = ix.node(head).agent;
    let mut blocks = Vec::new();
    let mut completions = Vec::new();
    for_each_main_chain_tool(ix, head, |tool| {
        let kids = ix.tree_children(tool);
        if !kids.iter().any(|&c| ix.node(c).signal.is_some()) {
            return;
        }
        let mut callbacks: Vec<u32> =
            kids.iter().copied().filter(|&c| ix.node(c).signal.is_some_and(|s| s.is_callback())).collect();
        if !callbacks.is_empty() {
            callbacks.sort_by(|&a, &b| by_sequence(ix.node(a), ix.node(b)));
            let first = ix.node(callbacks[0]).signal;
            let tool_id = ix.node(tool).id;
            blocks.push(ContextNode::SignalCallbacks(Box::new(SignalCallbacksNode {
                callbacks: callbacks.iter().map(|&c| ContextNode::Message(MessageNode::plain(ix.node(c).id))).collect(),
                id: format!("signalCallbacks-{tool_id}"),
                source_tool_call_id: first.and_then(|s| s.source_tool_call_id()).cloned(),
                source_tool_message_id: NodeId::new(tool_id),
                source_tool_name: first.and_then(|s| s.source_tool_name()).cloned(),
            })));
        }
        for &c in kids {
            let n = ix.node(c);
            if n.agent.strict_eq(&agent) && n.signal.is_some_and(|s| s.is_task_completion()) {
                completions.push(ContextNode::Message(MessageNode::plain(n.id)));
            }
        }
    });
    (blocks, completions)
}

/// `findNextAfterTools`: where the context tree continues after a group whose last step
/// (the end of its `findChainContinuationNode` walk, from `tree_group_steps`) is `last`.
pub(crate) fn next_after_tools(ix: &Index<'_>, last: u32) -> Option<u32> {
    let kids = ix.tree_children(last);
    // The index space only matters to an explicit `activeBranchIndex`.
    let index_space = if ix.node(last).active_branch_index.is_some() { non_tool(ix, kids) } else { Vec::new() };
    let active = resolve_flat(ix, View::BASE, last, kids, &index_space)?;
    let next = kids.iter().copied().find(|&k| k == active)?;
    let nn = ix.node(next);
    if nn.role != Role::Tool || nn.agent_council {
        return Some(next);
    }
    let tk = ix.tree_children(next);
    if tk.iter().any(|&c| ix.node(c).role == Role::Task) {
        return Some(next);
    }
    tk.first().copied()
}
