//! Per-user shares of what the server holds for its callers (open subscriptions, websocket
//! connections), so one user at their cap leaves the rest of the server-wide cap to others.
//!
//! ```
//! use agentlog_api::quota::Quota;
//! let q = Quota::default();
//! let a = q.admit("alice", 1).expect("alice's first");
//! assert!(q.admit("alice", 1).is_none(), "alice is at her cap");
//! assert!(q.admit("bob", 1).is_some(), "bob is not");
//! drop(a);
//! assert!(q.admit("alice", 1).is_some(), "a released place is free again");
//! ```

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// How many places each user holds of one kind.
#[derive(Debug, Clone, Default)]
pub struct Quota {
    held: Arc<Mutex<HashMap<String, usize>>>,
}

impl Quota {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        // A panic while counting leaves only counts behind: keep serving.
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One more place for `user`, unless they hold `max` already (then `None`).
    pub fn admit(&self, user: &str, max: usize) -> Option<QuotaHold> {
        let mut held = self.lock();
        let n = held.entry(user.to_string()).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(QuotaHold { quota: self.clone(), user: user.to_string() })
    }

    /// Places `user` holds now.
    pub fn held(&self, user: &str) -> usize {
        self.lock().get(user).copied().unwrap_or(0)
    }
}

/// One place, held until dropped.
#[derive(Debug)]
pub struct QuotaHold {
    quota: Quota,
    user: String,
}

impl Drop for QuotaHold {
    fn drop(&mut self) {
        let mut held = self.quota.lock();
        if let Some(n) = held.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.user);
            }
        }
    }
}
