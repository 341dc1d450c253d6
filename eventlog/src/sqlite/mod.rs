//! The SQLite store: the embedded default. One file in WAL mode; one writer connection, lent by
//! the file's write gate to the group-commit writer and to the read models in turn (SQLite
//! allows one writer at a time anyway, and one connection keeps its page cache across both),
//! reader connections of the store's own that read and look up events (`read`), and sqlx's pool
//! for the rest (migrations and the read models' settings).

use std::{path::Path, str::FromStr, sync::Arc};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_sqlite::{BUSY_TIMEOUT, Connection};
use chrono::{DateTime, Utc};
use sqlx::{
    SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions},
};
use tokio::{sync::Notify, task::JoinHandle};

mod checkpoint;
mod read;
mod write;

use crate::{
    append::LocatedEvent,
    backend::{Backend, BatchAnswers},
    error::EventLogError,
    filter::EventFilter,
    import::{ImportResult, PreparedImport},
    store::{BackendKind, LogCore, StoreOptions, impl_event_store},
    unparsed::UnparsedEvent,
    validate::PreparedAppend,
};

/// The SQLite-backed event store.
pub struct SqliteEventStore {
    core: LogCore<SqliteBackend>,
}

impl_event_store!(SqliteEventStore, BackendKind::Sqlite);

impl SqliteEventStore {
    /// Open (creating and migrating if needed) the log in a SQLite file. `target` is a URL
    /// (`sqlite:agentlog.db`, `sqlite:///abs/path.db`) or a plain file path.
    pub async fn open(target: &str, options: StoreOptions) -> Result<Self, EventLogError> {
        let connect = connect_options(target, &options)?;
        let filename = connect.get_filename().to_string_lossy().into_owned();
        if filename.is_empty() || filename == ":memory:" {
            // The writer and imports open connections of their own on the file.
            return Err(EventLogError::UnsupportedUrl(format!("{target} (the log needs a database file)")));
        }
        create_private(connect.get_filename())?;
        let pool = SqlitePoolOptions::new()
            .max_connections(options.read_connections.max(1))
            .min_connections(1)
            .test_before_acquire(false)
            .connect_with(connect.clone())
            .await
            .map_err(EventLogError::db("opening the SQLite database"))?;
        if options.migrate {
            crate::migrate::migrate_sqlite(&pool).await?;
        }
        let settings: Arc<[String]> = writer_settings(&options).into();
        let synchronous: Arc<str> = synchronous(&options).into();
        let checkpointer = match options.sqlite_background_checkpoint {
            Some(interval) => Some(checkpoint::start(&filename, &settings, interval)?),
            None => None,
        };
        let readers = Arc::new(agentlog_sqlite::Readers::new(
            filename.clone(),
            settings.to_vec(),
            options.read_connections.max(1) as usize,
        ));
        let gate = agentlog_sqlite::WriteGate::of(&filename);
        let backend = SqliteBackend { pool, connect, settings, synchronous, gate, readers, checkpointer };
        Ok(Self { core: LogCore::start(backend, &options).await? })
    }

    fn checkpoint_stats(&self) -> Option<Arc<crate::checkpoints::CheckpointStats>> {
        self.core.backend.checkpointer.as_ref().map(|c| Arc::clone(&c.stats))
    }

    /// The reader pool (projections keep their read models in the same file).
    pub fn pool(&self) -> &SqlitePool {
        &self.core.backend.pool
    }

    fn database_pool(&self) -> crate::store::DatabasePool {
        crate::store::DatabasePool::Sqlite(self.core.backend.pool.clone())
    }

    /// Options to open more connections to the same file (with the same pragmas).
    pub fn connect_options(&self) -> &SqliteConnectOptions {
        &self.core.backend.connect
    }
}

/// Create a database file that does not exist yet readable by its owner only (0600): SQLite
/// creates the `-wal` and `-shm` files with the database file's permissions, so the log is
/// private whatever the umask. An existing file keeps its permissions (the operator's choice).
fn create_private(path: &Path) -> Result<(), EventLogError> {
    if path.as_os_str().is_empty() || path == Path::new(":memory:") || path.exists() {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        // Created meanwhile by another process: theirs to have made private.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => {
            Err(EventLogError::Database { context: "creating the SQLite database file", source: sqlx::Error::Io(e) })
        }
    }
}

