//! What a SQLite log's background WAL checkpointer has done
//! ([`StoreOptions::sqlite_background_checkpoint`](crate::StoreOptions::sqlite_background_checkpoint)),
//! as [`EventStore::wal_checkpoints`](crate::EventStore::wal_checkpoints) answers it.

use std::sync::atomic::{AtomicU64, Ordering};

/// What the background checkpointer has done so far.
#[derive(Debug, Default)]
pub struct CheckpointStats {
    passes: AtomicU64,
    frames: AtomicU64,
    failures: AtomicU64,
}

impl CheckpointStats {
    /// Checkpoints run.
    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// WAL frames copied into the database file (each pass's new ones).
    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::Relaxed)
    }

    /// Passes that failed (logged; the next one tries again).
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}

impl CheckpointStats {
    /// Count a pass that copied `frames` WAL frames back.
    pub(crate) fn passed(&self, frames: u64) {
        self.passes.fetch_add(1, Ordering::Relaxed);
        self.frames.fetch_add(frames, Ordering::Relaxed);
    }

    /// Count a failed pass.
    pub(crate) fn failed(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }
}
