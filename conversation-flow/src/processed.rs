//! Upstream's `processedIds` for the flat list, with per-parent counts of unconsumed children
//! so the drain loop's "does this parent still fan out?" test is O(1).

use super::collector::Marks;
use super::indexing::{Index, NONE};
use super::message::Role;

/// `processedIds`, with per-parent counts of unconsumed children so the drain loop's
/// "does this parent still fan out?" test is O(1).
pub(crate) struct Processed {
    done: Vec<bool>,
    /// Unconsumed effective children per message.
    pub open_children: Vec<u32>,
    /// Unconsumed `task` children per message.
    pub open_tasks: Vec<u32>,
    /// How many times each message is listed under its parent.
    listings: Vec<u32>,
    parents: Vec<u32>,
    is_task: Vec<bool>,
}

impl Processed {
    /// Nothing processed yet.
    pub(crate) fn new(ix: &Index<'_>) -> Processed {
        let n = ix.nodes.len();
        // Counted per listing: a repeated id is listed under its parent once per occurrence
        // (upstream counts unprocessed ids in `childrenMap`'s lists).
        let mut open_children = vec![0u32; n];
        let mut listings = vec![0u32; n];
        for p in 0..n as u32 {
            for &c in ix.children(p) {
                open_children[p as usize] += 1;
                listings[c as usize] += 1;
            }
        }
        Processed {
            done: vec![false; n],
            open_children,
            open_tasks: ix.task_children.clone(),
            parents: ix.nodes.iter().map(|n| n.parent.unwrap_or(NONE)).collect(),
            is_task: ix.nodes.iter().map(|n| n.role == Role::Task).collect(),
            listings,
        }
    }
}

impl Marks for Processed {
    fn has(&self, i: u32) -> bool {
        self.done[i as usize]
    }
    fn mark(&mut self, i: u32) {
        let i = i as usize;
        if self.done[i] {
            return;
        }
        self.done[i] = true;
        let p = self.parents[i];
        if p != NONE {
            let k = self.listings[i];
            self.open_children[p as usize] -= k;
            if self.is_task[i] {
                self.open_tasks[p as usize] -= k;
            }
        }
    }
}
