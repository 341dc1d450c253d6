//! How much load is left: a deadline and/or a number of mutations, shared by all clients.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

/// The run's bounds.
#[derive(Debug)]
pub struct Budget {
    deadline: Option<Instant>,
    max: Option<u64>,
    sent: AtomicU64,
}

impl Budget {
    /// A budget ending at `deadline` and/or after `max` mutations (unbounded when both are None).
    pub fn new(deadline: Option<Instant>, max: Option<u64>) -> Self {
        Self { deadline, max, sent: AtomicU64::new(0) }
    }

    /// Take one mutation from the budget; false once it is spent.
    pub fn take(&self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        match self.max {
            None => {
                self.sent.fetch_add(1, Ordering::Relaxed);
                true
            }
            // Never counts past the max, so `sent` is exactly what was sent.
            Some(max) => {
                self.sent.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1)).is_ok()
            }
        }
    }

    /// Is it spent?
    pub fn spent(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
            || self.max.is_some_and(|m| self.sent.load(Ordering::Relaxed) >= m)
    }

    /// Mutations sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_max_is_never_exceeded() {
        let b = Budget::new(None, Some(3));
        assert!((0..10).filter(|_| b.take()).count() == 3);
        assert!(b.spent());
        assert_eq!(b.sent(), 3);
    }

    #[test]
    fn a_past_deadline_allows_nothing() {
        let b = Budget::new(Some(Instant::now()), None);
        assert!(!b.take());
        assert!(b.spent());
    }
}
