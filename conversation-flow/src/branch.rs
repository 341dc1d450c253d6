//! BranchResolver: which of several children continues the conversation.
//!
//! Priorities, as upstream: (1) `metadata.activeBranchIndex` over the non-tool children
//! (index == count means "being created": no branch; larger is ignored), (2) the branch that
//! holds the newest user turn, (3) the first branch that has children, (4) the first branch.
//! Rule 2 reads the per-subtree maximum precomputed in indexing, so a resolution costs
//! O(candidates) instead of a walk over every descendant.

use super::indexing::Index;
use super::message::Role;

/// The children a decision may currently see: upstream temporarily narrows one parent's
/// `childrenMap` entry to a single child while it drains a group's continuations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'r> {
    restricted: &'r [u32],
}

impl<'r> View<'r> {
    /// The unrestricted view (the context tree and all index-time work use it).
    pub(crate) const BASE: View<'static> = View { restricted: &[] };

    /// A view over per-message restrictions (`NONE` = unrestricted).
    pub(crate) fn new(restricted: &'r [u32]) -> View<'r> {
        View { restricted }
    }

    /// Upstream's `childrenMap.get(id) ?? []` under this view.
    pub(crate) fn kids<'s>(&self, ix: &'s Index<'_>, i: u32) -> &'s [u32]
    where
        'r: 's,
    {
        match self.restricted.get(i as usize) {
            Some(c) if *c != super::indexing::NONE => std::slice::from_ref(c),
            _ => ix.children(i),
        }
    }
}

/// `getMetadataBranchIds`: tool results are inline parts of a turn, never branches.
pub(crate) fn non_tool(ix: &Index<'_>, ids: &[u32]) -> Vec<u32> {
    ids.iter().copied().filter(|&c| ix.node(c).role != Role::Tool).collect()
}

/// The explicit-index rule alone: `Some(decision)` when `activeBranchIndex` decides.
///
/// A fractional index below the count reads `array[1.5]` upstream, i.e. `undefined`.
pub(crate) fn explicit_index(abi: Option<f64>, index_space: &[u32]) -> Option<Option<u32>> {
    let i = abi.filter(|i| *i >= 0.0)?;
    let len = index_space.len() as f64;
    if i < len {
        return Some(if i.fract() == 0.0 { Some(index_space[i as usize]) } else { None });
    }
    if i == len {
        return Some(None);
    }
    None
}

/// `getActiveBranchIdFromMetadata` (flat variant): `has_children` is upstream's
/// `childrenMap.get(id)` check.
pub(crate) fn resolve(
    ix: &Index<'_>,
    owner: u32,
    candidates: &[u32],
    index_space: &[u32],
    has_children: impl Fn(u32) -> bool,
) -> Option<u32> {
    if let Some(decided) = explicit_index(ix.node(owner).active_branch_index, index_space) {
        return decided;
    }
    if let Some(latest) = latest_user_branch(ix, candidates) {
        return Some(latest);
    }
    candidates.iter().copied().find(|&c| has_children(c)).or_else(|| candidates.first().copied())
}

/// Flat variant over a view: children counted in the current `childrenMap`.
pub(crate) fn resolve_flat(
    ix: &Index<'_>,
    view: View<'_>,
    owner: u32,
    candidates: &[u32],
    index_space: &[u32],
) -> Option<u32> {
    resolve(ix, owner, candidates, index_space, |c| !view.kids(ix, c).is_empty())
}

/// `getActiveBranchId` (tree variant): index space = candidates, children counted in the
/// main-line tree (thread replies do not count).
pub(crate) fn resolve_tree(ix: &Index<'_>, owner: u32, candidates: &[u32]) -> Option<u32> {
    resolve(ix, owner, candidates, candidates, |c| !ix.tree_children(c).is_empty())
}

/// Rule 2: the first candidate whose subtree holds the strictly newest user turn.
fn latest_user_branch(ix: &Index<'_>, candidates: &[u32]) -> Option<u32> {
    let mut best = f64::NEG_INFINITY;
    let mut selected = None;
    for &c in candidates {
        let t = ix.latest_user[c as usize];
        if t > best {
            best = t;
            selected = Some(c);
        }
    }
    selected
}
