//! Registries (upstream `base/registries.ts`): which processors run for which type. Registering
//! **appends** — several entries per type run in registration order, with no de-duplication by
//! id — and `matches` answers a copy of one type's list (empty when none).
//!
//! ```
//! use agentlog_domain::signal::registry::Registry;
//! let mut r: Registry<&str> = Registry::default();
//! r.register("tool.outcome.failed", "notify").register("tool.outcome.failed", "count");
//! assert_eq!(r.matches("tool.outcome.failed"), ["notify", "count"]);
//! assert!(r.matches("agent.user.message").is_empty());
//! ```

use std::collections::BTreeMap;

/// Entries by type, each type's in registration order.
#[derive(Debug, Clone)]
pub struct Registry<E> {
    entries: BTreeMap<String, Vec<E>>,
}

impl<E> Default for Registry<E> {
    fn default() -> Self {
        Self { entries: BTreeMap::new() }
    }
}

impl<E: Clone> Registry<E> {
    /// Add `entry` for `event_type`, after the ones already there.
    pub fn register(&mut self, event_type: &str, entry: E) -> &mut Self {
        self.entries.entry(event_type.to_string()).or_default().push(entry);
        self
    }

    /// The entries for `event_type`, in registration order.
    pub fn matches(&self, event_type: &str) -> Vec<E> {
        self.entries.get(event_type).cloned().unwrap_or_default()
    }

    /// Every entry of one type, or of all types (by type, then registration order).
    pub fn list(&self, event_type: Option<&str>) -> Vec<E> {
        match event_type {
            Some(t) => self.matches(t),
            None => self.entries.values().flatten().cloned().collect(),
        }
    }
}
