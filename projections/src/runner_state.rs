//! What the runner keeps and shares with the parallel applier: its options, each projection's
//! status and checkpoint, timings, and the checkpoint rows' reads and writes.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use agentlog_eventlog::EventStore;
use tokio::{sync::watch, task::JoinHandle};

use crate::{
    db::{ReadDb, ReadTx, SqlValue},
    error::ProjectionError,
    projection::Projection,
};

/// SQLite's WAL auto-checkpoint during a bulk load, in pages (400 MB of 4 KiB pages).
pub const BULK_WAL_AUTOCHECKPOINT: u32 = 100_000;

/// SQLite's page cache during a bulk load, in MiB ([`RunnerOptions::bulk`]).
pub const BULK_SQLITE_CACHE_MIB: u32 = 256;

/// Events a SQLite bulk load applies per transaction ([`RunnerOptions::commit_every`]).
pub const BULK_COMMIT_EVERY: usize = 200_000;

/// Tunables of the runner.
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Most events applied in one transaction (default 2,000).
    pub batch_size: usize,
    /// Most events applied in one transaction while catching up with history already in the
    /// log (a start behind its head, a resume after a failure); 0 (the default): `batch_size`.
    /// A larger batch writes once a row that many of its events change.
    pub catch_up_batch_size: usize,
    /// Wait after a database failure before resuming (default 500 ms); doubled after each
    /// failure that follows without progress, up to 10 s.
    pub retry_delay: Duration,
    /// Tuned for loading much of the log at once with no server waiting (default off): on
    /// SQLite the WAL is checkpointed every [`BULK_WAL_AUTOCHECKPOINT`] pages instead of every
    /// 1,000 (each page a batch rewrites is copied into the database once per checkpoint, not
    /// once per batch); on PostgreSQL each projection applies a batch in its own transaction,
    /// all at once, each with its own checkpoint row.
    pub bulk: bool,
    /// SQLite's page cache for each batch's connection, in MiB (0: the connection's own,
    /// 32 MiB). A bulk load inserts by random keys (event ids, operation ids) into indexes far
    /// larger than 32 MiB: with a small cache each batch reads most of those pages back and
    /// writes each one it touches to the WAL again. The connection keeps the size after the
    /// load.
    pub sqlite_cache_mib: u32,
    /// In a SQLite bulk load, commit once at least this many events are applied, several
    /// batches in one transaction (0: every batch commits). Memory holds one batch of events
    /// either way; fewer commits write each page the batches share to the WAL fewer times.
    pub commit_every: usize,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        Self {
            batch_size: 2_000,
            catch_up_batch_size: 0,
            retry_delay: Duration::from_millis(500),
            bulk: false,
            sqlite_cache_mib: 0,
            commit_every: 0,
        }
    }
}

impl RunnerOptions {
    /// For a server: live batches of [`batch_size`](Self::batch_size)'s default, and catch-up
    /// batches of 20,000 events. A server started on a 1M-event log whose read models were
    /// never built is ready 3.5× sooner than with batches of 2,000 (BENCHMARKS.md, "A start
    /// behind the log"); each catch-up transaction is longer (on SQLite an append waits for
    /// it), and the process's peak memory is ~170 MB higher.
    pub fn server() -> Self {
        Self { catch_up_batch_size: 20_000, ..Self::default() }
    }

    /// The batch size of a catch-up.
    pub(crate) fn catching_up(&self) -> usize {
        if self.catch_up_batch_size == 0 { self.batch_size } else { self.catch_up_batch_size }
    }

    /// For a rebuild that no server waits on (`agentlog-replay rebuild`): batches of 50,000
    /// events, so a rebuild writes a row that many events change once per batch (50,000
    /// against 20,000: 5–10% less CPU; 100,000 no less again), and on SQLite a transaction per
    /// [`BULK_COMMIT_EVERY`] events. Three batches of decoded events and the page cache are in
    /// memory at once (BENCHMARKS.md has the peak). Not for a server: on SQLite a transaction
    /// holds the write lock, and appends wait. SQLite's page cache is
    /// [`BULK_SQLITE_CACHE_MIB`].
    pub fn bulk() -> Self {
        Self {
            batch_size: 50_000,
            bulk: true,
            sqlite_cache_mib: BULK_SQLITE_CACHE_MIB,
            commit_every: BULK_COMMIT_EVERY,
            ..Self::default()
        }
    }
}

/// Where one projection stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionStatus {
    /// Its name.
    pub name: &'static str,
    /// Its code version.
    pub version: i32,
    /// The last position applied.
    pub position: i64,
    /// Why it stopped, when it failed.
    pub failed: Option<String>,
    /// Events handed to it since the runner was created.
    pub applied_events: u64,
    /// Time spent in its `apply` since the runner was created, in microseconds.
    pub apply_micros: u64,
}