/// The file `target` names (a `sqlite:` URL or a path), with sqlx's default options.
fn file_options(target: &str) -> Result<SqliteConnectOptions, EventLogError> {
    if target.starts_with("sqlite:") {
        SqliteConnectOptions::from_str(target).map_err(|_| EventLogError::UnsupportedUrl(target.to_string()))
    } else {
        Ok(SqliteConnectOptions::new().filename(Path::new(target)))
    }
}

/// Plain options for a look at an existing file, never creating one.
pub(crate) fn existing_file(target: &str) -> Result<SqliteConnectOptions, EventLogError> {
    Ok(file_options(target)?.create_if_missing(false).busy_timeout(BUSY_TIMEOUT))
}

fn connect_options(target: &str, options: &StoreOptions) -> Result<SqliteConnectOptions, EventLogError> {
    let base = file_options(target)?;
    // The pool's connections keep their map of the file as the log's own do (`kept_map`).
    agentlog_sqlite::kept_map::register()
        .map_err(|failure| EventLogError::Unavailable { reason: failure.to_string() })?;
    let base = base.create_if_missing(true).journal_mode(SqliteJournalMode::Wal).busy_timeout(BUSY_TIMEOUT);
    let base = match agentlog_sqlite::kept_map::vfs_name() {
        Some(vfs) => base.vfs(vfs),
        None => base,
    };
    Ok(shared_pragmas(options).into_iter().fold(base, |o, (name, value)| o.pragma(name, value)))
}

/// SQL for the SQLite log.
pub(crate) struct SqliteBackend {
    pool: SqlitePool,
    connect: SqliteConnectOptions,
    /// The `PRAGMA`s the file's writer connection runs when it opens (it opens on the first
    /// write of this process: an append, an import or a read-model transaction).
    settings: Arc<[String]>,
    /// `PRAGMA synchronous` for appends, set before each batch: the writer connection is the
    /// read models' too, and they commit at NORMAL.
    synchronous: Arc<str>,
    /// The file's write lock as this process queues for it, and its writer connection (shared
    /// with the read models: `agentlog_sqlite::WriteGate`).
    gate: agentlog_sqlite::WriteGate,
    /// Connections of the store's own that read the log (see `read`).
    readers: Arc<agentlog_sqlite::Readers>,
    /// The WAL checkpointer's thread, when commits do not checkpoint (ends with the log).
    checkpointer: Option<checkpoint::Checkpointer>,
}

impl SqliteBackend {
    /// Run `work` on a reader: on the calling thread when it reads at most
    /// [`read::INLINE_ROWS`] rows, else on the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        limit: usize,
        work: impl FnOnce(&mut Connection) -> Result<T, EventLogError> + Send + 'static,
    ) -> Result<T, EventLogError> {
        let readers = Arc::clone(&self.readers);
        let run = move || readers.with(work).map_err(write::failed("opening a log reader"))?;
        if limit > read::INLINE_ROWS {
            return blocking(run).await;
        }
        let read = run();
        // An inline page never waits: a request made of many of them (a query of several log
        // reads and replays) would hold its thread to the end, and no timeout around it could
        // fire. Each page lets the runtime turn once (timers, other tasks); a lookup does not.
        if limit > read::INLINE_LOOKUP_ROWS {
            tokio::task::yield_now().await;
        }
        read
    }
}

/// The settings of the writer's own connection (and the checkpointer's): the pool's (see
/// [`connect_options`]) and the busy timeout.
fn writer_settings(options: &StoreOptions) -> Vec<String> {
    let mut settings: Vec<String> =
        shared_pragmas(options).into_iter().map(|(name, value)| format!("PRAGMA {name} = {value}")).collect();
    settings.push(format!("PRAGMA busy_timeout = {}", BUSY_TIMEOUT.as_millis()));
    settings
}

/// How appends reach the disk: FULL (the default) syncs the WAL at every commit.
fn synchronous_level(options: &StoreOptions) -> &'static str {
    if options.sqlite_synchronous_full { "FULL" } else { "NORMAL" }
}

/// The statement that sets [`synchronous_level`] on a connection.
fn synchronous(options: &StoreOptions) -> String {
    format!("PRAGMA synchronous = {}", synchronous_level(options))
}

