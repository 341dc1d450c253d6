//! The write lock of a database file, queued in this process before SQLite's own is taken,
//! and the one connection this process writes the file through.
//!
//! SQLite's write lock has no queue: a connection that finds it held sleeps in its busy handler
//! (1, 2, 5, 10, … up to 100 ms at a time) and tries again, so it starts up to 100 ms after the
//! lock was freed, and a runtime thread that waits so is lost to every other task meanwhile. The
//! log's writer and the read models' writer share one file and take turns all the time; waiting
//! here instead, in FIFO order on an async lock, each starts the moment the other commits.
//! Writers in other processes (and this process's sqlx pool) still meet the busy handler.
//!
//! Both write through the same connection ([`GateTurn::connection`]). In WAL mode a connection
//! that begins a transaction after another connection committed drops its whole page cache
//! (and, with the file memory-mapped, unmaps it): with a writer each, every append and every
//! read-model commit made the other start cold and read its B-tree pages again, a cost that
//! grows with the file. One connection keeps its pages across both.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentlog_sqlite::SqliteFailure> {
//! use std::time::Duration;
//! let gate = agentlog_sqlite::WriteGate::of("agentlog.db");
//! let mut turn = gate.enter(Duration::from_secs(30)).await?; // held until dropped
//! let conn = turn.connection(&["PRAGMA busy_timeout = 30000".to_string()])?;
//! conn.execute("BEGIN IMMEDIATE", &[])?;
//! conn.execute("COMMIT", &[])?;
//! # Ok(()) }
//! ```

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

use crate::{connection::Connection, error::SqliteFailure};

/// How long a writer waits for a file's write lock (its turn here, then SQLite's busy handler
/// for other processes) before it fails with SQLITE_BUSY: the log's and the read models' alike.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The gates in use, by canonical file path (dead ones are pruned as new ones are made).
static GATES: Mutex<Option<HashMap<PathBuf, Weak<Gate>>>> = Mutex::new(None);

#[derive(Debug)]
struct Gate {
    /// The name the first user gave the file; the writer connection opens it.
    filename: String,
    /// The writer connection, opened by the first turn that needs it.
    writer: Arc<AsyncMutex<Option<Connection>>>,
}

/// This process's queue for one database file's write lock; cheap to clone.
#[derive(Clone, Debug)]
pub struct WriteGate(Arc<Gate>);

/// A turn at the write lock, held until dropped; it lends the file's writer connection.
#[derive(Debug)]
pub struct GateTurn {
    gate: Arc<Gate>,
    writer: OwnedMutexGuard<Option<Connection>>,
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
        let gate = Arc::new(Gate { filename: filename.to_string(), writer: Arc::new(AsyncMutex::new(None)) });
        gates.insert(path, Arc::downgrade(&gate));
        Self(gate)
    }

    /// Wait for this process's turn, at most `timeout` (then SQLITE_BUSY, as SQLite's own busy
    /// timeout would answer).
    pub async fn enter(&self, timeout: Duration) -> Result<GateTurn, SqliteFailure> {
        match tokio::time::timeout(timeout, Arc::clone(&self.0.writer).lock_owned()).await {
            Ok(writer) => Ok(GateTurn { gate: Arc::clone(&self.0), writer }),
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

impl GateTurn {
    /// The file's writer connection, opened with `settings` (`PRAGMA …`) by the first turn that
    /// asks. Every user of a file's gate passes the same settings; what one of them changes per
    /// transaction (`synchronous`) it sets before each.
    pub fn connection(&mut self, settings: &[String]) -> Result<&mut Connection, SqliteFailure> {
        match &mut *self.writer {
            Some(conn) => Ok(conn),
            empty => Ok(empty.insert(Connection::open(&self.gate.filename, settings)?)),
        }
    }

    /// The writer connection when a turn has opened it (see [`Self::connection`]).
    pub fn opened(&mut self) -> Option<&mut Connection> {
        self.writer.as_mut()
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

    #[tokio::test]
    async fn turns_share_one_connection_that_keeps_its_cache() {
        let file = TempFile::new();
        file.open().execute("CREATE TABLE t (v INTEGER)", &[]).unwrap();
        let gate = WriteGate::of(file.0.to_str().unwrap());
        let settings = ["PRAGMA cache_size = -1024".to_string()];
        let mut first = gate.enter(Duration::from_secs(1)).await.unwrap();
        let conn = first.connection(&settings).unwrap();
        conn.execute("INSERT INTO t (v) VALUES (1)", &[]).unwrap();
        let opened: *const Connection = conn;
        drop(first);
        let mut second = gate.enter(Duration::from_secs(1)).await.unwrap();
        // Later settings do not reopen it: the connection is the first turn's.
        let conn = second.connection(&["PRAGMA cache_size = -2048".to_string()]).unwrap();
        assert!(std::ptr::eq(opened, conn), "the same connection");
        let mut size = None;
        conn.for_each_row("PRAGMA cache_size", &[], &mut |r| size = r.i64(0)).unwrap();
        assert_eq!(size, Some(-1024));
        let mut n = None;
        conn.for_each_row("SELECT COUNT(*) FROM t", &[], &mut |r| n = r.i64(0)).unwrap();
        assert_eq!(n, Some(1));
    }
}
