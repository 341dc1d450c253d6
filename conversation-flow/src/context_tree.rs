//! Phase 3a: the context tree — a linear array of semantic nodes, nested only inside branch,
//! compare, council and group nodes.
//!
//! Upstream's `transformToLinear` recurses per message. Here it is a work stack: every place
//! upstream recurses becomes a pushed work item, in the same order, so the branch-id counter
//! (shared with group compare ids, branch ids taken after their branches, i.e. post-order)
//! counts exactly as upstream does.

use std::io::{self, Write};

use crate::value::Value;

use super::branch::{non_tool, resolve_tree};
use super::collector::{is_tool_chain_head, next_after_tools, tree_group_steps, tree_tool_extras};
use super::context_node::{
    AgentCouncilNode, AssistantGroupNode, BranchNode, CompareNode, ContextNode, MessageNode, TasksNode,
};
use super::indexing::Index;
use super::message::Role;
use super::node_id::NodeId;

enum Work {
    Visit { node: u32, arr: usize },
    FinishBranch { msg: u32, arr: usize, first: usize, count: usize, active: usize },
}

fn message(ix: &Index<'_>, i: u32) -> ContextNode {
    ContextNode::Message(MessageNode::plain(ix.node(i).id))
}

fn is_assistant_group(ix: &Index<'_>, i: u32) -> bool {
    ix.node(i).role == Role::Assistant
        && (ix.tree_children(i).iter().any(|&c| ix.node(c).role == Role::Tool) || is_tool_chain_head(ix, i))
}

/// The group headed by `i`, and its last step (where the conversation continues).
fn assistant_group(ix: &Index<'_>, i: u32) -> (ContextNode, u32) {
    let (mut children, last) = tree_group_steps(ix, i);
    let (callbacks, completions) = tree_tool_extras(ix, i);
    children.extend(callbacks);
    children.extend(completions);
    (ContextNode::AssistantGroup(AssistantGroupNode { id: NodeId::new(ix.node(i).id), children }), last)
}

fn group_or_message(ix: &Index<'_>, i: u32) -> ContextNode {
    if is_assistant_group(ix, i) { assistant_group(ix, i).0 } else { message(ix, i) }
}

fn joined_ids(ix: &Index<'_>, ids: &[u32]) -> String {
    ids.iter().map(|&i| ix.node(i).id).collect::<Vec<_>>().join("-")
}

/// Build the context tree from the main-line roots.
pub(crate) fn build(ix: &Index<'_>) -> Vec<ContextNode> {
    let mut arrays: Vec<Vec<ContextNode>> = vec![Vec::new()];
    let mut counter: usize = 0;
    let mut work: Vec<Work> = ix.tree_roots.iter().rev().map(|&node| Work::Visit { node, arr: 0 }).collect();

    while let Some(item) = work.pop() {
        match item {
            Work::FinishBranch { msg, arr, first, count, active } => {
                let branches: Vec<Vec<ContextNode>> =
                    (first..first + count).map(|a| std::mem::take(&mut arrays[a])).collect();
                let id = format!("branch-{}-{counter}", ix.node(msg).id);
                counter += 1;
                arrays[arr].push(ContextNode::Branch(BranchNode {
                    id,
                    parent_message_id: NodeId::new(ix.node(msg).id),
                    active_branch_index: active,
                    branches,
                }));
            }
            Work::Visit { node, arr } => {
                visit(ix, node, arr, &mut arrays, &mut counter, &mut work);
            }
        }
    }
    std::mem::take(&mut arrays[0])
}