/// The `PRAGMA`s every connection of the log runs, pooled or its own.
fn shared_pragmas(options: &StoreOptions) -> Vec<(&'static str, String)> {
    vec![
        ("synchronous", synchronous_level(options).to_string()),
        // 32 MiB of page cache per connection (SQLite's default is 2 MiB): read-model writes
        // touch index pages all over a large file, and every miss is a read system call.
        ("cache_size", "-32768".to_string()),
        ("mmap_size", options.sqlite_mmap_mib.saturating_mul(1024 * 1024).to_string()),
        ("foreign_keys", "ON".to_string()),
        // 0: no commit checkpoints, a thread of the log's does (see `checkpoint`).
        (
            "wal_autocheckpoint",
            if options.sqlite_background_checkpoint.is_some() { 0 } else { options.sqlite_wal_autocheckpoint }
                .to_string(),
        ),
    ]
}

/// A writer connection that could not be opened: every append waiting on it is answered
/// UNAVAILABLE, as on PostgreSQL (docs/log.md).
fn unavailable(failure: agentlog_sqlite::SqliteFailure) -> EventLogError {
    EventLogError::Unavailable { reason: write::failed("opening the writer connection")(failure).to_string() }
}

/// Run SQLite work on the blocking pool: a commit waits for `fsync`, which must not hold one
/// of the runtime's worker threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, EventLogError> + Send + 'static,
) -> Result<T, EventLogError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(EventLogError::Unavailable { reason: e.to_string() }))
}

impl Backend for SqliteBackend {
    /// Nothing: the file's writer connection lives in its write gate, lent with each turn.
    type Writer = ();

    async fn open_writer(&self) -> Result<(), EventLogError> {
        Ok(())
    }

    async fn commit_batch(
        &self,
        _: &mut (),
        batch: &[Arc<PreparedAppend>],
        now: DateTime<Utc>,
    ) -> Result<BatchAnswers, EventLogError> {
        let batch = batch.to_vec();
        let (settings, synchronous) = (Arc::clone(&self.settings), Arc::clone(&self.synchronous));
        let mut turn = self.gate.enter(BUSY_TIMEOUT).await.map_err(write::failed("waiting for the write lock"))?;
        blocking(move || {
            let conn = turn.connection(&settings).map_err(unavailable)?;
            conn.execute(&synchronous, &[]).map_err(write::failed("setting the writer's synchronous"))?;
            let batch: Vec<&PreparedAppend> = batch.iter().map(|a| &**a).collect();
            write::commit_batch(conn, &batch, now)
        })
        .await
    }

    async fn import_batch(&self, events: Vec<PreparedImport>) -> Result<ImportResult, EventLogError> {
        let (settings, synchronous) = (Arc::clone(&self.settings), Arc::clone(&self.synchronous));
        // The file's write lock (IMMEDIATE) orders it with appends.
        let mut turn = self.gate.enter(BUSY_TIMEOUT).await.map_err(write::failed("waiting for the write lock"))?;
        blocking(move || {
            let conn = turn.connection(&settings).map_err(unavailable)?;
            conn.execute(&synchronous, &[]).map_err(write::failed("setting the writer's synchronous"))?;
            write::import(conn, &events)
        })
        .await
    }

    async fn read_all(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let filter = filter.clone();
        self.read(limit, move |conn| read::forward(conn, after, up_to, &filter, limit)).await
    }

