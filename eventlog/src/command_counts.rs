//! What a [`crate::CommandHandler`] did, counted for an operator (the server's `/metrics`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters a handler keeps; its clones share them.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    appends: AtomicU64,
    conflicts: AtomicU64,
    on_cache: AtomicU64,
    reloaded: AtomicU64,
}

/// A reading of a handler's counters, each since the handler was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandCounts {
    /// Appends that wrote a command's events (a resend answered from the log is not one).
    pub appends: u64,
    /// Attempts the expected version refused because another writer had moved the stream.
    pub conflicts: u64,
    /// Commands decided on a cached state and appended without reading the log first.
    pub on_cache: u64,
    /// Commands tried on a cached state that had to be run again on the stream as stored.
    pub reloaded: u64,
}

impl Counters {
    pub(crate) fn appended(&self) {
        self.appends.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn conflicted(&self) {
        self.conflicts.fetch_add(1, Ordering::Relaxed);
    }

    /// A command tried on a cached state: appended (`true`) or to be run again.
    pub(crate) fn cached(&self, appended: bool) {
        let counter = if appended { &self.on_cache } else { &self.reloaded };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> CommandCounts {
        CommandCounts {
            appends: self.appends.load(Ordering::Relaxed),
            conflicts: self.conflicts.load(Ordering::Relaxed),
            on_cache: self.on_cache.load(Ordering::Relaxed),
            reloaded: self.reloaded.load(Ordering::Relaxed),
        }
    }
}
