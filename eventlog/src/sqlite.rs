//! The SQLite store: the embedded default. One file in WAL mode; one writer connection held by
//! the group-commit writer (SQLite allows one writer at a time anyway) and a pool of readers.

use std::{collections::HashMap, path::Path, str::FromStr, sync::Arc, time::Duration};

use agentlog_domain::envelope::RecordedEvent;
use chrono::{DateTime, Utc};
use sqlx::{
    Connection, Executor, QueryBuilder, Row, Sqlite, SqliteConnection, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous},
};
use tokio::{sync::Notify, task::JoinHandle};
use uuid::Uuid;

use crate::{
    backend::{Backend, BatchAnswers},
    batch::{self, StoredEvent},
    error::EventLogError,
    filter::EventFilter,
    import::{ImportResult, PreparedImport, plan_import},
    store::{BackendKind, LogCore, StoreOptions, impl_event_store},
    validate::PreparedAppend,
};

/// SQLite allows 32,766 bound parameters per statement; stay well below.
const IDS_PER_QUERY: usize = 10_000;
/// 12 columns per event row. A power of two: see [`insert_shapes`].
const ROWS_PER_INSERT: usize = 1_024;

/// The row counts of the INSERT statements that write `rows` rows: full statements of
/// [`ROWS_PER_INSERT`], then the rest as powers of two, largest first. Each row count is a
/// statement of its own (prepared once and cached by the connection), so a batch of any size
/// uses the same eleven statements instead of preparing one for its remainder.
fn insert_shapes(rows: usize) -> impl Iterator<Item = usize> {
    let full = rows / ROWS_PER_INSERT;
    let rest = rows % ROWS_PER_INSERT;
    std::iter::repeat_n(ROWS_PER_INSERT, full).chain(
        (0..ROWS_PER_INSERT.trailing_zeros()).rev().map(|bit| 1usize << bit).filter(move |size| rest & size != 0),
    )
}

/// A UUID as the log's text (lower-case, hyphenated), written without `core::fmt`, to bind as
/// a borrowed `&str`.
struct UuidText([u8; uuid::fmt::Hyphenated::LENGTH]);

impl UuidText {
    fn new(id: Uuid) -> Self {
        let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
        id.hyphenated().encode_lower(&mut text);
        Self(text)
    }

