//! The task graph: `blocks` cycle detection for new dependencies ([`BlocksGraph`]), the subtask
//! layer planner ([`plan_subtask_layers`], upstream `planSubtaskLayers`) and what to start when a
//! task completes ([`cascade_on_completion`]).
//!
//! ```
//! use agentlog_domain::tasks::TaskStatus;
//! use agentlog_domain::tasks::graph::{plan_subtask_layers, SubtaskNode};
//! use std::collections::BTreeMap;
//! let plan = plan_subtask_layers(
//!     &[
//!         SubtaskNode::new("a", TaskStatus::Backlog, &[]),
//!         SubtaskNode::new("b", TaskStatus::Backlog, &["a"]),
//!     ],
//!     &BTreeMap::new(),
//! );
//! assert_eq!(plan.layers, vec![vec!["a".to_string()], vec!["b".to_string()]]);
//! ```

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::model::TaskStatus;

/// Known `blocks` edges: task → the tasks it depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlocksGraph {
    /// Task id → the upstream task ids it is blocked by.
    pub depends_on: BTreeMap<String, BTreeSet<String>>,
}

impl BlocksGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `task` depends on `upstream`.
    pub fn with_edge(mut self, task: &str, upstream: &str) -> Self {
        self.depends_on.entry(task.to_string()).or_default().insert(upstream.to_string());
        self
    }

    /// A path `from` → … → `to` following depends-on edges (both ends included), if any.
    pub fn path(&self, from: &str, to: &str) -> Option<Vec<String>> {
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([from]);
        let mut seen = BTreeSet::from([from]);
        while let Some(node) = queue.pop_front() {
            if node == to {
                let mut path = vec![to.to_string()];
                let mut at = to;
                while let Some(prev) = came_from.get(at) {
                    path.push((*prev).to_string());
                    at = prev;
                }
                path.reverse();
                return Some(path);
            }
            for next in self.depends_on.get(node).into_iter().flatten() {
                if seen.insert(next.as_str()) {
                    came_from.insert(next.as_str(), node);
                    queue.push_back(next.as_str());
                }
            }
        }
        None
    }

    /// Would `task` depending on `upstream` close a cycle? Returns the existing path from
    /// `upstream` back to `task` when it would.
    pub fn cycle_if_added(&self, task: &str, upstream: &str) -> Option<Vec<String>> {
        if task == upstream {
            return Some(vec![task.to_string()]);
        }
        self.path(upstream, task)
    }
}

/// A subtask as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskNode {
    /// Its identifier.
    pub identifier: String,
    /// Its status.
    pub status: TaskStatus,
    /// The identifiers it is blocked by (`blocks` edges only).
    pub depends_on: Vec<String>,
}

impl SubtaskNode {
    /// A node.
    pub fn new(identifier: &str, status: TaskStatus, depends_on: &[&str]) -> Self {
        Self {
            identifier: identifier.to_string(),
            status,
            depends_on: depends_on.iter().map(|d| (*d).to_string()).collect(),
        }
    }
}

/// The planner's answer (upstream `SubtaskGraphPlan`); every list is sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskPlan {
    /// Completed or canceled.
    pub already_done: Vec<String>,
    /// Runnable but downstream of a cycle.
    pub blocked_by_cycle: Vec<String>,
    /// Runnable but held back by an upstream that is in flight, out of scope and not done, or
    /// unknown — directly or through an in-batch upstream.
    pub blocked_externally: Vec<String>,
    /// Members of a cycle.
    pub cycles: Vec<String>,
    /// Running, scheduled or otherwise not startable.
    pub ineligible: Vec<String>,
    /// Layers that can run in parallel, in order; each sorted.
    pub layers: Vec<Vec<String>>,
    /// How many subtasks the layers hold.
    pub total_runnable: usize,
}

fn satisfied(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Completed | TaskStatus::Canceled)
}

