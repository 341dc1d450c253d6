//! Phase 3b: the flat list — the active path as render rows, with virtual rows for groups,
//! tasks and compare, then a stable sort by `createdAt`.
//!
//! Upstream's `buildFlatListRecursive` recurses per message and resumes loops after each
//! recursive call; its side effects (which messages are consumed, in which order) decide the
//! output. This is the same procedure as an explicit stack of frames: each frame is one
//! upstream call with its loop position saved, a "call" pushes frames, a finished frame pops.

use crate::value::Value;

use super::branch::{View, non_tool, resolve_flat};
use super::collector::{Marks, assistant_chain, flat_signal_callbacks, flat_task_completions, is_tool_chain_head};
use super::fast_hash::{FastSet, SmallSet};
use super::indexing::{Index, NONE};
use super::js::{Key, cmp_time, time_of};
use super::message::Role;
use super::processed::Processed;
use super::rows::{BuiltRow, GroupRow, Item, Row};
use super::virtual_message::{GroupExtras, assistant_group, compare_from_children, compare_from_group, tasks_message};

/// One flat-list row and its sort time.
pub(crate) struct Placed {
    pub row: Row,
    pub time: f64,
}

/// A `childrenMap` entry as read at call time (later narrowing does not affect it).
#[derive(Clone, Copy)]
enum Kids {
    Roots,
    Base(u32),
    Single(u32),
}

impl Kids {
    fn slice<'s>(&'s self, ix: &'s Index<'_>) -> &'s [u32] {
        match self {
            Kids::Roots => &ix.roots,
            Kids::Base(p) => ix.children(*p),
            Kids::Single(c) => std::slice::from_ref(c),
        }
    }
}

enum BuildState {
    Start,
    TasksRest { non_task: Vec<u32>, tasks: Vec<u32>, i: usize },
    TasksGrand { tasks: Vec<u32>, ti: usize, grand: Option<Vec<u32>>, gi: usize },
    Main { kids: Kids, i: usize },
}

enum AfterState {
    Start,
    Loop { queue: Vec<(u32, u32)>, pos: usize, attempted: Option<u32> },
}

enum Frame {
    /// `buildFlatListRecursive(parent)`.
    Build { parent: Option<u32>, state: BuildState },
    /// `continueAfterAssistantGroup(chain, tools)`.
    After { last: Option<u32>, tools: Vec<u32>, state: AfterState },
    /// The `finally` of `buildFlatListRecursiveForChild`: restore the parent's children.
    Restore { parent: u32, previous: u32 },
}

enum Step {
    Done,
    /// Call one frame (the common case, without a `Vec`).
    Call1(Frame),
    /// Call the first frame, then the second (without a `Vec`).
    Call2(Frame, Frame),
    Call(Vec<Frame>),
}

fn build_frame(parent: u32) -> Frame {
    Frame::Build { parent: Some(parent), state: BuildState::Start }
}

struct Builder<'i, 'a> {
    ix: &'i Index<'a>,
    restricted: Vec<u32>,
    processed: Processed,
    groups_done: FastSet<&'a str>,
    rows: Vec<Placed>,
}

/// Build the flat list (before parse's post-processing).
pub(crate) fn build(ix: &Index<'_>) -> Vec<Placed> {
    let mut b = Builder {
        ix,
        restricted: vec![NONE; ix.nodes.len()],
        processed: Processed::new(ix),
        groups_done: FastSet::default(),
        rows: Vec::with_capacity(ix.nodes.len()),
    };
    // After indexing every message is reachable from a root (orphans are roots, cycles are
    // cut), so upstream's "no root: start at the first message's parent" case cannot arise.
    let mut stack = vec![Frame::Build { parent: None, state: BuildState::Start }];
    while let Some(mut frame) = stack.pop() {
        match b.step(&mut frame) {
            Step::Done => {}
            Step::Call1(callee) => {
                stack.push(frame);
                stack.push(callee);
            }
            Step::Call2(first, second) => {
                stack.push(frame);
                stack.push(second);
                stack.push(first);
            }
            Step::Call(callees) => {
                stack.push(frame);
                stack.extend(callees.into_iter().rev());
            }
        }
    }
    let mut rows = b.rows;
    sort_rows(&mut rows);
    rows
}

