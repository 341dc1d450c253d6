//! The read models' SQLite database: connections on the log's file — the file's writer
//! connection (shared with the log's appends through the file's `WriteGate`) and readers of
//! their own — that run each statement on the calling thread.
//!
//! sqlx runs a SQLite connection on a worker thread and hands every statement, every bound
//! value and every fetched row across a channel to it and back. A projection batch writes
//! thousands of rows, and a report reads thousands; those hand-offs, the copies of every value
//! they need, and preparing a new multi-row `INSERT` for every chunk size cost more than
//! SQLite's own work. Here each statement runs on an `agentlog_sqlite::Connection`: prepared
//! once per connection (kept by its SQL text), bound in place and stepped, and a multi-row write
//! is a one-row `INSERT` run once per row — which SQLite executes faster than it parses a
//! multi-row one.
//!
//! The connections are opened with the log pool's own settings (synchronous, foreign keys,
//! page cache, memory map) read from a pooled connection, so what they write is written as a
//! pooled connection would write it. Values map as sqlx maps them (`SqlValue::Int` ↔ INTEGER,
//! `Float` ↔ REAL, `Text` ↔ TEXT; a BLOB, or text that is not UTF-8, reads as NULL): tables
//! written either way are identical.

use std::sync::{Arc, Mutex};

use agentlog_sqlite::{BUSY_TIMEOUT, Connection, GateTurn, Readers, Row, SqlValue, SqliteFailure, WriteGate};
use sqlx::SqlitePool;
use tokio::sync::Semaphore;

use crate::error::ProjectionError;

/// The read models' SQLite database: connections of its own on the log's file — the file's
/// writer, which the log's appends write through too (its [`WriteGate`]: one write transaction
/// at a time, as SQLite's write lock would make it anyway), and readers for queries, as many at
/// once as the log's reader pool has connections — opened on first use with the pool's settings.
#[derive(Clone, Debug)]
pub struct SqliteDb {
    pool: SqlitePool,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The file and the settings every connection is opened with.
    open: tokio::sync::OnceCell<Opening>,
    /// One permit per reader that may be open at once.
    readers: Semaphore,
}

#[derive(Debug)]
struct Opening {
    settings: Vec<String>,
    /// Readers not in use (at most as many as may be open at once).
    readers: Readers,
    /// The file's write lock as this process queues for it, lending the file's writer
    /// connection (the log's appends write through it too).
    gate: WriteGate,
    /// `PRAGMA synchronous` for writes outside a transaction: the pool's (durable).
    durable: String,
    /// `PRAGMA synchronous` for read-model transactions: NORMAL at most (see [`SqliteDb::begin`]).
    derived: String,
}

impl SqliteDb {
    /// The read models in the file of `pool`.
    pub fn new(pool: SqlitePool) -> Self {
        let readers = Semaphore::new(pool.options().get_max_connections().max(1) as usize);
        let shared = Shared { open: tokio::sync::OnceCell::new(), readers };
        Self { pool, shared: Arc::new(shared) }
    }

    /// The log's reader pool (its file and settings are the read models').
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Begin a read-model transaction (`BEGIN IMMEDIATE`: the write lock up front). It commits
    /// at `synchronous = NORMAL`: in WAL mode that is atomic and ordered but does not wait for
    /// the disk, so a power loss may undo the last ones (never part of one), and the runner
    /// applies them again from the log, whose own commits are durable and flush these with them.
    pub(crate) async fn begin(&self) -> Result<SqliteTx, ProjectionError> {
        let opening = self.opening().await?;
        let mut turn = self.writer(opening).await?;
        let conn = turn.connection(&opening.settings).map_err(failed("opening the read models' writer"))?;
        if conn.in_transaction() {
            // An earlier transaction whose commit and rollback both failed: end it first.
            conn.execute("ROLLBACK", &[]).map_err(failed("rolling back read models"))?;
        }
        conn.execute(&opening.derived, &[]).map_err(failed("beginning a transaction"))?;
        conn.execute("BEGIN IMMEDIATE", &[]).map_err(failed("beginning a transaction"))?;
        Ok(SqliteTx { turn, open: true })
    }

