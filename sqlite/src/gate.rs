//! The write lock of a database file, queued in this process before SQLite's own is taken.
//!
//! SQLite's write lock has no queue: a connection that finds it held sleeps in its busy handler
//! (1, 2, 5, 10, … up to 100 ms at a time) and tries again, so it starts up to 100 ms after the
//! lock was freed, and a runtime thread that waits so is lost to every other task meanwhile. The
//! log's writer and the read models' writer share one file and take turns all the time; waiting
//! here instead, in FIFO order on an async lock, each starts the moment the other commits.
//! Writers in other processes (and this process's sqlx pool) still meet the busy handler.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentlog_sqlite::SqliteFailure> {
//! use std::time::Duration;
//! let gate = agentlog_sqlite::WriteGate::of("agentlog.db");
//! let _turn = gate.enter(Duration::from_secs(30)).await?; // held until dropped
//! // BEGIN IMMEDIATE … COMMIT
//! # Ok(()) }
//! ```

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::error::SqliteFailure;

/// How long a writer waits for a file's write lock (its turn here, then SQLite's busy handler
/// for other processes) before it fails with SQLITE_BUSY: the log's and the read models' alike.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The gates in use, by canonical file path (dead ones are pruned as new ones are made).
static GATES: Mutex<Option<HashMap<PathBuf, Weak<AsyncMutex<()>>>>> = Mutex::new(None);

/// This process's queue for one database file's write lock; cheap to clone.
#[derive(Clone, Debug)]
pub struct WriteGate(Arc<AsyncMutex<()>>);

/// A turn at the write lock, held until dropped.
#[derive(Debug)]
pub struct GateTurn {
    _held: OwnedMutexGuard<()>,
}

impl WriteGate {
    /// The gate of `filename`: the same for every name of the same file in this process.
    pub fn of(filename: &str) -> Self {
        let path = std::fs::canonicalize(filename).unwrap_or_else(|_| PathBuf::from(filename));
        let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
        let gates = gates.get_or_insert_with(HashMap::new);
        if let Some(gate) = gates.get(&path).and_then(Weak::upgrade) {
            return Self(gate);
        }
        gates.retain(|_, g| g.strong_count() > 0);
        let gate = Arc::new(AsyncMutex::new(()));
        gates.insert(path, Arc::downgrade(&gate));
        Self(gate)
    }

    /// Wait for this process's turn, at most `timeout` (then SQLITE_BUSY, as SQLite's own busy
    /// timeout would answer).
    pub async fn enter(&self, timeout: Duration) -> Result<GateTurn, SqliteFailure> {
        match tokio::time::timeout(timeout, Arc::clone(&self.0).lock_owned()).await {
            Ok(held) => Ok(GateTurn { _held: held }),
            Err(_) => Err(SqliteFailure {
                code: libsqlite3_sys::SQLITE_BUSY,
                message: format!(
                    "database is locked: another writer of this process held it for over {} s",
                    timeout.as_secs()
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::tests::TempFile;

    #[tokio::test]
    async fn every_name_of_a_file_shares_one_gate_and_turns_queue() {
        let file = TempFile::new();
        let name = file.0.to_str().unwrap();
        let a = WriteGate::of(name);
        // The same file by another name.
        let dir = file.0.parent().unwrap().to_str().unwrap();
        let b = WriteGate::of(&format!("{dir}/./{}", file.0.file_name().unwrap().to_str().unwrap()));
        let turn = a.enter(Duration::from_secs(1)).await.unwrap();
        // The other name waits for the turn held, and gives up at its timeout.
        let busy = b.enter(Duration::from_millis(50)).await.unwrap_err();
        assert_eq!(busy.code, libsqlite3_sys::SQLITE_BUSY);
        drop(turn);
        let _turn = b.enter(Duration::from_millis(50)).await.unwrap();
        // Another file has a gate of its own.
        let other = TempFile::new();
        let _other = WriteGate::of(other.0.to_str().unwrap()).enter(Duration::from_millis(50)).await.unwrap();
    }
}