/// Stable sort by time; a row without a usable time keeps the time of the row before it, so
/// it stays where traversal put it (JS's NaN comparisons have no stable meaning).
fn sort_rows(rows: &mut Vec<Placed>) {
    let mut carried = f64::NEG_INFINITY;
    let mut keyed: Vec<(f64, Placed)> = Vec::with_capacity(rows.len());
    for r in rows.drain(..) {
        if !r.time.is_nan() {
            carried = r.time;
        }
        keyed.push((carried, r));
    }
    // `sort_by` is stable: equal times keep traversal order, as upstream's stable sort.
    keyed.sort_by(|a, b| cmp_time(a.0, b.0));
    rows.extend(keyed.into_iter().map(|(_, r)| r));
}

impl<'i, 'a> Builder<'i, 'a> {
    fn view(&self) -> View<'_> {
        View::new(&self.restricted)
    }

    fn kids(&self, i: u32) -> Vec<u32> {
        self.view().kids(self.ix, i).to_vec()
    }

    fn done(&self, i: u32) -> bool {
        self.processed.has(i)
    }

    fn mark(&mut self, i: u32) {
        self.processed.mark(i);
    }

    fn push_raw(&mut self, i: u32) {
        let node = self.ix.node(i);
        self.rows.push(Placed { row: Row::Message { at: node.at, finish: true }, time: node.created });
    }

    /// Push a tasks or compare row. Its `createdAt` is a `Math.min` result, where `null`
    /// stands for JS NaN.
    fn push_built(&mut self, row: BuiltRow) {
        let time = match row.fields.get("createdAt") {
            Some(Value::Null) => f64::NAN,
            other => time_of(other),
        };
        self.rows.push(Placed { row: Row::Built(Box::new(row)), time });
    }

    /// Push a group row over `chain`; it sorts by its head's `createdAt`.
    fn push_group(&mut self, group: GroupRow, chain: &[u32]) {
        let time = chain.first().map_or(f64::NAN, |&h| self.ix.node(h).created);
        self.rows.push(Placed { row: Row::Group(Box::new(group)), time });
    }

    /// Push a toolless supervisor turn's bubble; it sorts by the turn's `createdAt`.
    fn push_supervisor(&mut self, i: u32) {
        let node = self.ix.node(i);
        self.rows.push(Placed { row: Row::Supervisor { at: node.at }, time: node.created });
    }

    fn step(&mut self, frame: &mut Frame) -> Step {
        match frame {
            Frame::Restore { parent, previous } => {
                self.restricted[*parent as usize] = *previous;
                Step::Done
            }
            Frame::After { last, tools, state } => self.step_after(*last, tools, state),
            Frame::Build { parent, state } => self.step_build(*parent, state),
        }
    }

    /// `buildFlatListRecursiveForChild`: narrow `parent` to `child` for one nested build.
    fn call_for_child(&mut self, parent: u32, child: u32) -> Step {
        let previous = self.restricted[parent as usize];
        self.restricted[parent as usize] = child;
        Step::Call2(build_frame(parent), Frame::Restore { parent, previous })
    }

    fn step_build(&mut self, parent: Option<u32>, state: &mut BuildState) -> Step {
        loop {
            match state {
                BuildState::Start => {
                    let kids = match parent {
                        None => Kids::Roots,
                        Some(p) => match self.restricted[p as usize] {
                            NONE => Kids::Base(p),
                            c => Kids::Single(c),
                        },
                    };
                    *state = BuildState::Main { kids, i: 0 };
                    if let Some(p) = parent {
                        let ix = self.ix;
                        let list = kids.slice(ix);
                        if list.iter().filter(|&&c| ix.node(c).role == Role::Task).nth(1).is_some() {
                            let list = list.to_vec();
                            if let Some(next) = self.tasks_rule(p, &list) {
                                *state = next;
                            }
                        }
                    }
                }
                BuildState::TasksRest { non_task, tasks, i } => {
                    while *i < non_task.len() {
                        let c = non_task[*i];
                        *i += 1;
                        if self.done(c) {
                            continue;
                        }
                        let node = self.ix.node(c);
                        if node.role == Role::Assistant && node.has_tools {
                            return self.assistant_group_with_council(c);
                        }
                        self.push_raw(c);
                        self.mark(c);
                        return Step::Call1(build_frame(c));
                    }
                    *state = BuildState::TasksGrand { tasks: std::mem::take(tasks), ti: 0, grand: None, gi: 0 };
                }
                BuildState::TasksGrand { tasks, ti, grand, gi } => {
                    if *ti >= tasks.len() {
                        return Step::Done;
                    }
                    let list =
                        grand.get_or_insert_with(|| View::new(&self.restricted).kids(self.ix, tasks[*ti]).to_vec());
                    if *gi >= list.len() {
                        *ti += 1;
                        *grand = None;
                        *gi = 0;
                        continue;
                    }
                    let g = list[*gi];
                    *gi += 1;
                    if self.done(g) || self.ix.node(g).role == Role::Task {
                        continue;
                    }
                    let node = self.ix.node(g);
                    if node.role == Role::Assistant && node.has_tools {
                        return self.assistant_group_with_council(g);
                    }
                    if node.role == Role::Assistant && node.supervisor {
                        self.push_supervisor(g);
                    } else {
                        self.push_raw(g);
                    }
                    self.mark(g);
                    return Step::Call1(build_frame(g));
                }
                BuildState::Main { kids, i } => {
                    let list = kids.slice(self.ix);
                    let Some(&c) = list.get(*i) else {
                        return Step::Done;
                    };
                    *i += 1;
                    if self.done(c) {
                        continue;
                    }
                    if let Some(step) = self.visit_child(c) {
                        return step;
                    }
                }
            }
        }
    }

    /// The pre-loop tasks rule: ≥2 `task` children aggregate into one row.
    fn tasks_rule(&mut self, parent: u32, kids: &[u32]) -> Option<BuildState> {
        if kids.is_empty() {
            return None;
        }
        let ix = self.ix;
        let tasks: Vec<u32> = kids.iter().copied().filter(|&c| ix.node(c).role == Role::Task).collect();
        if tasks.len() <= 1 {
            return None;
        }
        let non_task: Vec<u32> = kids.iter().copied().filter(|&c| ix.node(c).role != Role::Task).collect();
        let mut agents: Vec<Key<'_>> = Vec::new();
        for &t in &tasks {
            let a = ix.node(t).agent;
            if a.is_truthy() && !agents.contains(&a) {
                agents.push(a);
            }
        }
        let mut sorted = tasks.clone();
        for &t in &sorted {
            self.processed.mark(t);
        }
        sorted.sort_by(|&a, &b| cmp_time(ix.node(a).created, ix.node(b).created));
        let v = tasks_message(ix, parent, &sorted, agents.len() > 1);
        self.push_built(v);
        Some(BuildState::TasksRest { non_task, tasks, i: 0 })
    }

    /// The main loop body for one unconsumed child. `None` = continue the loop.
    fn visit_child(&mut self, c: u32) -> Option<Step> {
        let ix = self.ix;
        let node = ix.node(c);

        // 0. Internal dispatch envelope: hidden, its children still render.
        if node.dispatch_internal {
            self.mark(c);
            return Some(Step::Call1(build_frame(c)));
        }

        // 1. Compare from a messageGroups entry.
        if let Some(group) = ix.compare_group(c)
            && !self.group_done(group.id)
        {
            let members = node.group_id.map(|g| ix.group_occurrences(g)).unwrap_or_default();
            let v = compare_from_group(group.id, group.mode, group.parent_message_id, &members);
            let active =
                v.fields.get("activeColumnId").and_then(Value::as_str).and_then(|id| ix.by_id.get(id).copied());
            self.push_built(v);
            let consumed: Vec<u32> = members.iter().filter_map(|m| ix.by_id.get(m.id).copied()).collect();
            for m in consumed {
                self.mark(m);
            }
            self.mark_group(group.id);
            return active.map(|a| Step::Call1(build_frame(a)));
        }

        // 2. Assistant group (tool-using, or a toolless head that reaches tools).
        if node.role == Role::Assistant && (node.has_tools || (!node.supervisor && is_tool_chain_head(ix, c))) {
            return Some(self.full_assistant_group(c));
        }

        // 2b. Toolless supervisor turn.
        if node.role == Role::Assistant && node.supervisor && !node.has_tools {
            self.push_supervisor(c);
            self.mark(c);
            return Some(Step::Call1(build_frame(c)));
        }

        // 3a / 3d / 3e need several children; most messages have one.
        if self.view().kids(ix, c).len() <= 1 {
            self.push_raw(c);
            self.mark(c);
            return Some(Step::Call1(build_frame(c)));
        }

        // 3a. Compare from user metadata (several children, as checked above).
        if node.compare {
            let child_ids = self.kids(c);
            self.push_raw(c);
            self.mark(c);
            let v = self.compare_row(c, &child_ids);
            let active =
                v.fields.get("activeColumnId").and_then(Value::as_str).and_then(|id| ix.by_id.get(id).copied());
            self.push_built(v);
            return active.map(|a| Step::Call1(build_frame(a)));
        }

        // 3d / 3e. A user (or assistant) with several non-tool children: follow one branch.
        let branch_ids = if matches!(node.role, Role::User | Role::Assistant) {
            non_tool(ix, self.view().kids(ix, c))
        } else {
            Vec::new()
        };
        if branch_ids.len() > 1 {
            let active = resolve_flat(ix, self.view(), c, &branch_ids, &branch_ids);
            self.push_raw(c);
            self.mark(c);
            let active = active?;
            let index = branch_ids.iter().position(|&b| b == active).unwrap_or(usize::MAX);
            let count = branch_ids.len();
            let an = ix.node(active);
            if node.role == Role::User && an.role == Role::Assistant && an.has_tools {
                let (chain, tools) = assistant_chain(ix, View::new(&self.restricted), active, &mut self.processed);
                let mut group = assistant_group(ix, &chain, &tools, GroupExtras::default());
                group.branch = Some((count as u32, index as u32));
                self.push_group(group, &chain);
                for &m in chain.iter().chain(&tools) {
                    self.mark(m);
                }
                return Some(Step::Call1(Frame::After {
                    last: chain.last().copied(),
                    tools,
                    state: AfterState::Start,
                }));
            }
            let row = Row::Branch { at: an.at, count: count as u32, index: index as u32 };
            self.rows.push(Placed { row, time: an.created });
            self.mark(active);
            return Some(Step::Call1(build_frame(active)));
        }

        // 4. Plain message.
        self.push_raw(c);
        self.mark(c);
        Some(Step::Call1(build_frame(c)))
    }

    fn group_done(&self, group_id: &str) -> bool {
        self.groups_done.contains(group_id) || self.ix.by_id.get(group_id).is_some_and(|&i| self.processed.has(i))
    }

    /// Group ids share upstream's processed set with message ids.
    fn mark_group(&mut self, group_id: &'a str) {
        self.groups_done.insert(group_id);
        if let Some(&i) = self.ix.by_id.get(group_id) {
            self.processed.mark(i);
        }
    }

    /// Priority 2: chain, signal callbacks, task completions, council; then the members'
    /// follow-ups and the drain.
    fn full_assistant_group(&mut self, c: u32) -> Step {
        let ix = self.ix;
        let (chain, tools) = assistant_chain(ix, View::new(&self.restricted), c, &mut self.processed);
        let signal_blocks = flat_signal_callbacks(ix, &tools);
        let completions = flat_task_completions(ix, &tools);
        let council = self.collect_council(&tools);
        let (member_ids, members) = match council {
            Some((ids, vals)) => (ids, Some(vals)),
            None => (Vec::new(), None),
        };
        let group = assistant_group(
            ix,
            &chain,
            &tools,
            GroupExtras { signal_blocks: &signal_blocks, task_completions: &completions, council: members },
        );
        self.push_group(group, &chain);
        for &m in chain.iter().chain(&tools) {
            self.mark(m);
        }
        // Processed by id: a copy of a repeated id marks the kept message.
        for &at in signal_blocks.iter().flat_map(|b| &b.callbacks).chain(&completions) {
            if let Some(i) = ix.kept_at(at) {
                self.mark(i);
            }
        }
        self.group_frames(member_ids, chain.last().copied(), tools)
    }

    /// `processAssistantGroup` (tasks path): like priority 2 without signal extras.
    fn assistant_group_with_council(&mut self, c: u32) -> Step {
        let ix = self.ix;
        let (chain, tools) = assistant_chain(ix, View::new(&self.restricted), c, &mut self.processed);
        let council = self.collect_council(&tools);
        let (member_ids, members) = match council {
            Some((ids, vals)) => (ids, Some(vals)),
            None => (Vec::new(), None),
        };
        let group = assistant_group(ix, &chain, &tools, GroupExtras { council: members, ..GroupExtras::default() });
        self.push_group(group, &chain);
        for &m in chain.iter().chain(&tools) {
            self.mark(m);
        }
        self.group_frames(member_ids, chain.last().copied(), tools)
    }

    /// The members' builds (council), then the continuation after the group.
    fn group_frames(&self, members: Vec<u32>, last: Option<u32>, tools: Vec<u32>) -> Step {
        let after = Frame::After { last, tools, state: AfterState::Start };
        if members.is_empty() {
            return Step::Call1(after);
        }
        let mut frames: Vec<Frame> = members.into_iter().map(build_frame).collect();
        frames.push(after);
        Step::Call(frames)
    }

    /// `collectCouncilMembers`: members are the supervisor's other non-tool children (server
    /// shape) or else the council tool's (legacy shape); the tool's own children (barrier
    /// anchors) are consumed.
    fn collect_council(&mut self, tools: &[u32]) -> Option<(Vec<u32>, Vec<Item>)> {
        let ix = self.ix;
        let &tool = tools.iter().find(|&&t| ix.node(t).agent_council)?;
        let open_non_tool = |b: &Self, of: u32| -> Vec<u32> {
            b.kids(of).into_iter().filter(|&m| ix.node(m).role != Role::Tool && !b.done(m)).collect()
        };
        let mut member_ids = match ix.node(tool).raw_parent {
            Some(sup) => open_non_tool(self, sup),
            None => Vec::new(),
        };
        if member_ids.len() <= 1 {
            member_ids = open_non_tool(self, tool);
        }
        if member_ids.len() <= 1 {
            return None;
        }
        let mut members = Vec::with_capacity(member_ids.len());
        for &m in &member_ids {
            members.push(self.column_value(m));
        }
        for a in self.kids(tool) {
            self.mark(a);
        }
        Some((member_ids, members))
    }

    /// A compare column or council member: a tool-using assistant becomes its own group
    /// (chain collected with a fresh visited set, as upstream), anything else the raw message.
    fn column_value(&mut self, m: u32) -> Item {
        let ix = self.ix;
        let node = ix.node(m);
        if node.role == Role::Assistant && node.has_tools {
            let mut fresh = SmallSet::default();
            let (chain, tools) = assistant_chain(ix, View::new(&self.restricted), m, &mut fresh);
            let group = assistant_group(ix, &chain, &tools, GroupExtras::default());
            for &x in chain.iter().chain(&tools) {
                self.mark(x);
            }
            Item::Group(group)
        } else {
            self.mark(m);
            Item::Message(node.at)
        }
    }

    /// `createCompareMessageFromChildIds`.
    fn compare_row(&mut self, parent: u32, child_ids: &[u32]) -> BuiltRow {
        let mut active = None;
        let mut columns = Vec::with_capacity(child_ids.len());
        for &c in child_ids {
            if self.ix.node(c).active_column {
                active = Some(c);
            }
            columns.push(self.column_value(c));
        }
        compare_from_children(self.ix, parent, child_ids, columns, active)
    }

    /// `continueAfterAssistantGroup`: hide continuations an explicit branch index rules out,
    /// then visit the remaining children of the last step and of every chain tool, oldest
    /// first.
    fn step_after(&mut self, last: Option<u32>, tools: &[u32], state: &mut AfterState) -> Step {
        let ix = self.ix;
        if let AfterState::Start = state {
            if let Some(l) = last {
                self.suppress_inactive(l, tools);
            }
            // The parents' child lists cannot change while this loop runs (only a parent the
            // loop itself narrows is ever narrowed, and it is restored before the next pick),
            // and consumed children never come back, so one sorted queue replaces upstream's
            // re-scan per pick.
            let mut queue: Vec<(u32, u32)> = Vec::new();
            let view = self.view();
            for p in last.into_iter().chain(tools.iter().copied()) {
                queue.extend(view.kids(ix, p).iter().map(|&c| (c, p)));
            }
            queue.sort_by(|a, b| cmp_time(ix.node(a.0).created, ix.node(b.0).created));
            *state = AfterState::Loop { queue, pos: 0, attempted: None };
        }
        let AfterState::Loop { queue, pos, attempted } = state else {
            return Step::Done;
        };
        while let Some(&(c, p)) = queue.get(*pos) {
            if self.done(c) {
                *pos += 1;
                continue;
            }
            if *attempted == Some(c) {
                // Every visit consumes the child it was called for; should one not, consume
                // it here rather than loop forever.
                self.mark(c);
                *pos += 1;
                continue;
            }
            *attempted = Some(c);
            if self.should_drain(p) {
                return Step::Call1(build_frame(p));
            }
            return self.call_for_child(p, c);
        }
        Step::Done
    }

    /// `suppressInactiveExplicitContinuations`.
    fn suppress_inactive(&mut self, last: u32, tools: &[u32]) {
        let ix = self.ix;
        let Some(abi) = ix.node(last).active_branch_index else {
            return;
        };
        let direct = self.kids(last);
        let index_space = non_tool(ix, &direct);
        if abi < 0.0 || abi > index_space.len() as f64 {
            return;
        }
        let active = if abi.fract() == 0.0 && (abi as usize) < index_space.len() {
            Some(index_space[abi as usize])
        } else {
            None
        };
        let parents: Vec<u32> = std::iter::once(last)
            .chain(tools.iter().copied().filter(|&t| ix.node(t).raw_parent == Some(last)))
            .collect();
        for p in parents {
            for c in self.kids(p) {
                if !self.done(c) && Some(c) != active {
                    self.mark(c);
                }
            }
        }
    }

    /// `shouldDrainParentContinuations`: a council tool or a task fan-out with several
    /// children left is visited whole.
    fn should_drain(&self, parent: u32) -> bool {
        let p = parent as usize;
        let (open, open_tasks) = if self.restricted[p] == NONE {
            (self.processed.open_children[p], self.processed.open_tasks[p])
        } else {
            let kids = self.kids(parent);
            let open: Vec<u32> = kids.into_iter().filter(|&k| !self.done(k)).collect();
            let tasks = open.iter().filter(|&&k| self.ix.node(k).role == Role::Task).count();
            (open.len() as u32, tasks as u32)
        };
        if open <= 1 {
            return false;
        }
        self.ix.node(parent).agent_council || open_tasks > 1
    }
}