/// `transformToLinear` for one message, following tail continuations in a loop and pushing
/// every non-tail continuation onto `work` (reversed, so they run in upstream's order).
fn visit(
    ix: &Index<'_>,
    start: u32,
    arr: usize,
    arrays: &mut Vec<Vec<ContextNode>>,
    counter: &mut usize,
    work: &mut Vec<Work>,
) {
    let mut cur = Some(start);
    while let Some(m) = cur.take() {
        let node = ix.node(m);
        let kids = ix.tree_children(m);

        // 1. Compare from user metadata.
        if node.compare && kids.len() > 1 {
            arrays[arr].push(message(ix, m));
            let mut active = None;
            let columns = kids
                .iter()
                .map(|&c| {
                    if ix.node(c).active_column {
                        active = Some(c);
                    }
                    vec![group_or_message(ix, c)]
                })
                .collect();
            arrays[arr].push(ContextNode::Compare(Box::new(CompareNode {
                id: format!("compare-{}-{}", node.id, joined_ids(ix, kids)),
                message_id: Value::String(node.id.to_owned()),
                columns,
                active_column_id: active.map(|a| NodeId::new(ix.node(a).id)),
            })));
            cur = active.and_then(|a| ix.tree_children(a).first().copied());
            continue;
        }

        // 2. Compare from a messageGroups entry.
        if let Some(group) = ix.compare_group(m) {
            let members: &[u32] = ix.group_members.get(group.id).map(Vec::as_slice).unwrap_or_default();
            let active = members.iter().copied().find(|&x| ix.node(x).active_column);
            let id = format!("compare-{}-{}", group.id, *counter);
            *counter += 1;
            let message_id = group
                .parent_message_id
                .filter(|p| super::js::truthy(Some(p)))
                .cloned()
                .unwrap_or_else(|| Value::String(node.id.to_owned()));
            arrays[arr].push(ContextNode::Compare(Box::new(CompareNode {
                id,
                message_id,
                columns: members.iter().map(|&x| vec![message(ix, x)]).collect(),
                active_column_id: active.map(|a| NodeId::new(ix.node(a).id)),
            })));
            cur = active
                .and_then(|a| kids.iter().copied().find(|&k| k == a))
                .and_then(|a| ix.tree_children(a).first().copied());
            continue;
        }

        // 3. Agent council (broadcast tool with several answers).
        if node.agent_council && kids.len() > 1 {
            arrays[arr].push(ContextNode::AgentCouncil(Box::new(AgentCouncilNode {
                id: format!("agentCouncil-{}-{}", node.id, joined_ids(ix, kids)),
                message_id: NodeId::new(node.id),
                members: kids.iter().map(|&c| group_or_message(ix, c)).collect(),
            })));
            // Continue from every member: the supervisor's reply hangs off one of them.
            let next: Vec<u32> = kids.iter().filter_map(|&c| ix.tree_children(c).first().copied()).collect();
            work.extend(next.into_iter().rev().map(|node| Work::Visit { node, arr }));
            return;
        }

        // 3b. Several tasks under one message.
        let tasks: Vec<u32> = kids.iter().copied().filter(|&c| ix.node(c).role == Role::Task).collect();
        if kids.len() >= 2 && tasks.len() > 1 {
            arrays[arr].push(ContextNode::Tasks(Box::new(TasksNode {
                id: format!("tasks-{}-{}", node.id, joined_ids(ix, &tasks)),
                message_id: NodeId::new(node.id),
                children: tasks.iter().map(|&t| message(ix, t)).collect(),
            })));
            let mut next: Vec<u32> = kids.iter().copied().filter(|&c| ix.node(c).role != Role::Task).collect();
            for &t in &tasks {
                next.extend(ix.tree_children(t).iter().copied().filter(|&g| ix.node(g).role != Role::Task));
            }
            work.extend(next.into_iter().rev().map(|node| Work::Visit { node, arr }));
            return;
        }

        // 4. Assistant group.
        if is_assistant_group(ix, m) {
            let (group, last) = assistant_group(ix, m);
            arrays[arr].push(group);
            cur = next_after_tools(ix, last);
            continue;
        }

        // 6. Branch over the non-tool children; the branch is an end point. (Counted before
        // the list is built: most messages have one child.)
        if kids.iter().filter(|&&c| ix.node(c).role != Role::Tool).nth(1).is_some() {
            let branch_kids = non_tool(ix, kids);
            arrays[arr].push(message(ix, m));
            let active = resolve_tree(ix, m, &branch_kids)
                .and_then(|a| branch_kids.iter().position(|&k| k == a))
                .unwrap_or(branch_kids.len());
            let first = arrays.len();
            arrays.extend((0..branch_kids.len()).map(|_| Vec::new()));
            work.push(Work::FinishBranch { msg: m, arr, first, count: branch_kids.len(), active });
            work.extend(branch_kids.iter().enumerate().rev().map(|(k, &node)| Work::Visit { node, arr: first + k }));
            return;
        }

        // 7. Plain message; continue only through a single child.
        arrays[arr].push(message(ix, m));
        if kids.len() == 1 {
            cur = Some(kids[0]);
        }
    }
}

/// Write nodes as JSON without recursing on branch nesting (serde would recurse once per
/// nested branch; a long conversation of regenerations nests that deep).
pub fn write_json<W: Write>(w: &mut W, nodes: &[ContextNode]) -> io::Result<()> {
    enum Op<'n> {
        Close(&'static [u8]),
        CloseBranch(&'n BranchNode),
        Seq(&'n [ContextNode], usize),
        Branches(&'n [Vec<ContextNode>], usize),
    }
    let mut stack = vec![Op::Close(b"]"), Op::Seq(nodes, 0)];
    w.write_all(b"[")?;
    while let Some(op) = stack.pop() {
        match op {
            Op::Close(s) => w.write_all(s)?,
            Op::CloseBranch(b) => {
                w.write_all(b"],\"id\":")?;
                serde_json::to_writer(&mut *w, &b.id)?;
                w.write_all(b",\"parentMessageId\":")?;
                serde_json::to_writer(&mut *w, &b.parent_message_id)?;
                w.write_all(b",\"type\":\"branch\"}")?;
            }
            Op::Seq(items, i) => {
                let Some(node) = items.get(i) else { continue };
                if i > 0 {
                    w.write_all(b",")?;
                }
                stack.push(Op::Seq(items, i + 1));
                match node {
                    ContextNode::Branch(b) => {
                        write!(w, "{{\"activeBranchIndex\":{},\"branches\":[", b.active_branch_index)?;
                        stack.push(Op::CloseBranch(b));
                        stack.push(Op::Branches(&b.branches, 0));
                    }
                    other => crate::js_json::to_writer(&mut *w, other)?,
                }
            }
            Op::Branches(lists, i) => {
                let Some(list) = lists.get(i) else { continue };
                if i > 0 {
                    w.write_all(b",")?;
                }
                stack.push(Op::Branches(lists, i + 1));
                w.write_all(b"[")?;
                stack.push(Op::Close(b"]"));
                stack.push(Op::Seq(list, 0));
            }
        }
    }
    Ok(())
}
