//! Each event rendered once per selection, for every subscriber that selected the same fields.
//!
//! A thousand subscribers of one selection are handed the same event within a few
//! milliseconds; it is rendered (the payload's JSON, `recordedAt` as RFC 3339) once rather than
//! a thousand times (RELIABILITY.md, "1,000 subscribers", has what that saved). The renders are
//! kept for the latest events only, bounded in count and bytes; a subscriber reading older
//! events (from the database) renders what it misses and shares it with those reading beside it.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use agentlog_domain::envelope::RecordedEvent;

use super::{
    plan::{EventField, Plan},
    render::event_json,
};

/// Distinct selections given a place: a client choosing new aliases for every subscription
/// must not grow the table (one past these renders alone, as before).
const MAX_SELECTIONS: usize = 64;
/// Renders kept at most, and their bytes at most.
const MAX_RENDERS: usize = 16_384;
const MAX_BYTES: usize = 16 << 20;

/// The shared renders of one router (`http::Http`).
#[derive(Default)]
pub struct Renders {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    selections: HashMap<Vec<(String, EventField)>, u32>,
    renders: HashMap<(u32, i64), Arc<[u8]>>,
    /// Insertion order, for eviction.
    order: VecDeque<(u32, i64)>,
    bytes: usize,
}

/// Which shared renders a subscription uses (`None`: its own, rendered for it alone).
#[derive(Debug, Clone, Copy)]
pub struct Selection(Option<u32>);

impl Renders {
    /// The place of `plan`'s selection among the shared ones.
    pub fn selection(&self, plan: &Plan) -> Selection {
        let mut inner = self.lock();
        if let Some(&id) = inner.selections.get(&plan.fields) {
            return Selection(Some(id));
        }
        if inner.selections.len() >= MAX_SELECTIONS {
            return Selection(None);
        }
        let id = u32::try_from(inner.selections.len()).unwrap_or(u32::MAX);
        inner.selections.insert(plan.fields.clone(), id);
        Selection(Some(id))
    }

    /// `event` as `plan` selects it: the shared render, or one made now (and shared).
    pub fn event(&self, selection: Selection, plan: &Plan, event: &RecordedEvent) -> Arc<[u8]> {
        let Selection(Some(id)) = selection else { return render(plan, event) };
        let key = (id, event.position);
        if let Some(found) = self.lock().renders.get(&key) {
            return Arc::clone(found);
        }
        // Rendered outside the lock: two subscribers missing together both render, one keeps.
        let rendered = render(plan, event);
        if rendered.len() > MAX_BYTES / 16 {
            return rendered;
        }
        let mut inner = self.lock();
        if let Some(found) = inner.renders.get(&key) {
            return Arc::clone(found);
        }
        inner.bytes += rendered.len();
        inner.renders.insert(key, Arc::clone(&rendered));
        inner.order.push_back(key);
        while inner.bytes > MAX_BYTES || inner.renders.len() > MAX_RENDERS {
            let Some(old) = inner.order.pop_front() else { break };
            if let Some(gone) = inner.renders.remove(&old) {
                inner.bytes -= gone.len();
            }
        }
        rendered
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn render(plan: &Plan, event: &RecordedEvent) -> Arc<[u8]> {
    let mut out = Vec::with_capacity(64 * plan.fields.len());
    event_json(&mut out, plan, event);
    out.into()
}