    async fn read_all_unparsed(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<UnparsedEvent>, EventLogError> {
        let filter = filter.clone();
        self.read(limit, move |conn| read::forward_unparsed(conn, after, up_to, &filter, limit)).await
    }

    async fn read_all_back(
        &self,
        after: i64,
        before: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let filter = filter.clone();
        self.read(limit, move |conn| read::backward(conn, after, before, &filter, limit)).await
    }

    async fn read_stream(
        &self,
        stream_id: &str,
        from_version: i64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let stream_id = stream_id.to_string();
        self.read(limit, move |conn| read::stream(conn, &stream_id, from_version, limit)).await
    }

    async fn stream_version(&self, stream_id: &str) -> Result<i64, EventLogError> {
        let stream_id = stream_id.to_string();
        self.read(1, move |conn| read::stream_version(conn, &stream_id)).await
    }

    async fn head(&self) -> Result<i64, EventLogError> {
        self.read(1, read::head).await
    }

    async fn locate(&self, ids: &[uuid::Uuid]) -> Result<Vec<LocatedEvent>, EventLogError> {
        let ids: Vec<String> = ids.iter().map(uuid::Uuid::to_string).collect();
        self.read(ids.len(), move |conn| read::locate(conn, &ids)).await
    }

    fn spawn_fan_out(
        self: &Arc<Self>,
        _committed: tokio::sync::watch::Receiver<i64>,
        _wake: Arc<Notify>,
    ) -> Vec<JoinHandle<()>> {
        // One process per file: local commits wake the tailer directly; other processes on the
        // same file (the replay tools) are picked up by the tailer's polling.
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// With a background checkpointer no connection checkpoints in a commit, and the thread
    /// copies the appended pages back; without one, commits do (SQLite's default) and there
    /// is no thread.
    #[tokio::test]
    async fn the_wal_is_checkpointed_off_the_commit_path_when_asked() {
        use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};

        use crate::{ExpectedVersion, store::EventStore};

        let file = crate::testing::TempSqlite::new();
        let options =
            StoreOptions { sqlite_background_checkpoint: Some(Duration::from_millis(10)), ..StoreOptions::default() };
        let store = SqliteEventStore::open(&file.url(), options).await.unwrap();
        let autocheckpoint: i64 =
            sqlx::query_scalar("PRAGMA wal_autocheckpoint").fetch_one(store.pool()).await.unwrap();
        assert_eq!(autocheckpoint, 0, "pooled connections must not checkpoint in a commit");
        let writer: Vec<&String> =
            store.core.backend.settings.iter().filter(|s| s.contains("wal_autocheckpoint")).collect();
        assert_eq!(writer, vec!["PRAGMA wal_autocheckpoint = 0"], "nor the writer's own connection");
        for i in 0..20 {
            let id = uuid::Uuid::now_v7();
            let event = NewEvent::new(
                id,
                "test.a",
                serde_json::json!({"i": i}),
                EventMetadata::source(id, Actor::user("u"), "u", "user:u"),
            );
            store.append(&format!("s-{i}"), ExpectedVersion::Any, vec![event]).await.unwrap();
        }
        let stats = store.wal_checkpoints().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while stats.frames() == 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(stats.frames() > 0, "the checkpointer copied nothing back: {stats:?}");
        assert_eq!(stats.failures(), 0);

        let file = crate::testing::TempSqlite::new();
        let store = SqliteEventStore::open(&file.url(), StoreOptions::default()).await.unwrap();
        assert!(store.wal_checkpoints().is_none());
        let autocheckpoint: i64 =
            sqlx::query_scalar("PRAGMA wal_autocheckpoint").fetch_one(store.pool()).await.unwrap();
        assert_eq!(autocheckpoint, 1_000);
    }

    /// A writer connection that cannot be opened answers the append UNAVAILABLE (and writes
    /// nothing): here the file is gone before the first append opens it.
    #[tokio::test]
    async fn an_append_without_a_writer_connection_is_unavailable() {
        use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};

        use crate::{ExpectedVersion, store::EventStore};

        let file = crate::testing::TempSqlite::new();
        let store = SqliteEventStore::open(&file.url(), StoreOptions::default()).await.unwrap();
        let gone = file.path.with_extension("gone");
        std::fs::rename(&file.path, &gone).unwrap();
        let id = uuid::Uuid::now_v7();
        let event = NewEvent::new(
            id,
            "test.a",
            serde_json::json!({}),
            EventMetadata::source(id, Actor::user("u"), "u", "user:u"),
        );
        let err = store.append("s-1", ExpectedVersion::Any, vec![event]).await.unwrap_err();
        assert!(err.is_unavailable(), "{err:?}");
        assert!(err.to_string().contains("opening the writer connection"), "{err}");
        let _ = std::fs::remove_file(&gone);
    }

    /// Every pooled connection, not just the first, maps the file as asked (and none when off).
    #[tokio::test]
    async fn every_connection_maps_as_many_mib_as_asked() {
        // 2 GiB (the server's default) is SQLite's own ceiling on Linux, a little under it.
        for (mib, expected) in [(0_u64, 0_i64), (64, 64 * 1024 * 1024), (2048, 0x7fff_0000)] {
            let file = crate::testing::TempSqlite::new();
            let options = StoreOptions { sqlite_mmap_mib: mib, ..StoreOptions::default() };
            let store = SqliteEventStore::open(&file.url(), options).await.unwrap();
            let mut held = Vec::new();
            for _ in 0..3 {
                let mut conn = store.pool().acquire().await.unwrap();
                let size: i64 = sqlx::query_scalar("PRAGMA mmap_size").fetch_one(&mut *conn).await.unwrap();
                assert_eq!(size, expected, "{mib} MiB");
                held.push(conn);
            }
        }
    }
}