    fn as_str(&self) -> &str {
        // Hex digits and hyphens only: always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The text columns of an event row that are UUIDs: event id, root source, parent node.
struct RowIds {
    event: UuidText,
    root_source: UuidText,
    parent_node: Option<UuidText>,
}

impl RowIds {
    fn of(event_id: Uuid, metadata: &agentlog_domain::envelope::EventMetadata) -> Self {
        Self {
            event: UuidText::new(event_id),
            root_source: UuidText::new(metadata.chain.root_source_id),
            parent_node: metadata.chain.parent_node_id.map(UuidText::new),
        }
    }
}

const INSERT_EVENTS: &str = "INSERT INTO events (position, event_id, stream_id, stream_version, event_type, \
                             schema_version, payload, metadata, root_source_id, parent_node_id, user_id, recorded_at) ";

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
        let backend = SqliteBackend { pool, connect };
        Ok(Self { core: LogCore::start(backend, &options).await? })
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

fn connect_options(target: &str, options: &StoreOptions) -> Result<SqliteConnectOptions, EventLogError> {
    let base = if target.starts_with("sqlite:") {
        SqliteConnectOptions::from_str(target).map_err(|_| EventLogError::UnsupportedUrl(target.to_string()))?
    } else {
        SqliteConnectOptions::new().filename(Path::new(target))
    };
    Ok(base
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(if options.sqlite_synchronous_full { SqliteSynchronous::Full } else { SqliteSynchronous::Normal })
        .busy_timeout(Duration::from_secs(30))
        // 32 MiB of page cache per connection (SQLite's default is 2 MiB): read-model writes
        // touch index pages all over a large file, and every miss is a read system call.
        .pragma("cache_size", "-32768")
        .pragma("mmap_size", options.sqlite_mmap_mib.saturating_mul(1024 * 1024).to_string())
        .foreign_keys(true))
}

/// SQL for the SQLite log.
pub(crate) struct SqliteBackend {
    pool: SqlitePool,
    connect: SqliteConnectOptions,
}

const COLUMNS: &str =
    "position, event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, recorded_at";

pub(crate) fn decode_row(row: &SqliteRow) -> Result<RecordedEvent, EventLogError> {
    let position: i64 = row.try_get(0).map_err(EventLogError::db("decoding an event row"))?;
    let corrupt = |reason: String| EventLogError::Corrupt { position, reason };
    let get_str = |i: usize| -> Result<String, EventLogError> {
        row.try_get::<String, _>(i).map_err(|e| corrupt(format!("column {i}: {e}")))
    };
    let get_ref = |i: usize| -> Result<&str, EventLogError> {
        row.try_get::<&str, _>(i).map_err(|e| corrupt(format!("column {i}: {e}")))
    };
    let event_id = Uuid::parse_str(get_ref(1)?).map_err(|e| corrupt(format!("event_id: {e}")))?;
    let payload = serde_json::from_str(get_ref(6)?).map_err(|e| corrupt(format!("payload: {e}")))?;
    let metadata = serde_json::from_str(get_ref(7)?).map_err(|e| corrupt(format!("metadata: {e}")))?;
    let micros: i64 = row.try_get(8).map_err(|e| corrupt(format!("recorded_at: {e}")))?;
    let recorded_at: DateTime<Utc> =
        DateTime::from_timestamp_micros(micros).ok_or_else(|| corrupt(format!("recorded_at {micros} out of range")))?;
    Ok(RecordedEvent {
        position,
        event_id,
        stream_id: get_str(2)?,
        stream_version: row.try_get(3).map_err(|e| corrupt(format!("stream_version: {e}")))?,
        event_type: get_str(4)?,
        schema_version: row.try_get(5).map_err(|e| corrupt(format!("schema_version: {e}")))?,
        payload,
        metadata,
        recorded_at,
    })
}

/// What the database holds that a batch needs: stored events with the batch's ids, the current
/// versions of its streams, and the last position handed out. One statement per chunk.
async fn load_state(
    conn: &mut SqliteConnection,
    ids: &[Uuid],
    streams: &[String],
) -> Result<(HashMap<Uuid, StoredEvent>, HashMap<String, i64>, i64), EventLogError> {
    let mut stored = HashMap::new();
    let mut versions = HashMap::with_capacity(streams.len());
    let mut last = 0;
    let id_texts: Vec<UuidText> = ids.iter().copied().map(UuidText::new).collect();
    let chunks = ids.len().div_ceil(IDS_PER_QUERY).max(streams.len().div_ceil(IDS_PER_QUERY)).max(1);
    for k in 0..chunks {
        let id_chunk = ids.chunks(IDS_PER_QUERY).nth(k).unwrap_or(&[]);
        let stream_chunk = streams.chunks(IDS_PER_QUERY).nth(k).unwrap_or(&[]);
        let mut q = QueryBuilder::<Sqlite>::new(
            "SELECT 2, NULL, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), \
             (SELECT MAX(position) FROM events), 0), NULL, NULL, NULL, NULL, NULL, NULL",
        );
        if !stream_chunk.is_empty() {
            q.push(
                " UNION ALL SELECT 0, stream_id, MAX(stream_version), NULL, NULL, NULL, NULL, NULL, NULL \
                 FROM events WHERE stream_id IN (",
            );
            let mut list = q.separated(", ");
            for s in stream_chunk {
                list.push_bind(s.as_str());
            }
            q.push(") GROUP BY stream_id");
        }
        if !id_chunk.is_empty() {
            q.push(
                " UNION ALL SELECT 1, stream_id, stream_version, event_id, position, event_type, schema_version, \
                 payload, metadata FROM events WHERE event_id IN (",
            );
            let mut list = q.separated(", ");
            for id in id_texts.iter().skip(k * IDS_PER_QUERY).take(IDS_PER_QUERY) {
                list.push_bind(id.as_str());
            }
            q.push(")");
        }
        let rows = q
            .build()
            .fetch_all(&mut *conn)
            .await
            .map_err(EventLogError::db("reading stream versions and event ids"))?;
        for row in rows {
            let kind: i64 = row.try_get(0).map_err(EventLogError::db("decoding a lookup row"))?;
            match kind {
                2 => last = row.try_get(2).map_err(EventLogError::db("decoding the log head"))?,
                0 => {
                    versions.insert(
                        row.try_get(1).map_err(EventLogError::db("decoding a stream id"))?,
                        row.try_get(2).map_err(EventLogError::db("decoding a stream version"))?,
                    );
                }
                _ => {
                    let id: String = row.try_get(3).map_err(EventLogError::db("decoding an event id"))?;
                    let Ok(id) = Uuid::parse_str(&id) else { continue };
                    let payload: String = row.try_get(7).map_err(EventLogError::db("decoding a payload"))?;
                    let metadata: String = row.try_get(8).map_err(EventLogError::db("decoding metadata"))?;
                    stored.insert(
                        id,
                        StoredEvent {
                            stream_id: row.try_get(1).map_err(EventLogError::db("decoding a stream id"))?,
                            stream_version: row.try_get(2).map_err(EventLogError::db("decoding a stream version"))?,
                            position: row.try_get(4).map_err(EventLogError::db("decoding a position"))?,
                            event_type: row.try_get(5).map_err(EventLogError::db("decoding an event type"))?,
                            schema_version: row.try_get(6).map_err(EventLogError::db("decoding a schema version"))?,
                            payload: serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
                            metadata: serde_json::from_str(&metadata).ok(),
                        },
                    );
                }
            }
        }
    }
    Ok((stored, versions, last))
}

async fn commit_in_transaction(
    conn: &mut SqliteConnection,
    batch: &[&PreparedAppend],
    now: DateTime<Utc>,
) -> Result<BatchAnswers, EventLogError> {
    let (stored, versions, last) = load_state(conn, &batch::event_ids(batch), &batch::stream_ids(batch)).await?;
    let plan = batch::plan(batch, &stored, versions);
    let mut located: batch::Located = stored.iter().map(|(id, s)| (*id, (s.position, s.stream_version))).collect();
    if !plan.rows.is_empty() {
        let recorded_at = now.timestamp_micros();
        let ids: Vec<RowIds> =
            plan.rows.iter().map(|r| RowIds::of(r.event.event.event_id, &r.event.event.metadata)).collect();
        let mut next = last;
        let mut done = 0;
        for size in insert_shapes(plan.rows.len()) {
            let (rows, row_ids) = (&plan.rows[done..done + size], &ids[done..done + size]);
            done += size;
            let mut q = QueryBuilder::<Sqlite>::new(INSERT_EVENTS);
            q.push_values(rows.iter().zip(row_ids), |mut b, (row, ids)| {
                next += 1;
                let e = &row.event.event;
                located.insert(e.event_id, (next, row.stream_version));
                b.push_bind(next)
                    .push_bind(ids.event.as_str())
                    .push_bind(row.stream_id)
                    .push_bind(row.stream_version)
                    .push_bind(e.event_type.as_str())
                    .push_bind(e.schema_version)
                    .push_bind(row.event.payload_json.as_str())
                    .push_bind(row.event.metadata_json.as_str())
                    .push_bind(ids.root_source.as_str())
                    .push_bind(ids.parent_node.as_ref().map(UuidText::as_str))
                    .push_bind(e.metadata.user_id.as_str())
                    .push_bind(recorded_at);
            });
            q.build().execute(&mut *conn).await.map_err(EventLogError::db("inserting events"))?;
        }
    }
    Ok(batch::answers(batch, plan.verdicts, &located))
}

async fn import_in_transaction(
    conn: &mut SqliteConnection,
    events: &[PreparedImport],
) -> Result<ImportResult, EventLogError> {
    let ids: Vec<Uuid> = events.iter().map(|e| e.recorded.event_id).collect();
    let mut streams: Vec<String> = events.iter().map(|e| e.recorded.stream_id.clone()).collect();
    streams.sort_unstable();
    streams.dedup();
    let (stored, versions, last) = load_state(conn, &ids, &streams).await?;
    let plan = plan_import(events, &stored, versions, last)?;
    let ids: Vec<RowIds> =
        plan.rows.iter().map(|r| RowIds::of(r.event.recorded.event_id, &r.event.recorded.metadata)).collect();
    let mut done = 0;
    for size in insert_shapes(plan.rows.len()) {
        let (rows, row_ids) = (&plan.rows[done..done + size], &ids[done..done + size]);
        done += size;
        let mut q = QueryBuilder::<Sqlite>::new(INSERT_EVENTS);
        q.push_values(rows.iter().zip(row_ids), |mut b, (row, ids)| {
            let r = &row.event.recorded;
            b.push_bind(row.position)
                .push_bind(ids.event.as_str())
                .push_bind(r.stream_id.as_str())
                .push_bind(r.stream_version)
                .push_bind(r.event_type.as_str())
                .push_bind(r.schema_version)
                .push_bind(row.event.prepared.payload_json.as_str())
                .push_bind(row.event.prepared.metadata_json.as_str())
                .push_bind(ids.root_source.as_str())
                .push_bind(ids.parent_node.as_ref().map(UuidText::as_str))
                .push_bind(r.metadata.user_id.as_str())
                .push_bind(r.recorded_at.timestamp_micros());
        });
        q.build().execute(&mut *conn).await.map_err(EventLogError::db("inserting imported events"))?;
    }
    Ok(plan.result)
}

impl Backend for SqliteBackend {
    type Writer = SqliteConnection;

    async fn open_writer(&self) -> Result<SqliteConnection, EventLogError> {
        SqliteConnection::connect_with(&self.connect).await.map_err(EventLogError::db("opening the writer connection"))
    }

    async fn commit_batch(
        &self,
        conn: &mut SqliteConnection,
        batch: &[&PreparedAppend],
        now: DateTime<Utc>,
    ) -> Result<BatchAnswers, EventLogError> {
        // IMMEDIATE takes the write lock up front, so the reads below see what we will write on.
        conn.execute("BEGIN IMMEDIATE").await.map_err(EventLogError::db("starting an append transaction"))?;
        match commit_in_transaction(conn, batch, now).await {
            Ok(answers) => match conn.execute("COMMIT").await {
                Ok(_) => Ok(answers),
                Err(e) => {
                    let _ = conn.execute("ROLLBACK").await;
                    Err(EventLogError::Database { context: "committing appends", source: e })
                }
            },
            Err(e) => {
                let _ = conn.execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn import_batch(&self, events: &[PreparedImport]) -> Result<ImportResult, EventLogError> {
        let mut conn = self.pool.acquire().await.map_err(EventLogError::db("opening an import connection"))?;
        // IMMEDIATE: the file's write lock, the same one the writer's appends take.
        conn.execute("BEGIN IMMEDIATE").await.map_err(EventLogError::db("starting an import transaction"))?;
        match import_in_transaction(&mut conn, events).await {
            Ok(result) => match conn.execute("COMMIT").await {
                Ok(_) => Ok(result),
                Err(e) => {
                    let _ = conn.execute("ROLLBACK").await;
                    Err(EventLogError::Database { context: "committing an import", source: e })
                }
            },
            Err(e) => {
                let _ = conn.execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    async fn read_all(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let mut q = QueryBuilder::<Sqlite>::new(format!("SELECT {COLUMNS} FROM events WHERE position > "));
        q.push_bind(after);
        if let Some(up_to) = up_to {
            q.push(" AND position <= ").push_bind(up_to);
        }
        push_filter(&mut q, filter);
        q.push(" ORDER BY position LIMIT ").push_bind(limit.min(i64::MAX as usize) as i64);
        let rows = q.build().fetch_all(&self.pool).await.map_err(EventLogError::db("reading the log"))?;
        rows.iter().map(decode_row).collect()
    }

    async fn read_all_back(
        &self,
        after: i64,
        before: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let mut q = QueryBuilder::<Sqlite>::new(format!("SELECT {COLUMNS} FROM events WHERE position > "));
        q.push_bind(after).push(" AND position < ").push_bind(before);
        push_filter(&mut q, filter);
        q.push(" ORDER BY position DESC LIMIT ").push_bind(limit.min(i64::MAX as usize) as i64);
        let rows = q.build().fetch_all(&self.pool).await.map_err(EventLogError::db("reading the log"))?;
        rows.iter().map(decode_row).collect()
    }

    async fn read_stream(
        &self,
        stream_id: &str,
        from_version: i64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE stream_id = ? AND stream_version >= ? ORDER BY stream_version LIMIT ?"
        ))
        .bind(stream_id)
        .bind(from_version)
        .bind(limit.min(i64::MAX as usize) as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(EventLogError::db("reading a stream"))?;
        rows.iter().map(decode_row).collect()
    }

    async fn stream_version(&self, stream_id: &str) -> Result<i64, EventLogError> {
        sqlx::query_scalar("SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream_id = ?")
            .bind(stream_id)
            .fetch_one(&self.pool)
            .await
            .map_err(EventLogError::db("reading a stream version"))
    }

    async fn head(&self) -> Result<i64, EventLogError> {
        sqlx::query_scalar("SELECT COALESCE(MAX(position), 0) FROM events")
            .fetch_one(&self.pool)
            .await
            .map_err(EventLogError::db("reading the log head"))
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

/// The `AND …` conditions of a log filter.
fn push_filter(q: &mut QueryBuilder<'_, Sqlite>, filter: &EventFilter) {
    if !filter.event_types.is_empty() {
        q.push(" AND event_type IN (");
        let mut list = q.separated(", ");
        for t in &filter.event_types {
            list.push_bind(t.clone());
        }
        q.push(")");
    }
    if let Some(prefix) = &filter.stream_prefix {
        q.push(format!(" AND substr(stream_id, 1, {}) = ", prefix.chars().count())).push_bind(prefix.clone());
    }
    if let Some(root) = filter.root_source_id {
        q.push(" AND root_source_id = ").push_bind(root.to_string());
    }
    if let Some(user) = &filter.user_id {
        q.push(" AND user_id = ").push_bind(user.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_shapes_cover_every_row_with_few_statements() {
        for rows in [0, 1, 2, 3, 1_023, 1_024, 1_025, 4_999, 5_000, 12_345] {
            let shapes: Vec<usize> = insert_shapes(rows).collect();
            assert_eq!(shapes.iter().sum::<usize>(), rows, "{rows}");
            assert!(shapes.iter().all(|s| s.is_power_of_two() && *s <= ROWS_PER_INSERT), "{shapes:?}");
            assert!(shapes.windows(2).all(|w| w[0] >= w[1]), "{shapes:?}");
        }
    }

    #[test]
    fn uuid_text_is_the_hyphenated_lower_case_form() {
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_eq!(UuidText::new(id).as_str(), id.to_string());
    }

    /// Every pooled connection, not just the first, maps the file as asked (and none when off).
    #[tokio::test]
    async fn every_connection_maps_as_many_mib_as_asked() {
        for (mib, expected) in [(0_u64, 0_i64), (64, 64 * 1024 * 1024)] {
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