/// Where a runner's time went since it was created (microseconds); the time in each
/// projection's `apply` is in its [`ProjectionStatus`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunnerTimings {
    /// Batches committed.
    pub batches: u64,
    /// Waiting for the log reader during catch-up (reading the log is slower than applying).
    pub read_wait_micros: u64,
    /// Writing checkpoints and committing.
    pub commit_micros: u64,
    /// After a bulk load: creating the dropped indexes again (and, on SQLite, emptying the WAL).
    pub finish_micros: u64,
    /// Times a following runner failed (a database failure that passes, most often) and
    /// resumed from the committed checkpoints.
    pub resumes: u64,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn EventStore>,
    pub(crate) db: ReadDb,
    pub(crate) projections: Vec<Arc<dyn Projection>>,
    pub(crate) options: RunnerOptions,
    pub(crate) state: Mutex<Vec<ProjectionStatus>>,
    pub(crate) timings: Mutex<RunnerTimings>,
    pub(crate) progress: watch::Sender<i64>,
    /// Bumped whenever any checkpoint or failure changes (for waits on named projections).
    pub(crate) changes: watch::Sender<u64>,
    pub(crate) task: Mutex<Option<JoinHandle<()>>>,
}

pub(crate) fn newer_version(stored: i64, code: i64) -> String {
    format!(
        "the database holds version {stored} of this read model and this server has version {code}: a newer \
         server runs on this database (rebuild the read model to go back)"
    )
}

/// A checkpoint as committed.
pub(crate) struct Committed {
    pub(crate) name: String,
    pub(crate) version: i64,
    pub(crate) position: i64,
}

/// Read the committed checkpoints (one, or all) and lock them until the transaction ends:
/// PostgreSQL row locks in name order (two processes never deadlock on them); on SQLite the
/// transaction already holds the database's write lock (`BEGIN IMMEDIATE`).
/// The position projection `name` has committed, as `db` reads it: through a snapshot
/// (`Snapshots::take`), the position of that snapshot's moment. 0 when it has no checkpoint.
pub async fn committed_position(db: &ReadDb, name: &str) -> Result<i64, ProjectionError> {
    let rows = db.fetch("SELECT position FROM projection_checkpoints WHERE name = $1", &[name.into()]).await?;
    Ok(rows.first().and_then(|r| r.i64(0)).unwrap_or(0))
}

pub(crate) async fn lock_checkpoints(tx: &mut ReadTx, name: Option<&str>) -> Result<Vec<Committed>, ProjectionError> {
    let lock = if tx.is_postgres() { " FOR UPDATE" } else { "" };
    let rows = match name {
        Some(n) => {
            let sql = format!("SELECT name, version, position FROM projection_checkpoints WHERE name = $1{lock}");
            tx.fetch(&sql, &[n.into()]).await?
        }
        None => {
            let sql = format!("SELECT name, version, position FROM projection_checkpoints ORDER BY name{lock}");
            tx.fetch(&sql, &[]).await?
        }
    };
    Ok(rows
        .iter()
        .map(|r| Committed {
            name: r.str(0).unwrap_or_default().to_string(),
            version: r.i64(1).unwrap_or(0),
            position: r.i64(2).unwrap_or(0),
        })
        .collect())
}

pub(crate) async fn write_checkpoint(
    tx: &mut ReadTx,
    p: &dyn Projection,
    position: i64,
) -> Result<(), ProjectionError> {
    tx.upsert(
        "projection_checkpoints",
        &CHECKPOINT_COLUMNS,
        &["name"],
        &[vec![p.name().into(), p.version().into(), position.into(), now_micros()]],
    )
    .await
}

pub(crate) fn publish(inner: &Inner, state: &[ProjectionStatus]) {
    let min = state.iter().filter(|s| s.failed.is_none()).map(|s| s.position).min().unwrap_or(i64::MAX);
    inner.progress.send_if_modified(|p| {
        let changed = *p != min;
        *p = min;
        changed
    });
    inner.changes.send_modify(|g| *g = g.wrapping_add(1));
}

pub(crate) fn micros_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Aborts the task when dropped (a failed or stopped catch-up leaves no reader behind).
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Now, as the checkpoint rows store it.
pub(crate) fn now_micros() -> SqlValue {
    SqlValue::Int(chrono::Utc::now().timestamp_micros())
}

/// The columns of `projection_checkpoints`.
pub(crate) const CHECKPOINT_COLUMNS: [&str; 4] = ["name", "version", "position", "updated_at"];

/// Re-read committed checkpoints into memory (after a start, a reset or a failed batch).
pub(crate) async fn reload(inner: &Inner) -> Result<(), ProjectionError> {
    let rows = inner.db.fetch("SELECT name, position FROM projection_checkpoints", &[]).await?;
    let mut state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    for s in state.iter_mut() {
        if let Some(r) = rows.iter().find(|r| r.str(0) == Some(s.name)) {
            s.position = r.i64(1).unwrap_or(0);
        }
    }
    publish(inner, &state);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RunnerOptions;

    #[test]
    fn a_catch_up_takes_its_own_batch_size_or_the_live_one() {
        assert_eq!(RunnerOptions::default().catching_up(), 2_000);
        assert_eq!(RunnerOptions { batch_size: 7, ..RunnerOptions::default() }.catching_up(), 7);
        let server = RunnerOptions::server();
        assert_eq!((server.batch_size, server.catching_up()), (2_000, 20_000));
        assert_eq!(RunnerOptions::bulk().catching_up(), 50_000);
    }
}