fn runnable(status: TaskStatus) -> bool {
    matches!(status, TaskStatus::Backlog | TaskStatus::Paused | TaskStatus::Failed)
}

/// Cut subtasks into layers that can run in parallel (Kahn), holding back anything whose
/// upstream is not known to be done and reporting cycles. `external` gives the statuses of
/// upstreams outside the batch; an upstream found in neither is unknown, hence a blocker.
pub fn plan_subtask_layers(
    nodes: &[SubtaskNode],
    external: &BTreeMap<String, TaskStatus>,
) -> SubtaskPlan {
    let mut plan = SubtaskPlan::default();
    let batch: BTreeMap<&str, &SubtaskNode> =
        nodes.iter().map(|n| (n.identifier.as_str(), n)).collect();
    let mut runnable_ids: BTreeSet<&str> = BTreeSet::new();
    for node in batch.values() {
        if satisfied(node.status) {
            plan.already_done.push(node.identifier.clone());
        } else if runnable(node.status) {
            runnable_ids.insert(node.identifier.as_str());
        } else {
            plan.ineligible.push(node.identifier.clone());
        }
    }

    // In-batch edges: upstream → its runnable dependants; and direct external blockers.
    let mut dependants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut upstreams: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut blocked: BTreeSet<&str> = BTreeSet::new();
    for id in &runnable_ids {
        let Some(node) = batch.get(id) else { continue };
        for dep in &node.depends_on {
            let status =
                batch.get(dep.as_str()).map(|n| n.status).or_else(|| external.get(dep).copied());
            match status {
                Some(s) if satisfied(s) => {}
                _ if runnable_ids.contains(dep.as_str()) => {
                    dependants.entry(dep.as_str()).or_default().insert(id);
                    upstreams.entry(id).or_default().insert(dep.as_str());
                }
                _ => {
                    blocked.insert(id);
                }
            }
        }
    }

    // Blockage flows downstream through in-batch edges.
    let mut queue: VecDeque<&str> = blocked.iter().copied().collect();
    while let Some(id) = queue.pop_front() {
        for next in dependants.get(id).into_iter().flatten() {
            if blocked.insert(next) {
                queue.push_back(next);
            }
        }
    }

    // Kahn over the eligible nodes.
    let eligible: BTreeSet<&str> = runnable_ids.difference(&blocked).copied().collect();
    let mut in_degree: BTreeMap<&str, usize> = eligible
        .iter()
        .map(|id| {
            (
                *id,
                upstreams.get(id).map_or(0, |u| u.iter().filter(|x| eligible.contains(*x)).count()),
            )
        })
        .collect();
    let mut frontier: Vec<&str> =
        in_degree.iter().filter(|(_, d)| **d == 0).map(|(id, _)| *id).collect();
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    while !frontier.is_empty() {
        frontier.sort_unstable();
        let mut next = Vec::new();
        for id in &frontier {
            placed.insert(id);
            for child in dependants.get(id).into_iter().flatten().filter(|c| eligible.contains(*c))
            {
                if let Some(d) = in_degree.get_mut(child) {
                    *d = d.saturating_sub(1);
                    if *d == 0 {
                        next.push(*child);
                    }
                }
            }
        }
        plan.layers.push(frontier.iter().map(|s| (*s).to_string()).collect());
        frontier = next;
    }

    // Unplaced eligible nodes are cycle members or downstream of one.
    let unplaced: BTreeSet<&str> = eligible.difference(&placed).copied().collect();
    for id in &unplaced {
        if reaches(id, id, &dependants, &unplaced) {
            plan.cycles.push((*id).to_string());
        } else {
            plan.blocked_by_cycle.push((*id).to_string());
        }
    }
    plan.blocked_externally = blocked.iter().map(|s| (*s).to_string()).collect();
    plan.total_runnable = placed.len();
    plan.already_done.sort();
    plan.ineligible.sort();
    plan
}