    /// Run one statement outside any transaction; the rows it changed. On the writer: a write
    /// waits for the read models' transaction in flight here (an async wait, not SQLite's busy
    /// wait, which would hold the thread the transaction needs to finish).
    /// Such a write is durable (the pool's `synchronous`): it may hold what the log does not
    /// (API tokens).
    pub(crate) async fn execute(&self, sql: &str, args: &[SqlValue]) -> Result<u64, ProjectionError> {
        let opening = self.opening().await?;
        let mut turn = self.writer(opening).await?;
        let conn = turn.connection(&opening.settings).map_err(failed("opening the read models' writer"))?;
        conn.execute(&opening.durable, &[]).map_err(failed("writing a read model"))?;
        conn.execute(sql, args).map_err(failed("writing a read model"))
    }

    /// This process's turn at the file's write lock (its writer connection with it), once the
    /// transaction in flight (the log's or the read models') ends.
    async fn writer(&self, opening: &Opening) -> Result<GateTurn, ProjectionError> {
        opening.gate.enter(BUSY_TIMEOUT).await.map_err(failed("waiting for the write lock"))
    }

    /// Run one query outside any transaction on a reader, handing each row to `each`; the
    /// number of rows.
    pub(crate) async fn for_each_row(
        &self,
        sql: &str,
        args: &[SqlValue],
        each: &mut (dyn FnMut(Row) + Send),
    ) -> Result<u64, ProjectionError> {
        let _permit = self.shared.readers.acquire().await.map_err(|_| ProjectionError::Stopped)?;
        let opening = self.opening().await?;
        opening
            .readers
            .with(|conn| conn.for_each_row(sql, args, each))
            .map_err(failed("opening a read-model reader"))?
            .map_err(failed("reading a read model"))
    }

    /// A reader lent for one read transaction (`BEGIN`: SQLite fixes the snapshot at its first
    /// query), until [`SqliteDb::end_read`].
    pub(crate) async fn begin_read(&self) -> Result<Connection, ProjectionError> {
        let opening = self.opening().await?;
        let mut conn = opening.readers.take().map_err(failed("opening a read-model reader"))?;
        conn.execute("BEGIN", &[]).map_err(failed("beginning a read transaction"))?;
        Ok(conn)
    }

    /// End a read transaction from [`SqliteDb::begin_read`] and put its reader back (dropped
    /// instead when the transaction does not end).
    pub(crate) fn end_read(&self, mut conn: Connection) {
        if let Err(e) = conn.execute("COMMIT", &[]) {
            tracing::debug!(error = %e, "ending a read transaction; its reader is closed");
            return;
        }
        if let Some(opening) = self.shared.open.get() {
            opening.readers.give_back(conn);
        }
    }

    /// The file and the pool's settings, read once from a pooled connection: every connection
    /// of the read models is opened as a pooled one is, and writes as it would.
    async fn opening(&self) -> Result<&Opening, ProjectionError> {
        self.shared
            .open
            .get_or_try_init(|| async {
                let filename = self.pool.connect_options().get_filename().to_string_lossy().into_owned();
                if filename.is_empty() || filename == ":memory:" || filename.starts_with("file:") {
                    return Err(ProjectionError::Invalid(
                        "the read models need a SQLite database file (an in-memory database has none to share)".into(),
                    ));
                }
                let mut settings = Vec::new();
                let mut synchronous = 2;
                for pragma in ["synchronous", "foreign_keys", "cache_size", "mmap_size", "wal_autocheckpoint"] {
                    let value: i64 = sqlx::query_scalar(&format!("PRAGMA {pragma}"))
                        .fetch_one(&self.pool)
                        .await
                        .map_err(ProjectionError::db("reading the database's settings"))?;
                    if pragma == "synchronous" {
                        synchronous = value;
                    }
                    settings.push(format!("PRAGMA {pragma} = {value}"));
                }
                settings.push(format!("PRAGMA busy_timeout = {}", BUSY_TIMEOUT.as_millis()));
                let keep = self.pool.options().get_max_connections().max(1) as usize;
                Ok(Opening {
                    readers: Readers::new(filename.clone(), settings.clone(), keep),
                    gate: WriteGate::of(&filename),
                    settings,
                    durable: format!("PRAGMA synchronous = {synchronous}"),
                    // 1 is NORMAL; a pool at OFF (0) stays off.
                    derived: format!("PRAGMA synchronous = {}", synchronous.min(1)),
                })
            })
            .await
    }
}

/// A SQLite failure as the read models' error, with what was being done.
pub(super) fn failed(context: &'static str) -> impl FnOnce(SqliteFailure) -> ProjectionError {
    move |source| ProjectionError::Sqlite { context, source }
}

/// A write transaction on the file's writer connection; rolled back if dropped before `commit`.
pub struct SqliteTx {
    /// This process's turn at the file's write lock, lending the connection (opened by `begin`);
    /// given back after the rollback in `drop`.
    turn: GateTurn,
    open: bool,
}

impl std::fmt::Debug for SqliteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTx").field("open", &self.open).finish()
    }
}

impl SqliteTx {
    /// The connection `begin` opened (or found open) for this transaction.
    fn conn(&mut self) -> Result<&mut Connection, ProjectionError> {
        self.turn.opened().ok_or(ProjectionError::Sqlite {
            context: "writing a read model",
            source: SqliteFailure::new("the writer connection is not open"),
        })
    }

    /// Run one statement; the rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, args: &[SqlValue]) -> Result<u64, ProjectionError> {
        self.conn()?.execute(sql, args).map_err(failed("writing a read model"))
    }

    /// Run one query; its rows.
    pub(crate) fn fetch(&mut self, sql: &str, args: &[SqlValue]) -> Result<Vec<Row>, ProjectionError> {
        let mut rows = Vec::new();
        self.conn()?.for_each_row(sql, args, &mut |row| rows.push(row)).map_err(failed("reading a read model"))?;
        Ok(rows)
    }

    /// Run the one-row statement `sql` once per row of `rows`.
    pub(crate) fn run_per_row(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<(), ProjectionError> {
        self.conn()?.run_per_row(sql, rows).map_err(failed("writing a read model"))
    }

    /// Commit. A failed commit rolls back (when it dropped), so the writer's next transaction
    /// begins on a connection with none open.
    pub(crate) fn commit(self) -> Result<(), ProjectionError> {
        let mut tx = self;
        let committed = tx.conn()?.execute("COMMIT", &[]).map(drop).map_err(failed("committing read models"));
        tx.open = committed.is_err();
        committed
    }

    /// Roll back (nothing to do when a failed statement ended the transaction itself, as
    /// SQLite may on a full disk or an I/O error).
    pub(crate) fn rollback(mut self) -> Result<(), ProjectionError> {
        self.open = false;
        let conn = self.conn()?;
        if !conn.in_transaction() {
            return Ok(());
        }
        conn.execute("ROLLBACK", &[]).map(drop).map_err(failed("rolling back read models"))
    }
}

/// One [`SqliteTx`] that several tasks write at once, a statement at a time: a bulk load
/// applies every projection of a batch in one transaction, folding on both cores while SQLite
/// runs one statement at a time. Each projection writes only its own tables, so the order in
/// which their statements interleave does not change what is written. Committed by whoever
/// holds the last share (`into_tx`); dropped, the last share rolls back.
#[derive(Debug, Clone)]
pub struct SharedSqliteTx(Arc<Mutex<SqliteTx>>);

impl SharedSqliteTx {
    /// Share `tx`.
    pub(crate) fn new(tx: SqliteTx) -> Self {
        Self(Arc::new(Mutex::new(tx)))
    }

    /// Run `f` on the transaction, alone. (Statements are synchronous calls into SQLite: the
    /// lock is never held across an await.)
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut SqliteTx) -> Result<T, ProjectionError>,
    ) -> Result<T, ProjectionError> {
        let mut tx = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut tx)
    }

    /// The transaction back, once this is its only share.
    pub(crate) fn into_tx(self) -> Result<SqliteTx, ProjectionError> {
        Arc::try_unwrap(self.0)
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .map_err(|_| ProjectionError::Invalid("a shared read-model transaction still has other holders".into()))
    }
}

impl Drop for SqliteTx {
    fn drop(&mut self) {
        if self.open
            && let Some(conn) = self.turn.opened()
            && let Err(e) = conn.execute("ROLLBACK", &[])
        {
            // Nothing to roll back when a failed statement ended the transaction itself; a
            // transaction left open is rolled back by the writer's next `begin`.
            tracing::debug!(error = %e, "rolling back an abandoned read-model transaction");
        }
    }
}