/// Can `from` reach `to` in one or more steps along `edges`, staying inside `within`?
fn reaches(
    from: &str,
    to: &str,
    edges: &BTreeMap<&str, BTreeSet<&str>>,
    within: &BTreeSet<&str>,
) -> bool {
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<&str> = VecDeque::from([from]);
    while let Some(node) = queue.pop_front() {
        for next in edges.get(node).into_iter().flatten().filter(|n| within.contains(*n)) {
            if *next == to {
                return true;
            }
            if seen.insert(*next) {
                queue.push_back(next);
            }
        }
    }
    false
}

/// A dependant of a task that just completed, as [`cascade_on_completion`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependant {
    /// Its id.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// Each of its `blocks` upstreams with its status; `None` = unknown (no such task, or
    /// one its owner cannot see), which never counts as completed.
    pub upstreams: BTreeMap<String, Option<TaskStatus>>,
}

/// A dependant the cascade cannot release: an upstream's state is unknown, so no completion
/// will ever start it; it stays where it is and is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldDependant {
    /// Its id.
    pub task_id: String,
    /// The upstreams whose state is unknown, sorted.
    pub unknown_upstreams: Vec<String>,
}

/// What to do with the dependants of a completed task (upstream `cascadeOnCompletion`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cascade {
    /// Start these (every upstream completed, in backlog), in subtask-layer order: they are
    /// all of the dependants' first layer, sorted.
    pub start: Vec<String>,
    /// Hold these at paused (the parent's checkpoint says "before").
    pub hold: Vec<String>,
    /// Backlog dependants blocked by an upstream of unknown state: kept in backlog, reported.
    pub held_externally: Vec<HeldDependant>,
}

/// Dependants in backlog whose upstreams are all completed are started, unless `hold_before`
/// lists them, in which case they are held at paused. A backlog dependant with an upstream of
/// unknown state is never released; it is reported in `held_externally`. One whose upstreams
/// are known but not all completed waits for their completion (its own cascade).
pub fn cascade_on_completion(dependants: &[Dependant], hold_before: &BTreeSet<String>) -> Cascade {
    let mut cascade = Cascade::default();
    // The subtask planner orders the ready ones: its first layer is exactly the dependants
    // whose upstreams are all done.
    let nodes: Vec<SubtaskNode> = dependants
        .iter()
        .filter(|d| d.status == TaskStatus::Backlog)
        .map(|d| SubtaskNode {
            identifier: d.task_id.clone(),
            status: d.status,
            depends_on: d.upstreams.keys().cloned().collect(),
        })
        .collect();
    let external: BTreeMap<String, TaskStatus> = dependants
        .iter()
        .flat_map(|d| d.upstreams.iter())
        .filter_map(|(id, s)| s.map(|s| (id.clone(), s)))
        .collect();
    let plan = plan_subtask_layers(&nodes, &external);
    let by_id: BTreeMap<&str, &Dependant> =
        dependants.iter().map(|d| (d.task_id.as_str(), d)).collect();
    for id in plan.layers.first().into_iter().flatten() {
        let Some(d) = by_id.get(id.as_str()) else { continue };
        // Canceled upstreams satisfy the planner, not the cascade: only completion releases.
        if !d.upstreams.values().all(|s| *s == Some(TaskStatus::Completed)) {
            continue;
        }
        if hold_before.contains(id) {
            cascade.hold.push(id.clone());
        } else {
            cascade.start.push(id.clone());
        }
    }
    for d in dependants.iter().filter(|d| d.status == TaskStatus::Backlog) {
        let unknown: Vec<String> =
            d.upstreams.iter().filter(|(_, s)| s.is_none()).map(|(id, _)| id.clone()).collect();
        if !unknown.is_empty() {
            cascade
                .held_externally
                .push(HeldDependant { task_id: d.task_id.clone(), unknown_upstreams: unknown });
        }
    }
    cascade.hold.sort();
    cascade.held_externally.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    cascade
}

#[cfg(test)]
mod tests;
