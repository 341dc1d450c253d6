//! The PostgreSQL store: for many server instances on one log.
//!
//! Ordering: positions come from an identity sequence, which hands out numbers before commit, so
//! two appending transactions could commit out of position order and a tailing reader could skip
//! the lower one. Every appending transaction therefore takes one transaction-level advisory lock
//! ([`APPEND_LOCK`]) before it takes positions. The lock is released only after the commit is
//! visible, so commits happen in position order and a reader that has seen position p never later
//! meets a committed event below p. Group commit keeps the lock's cost to one hold per batch.
//!
//! Fan-out: after a local commit a notifier task sends one coalesced `NOTIFY agentlog_events`
//! outside the append transaction (a NOTIFY inside it would take a global lock at commit);
//! every instance LISTENs and wakes its tailer, which also polls as a fallback.

use std::{collections::HashMap, str::FromStr, sync::Arc};

use agentlog_domain::envelope::RecordedEvent;
use chrono::{DateTime, Utc};
use sqlx::{
    Connection, Executor, PgConnection, PgPool, Postgres, QueryBuilder, Row,
    postgres::{PgConnectOptions, PgListener, PgPoolOptions, PgRow},
    types::Json,
};
use tokio::{
    sync::{Notify, watch},
    task::JoinHandle,
};
use uuid::Uuid;

mod rows;

use rows::{COLUMNS, decode_all, decode_row, unparsed_row};

use crate::{
    append::LocatedEvent,
    backend::{Backend, BatchAnswers},
    batch::{self, StoredEvent},
    error::EventLogError,
    filter::EventFilter,
    import::{ImportResult, PreparedImport, plan_import},
    store::{BackendKind, LogCore, StoreOptions, impl_event_store},
    unparsed::UnparsedEvent,
    validate::PreparedAppend,
};

/// The advisory lock key every appending transaction holds until it commits ("agentlog" ≈ 0x74_61_62).
pub const APPEND_LOCK: i64 = 7_461_626;
/// Starts every appending transaction: see the module doc for why the lock is taken first.
const BEGIN_AND_LOCK: &str = "BEGIN; SELECT pg_advisory_xact_lock(7461626)";

/// The LISTEN/NOTIFY channel.
pub const NOTIFY_CHANNEL: &str = "agentlog_events";

/// A pooled connection idle this long is pinged before it is handed out.
const IDLE_BEFORE_PING: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest a request waits for a pooled connection (or for the database to come back).
const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The PostgreSQL-backed event store.
pub struct PostgresEventStore {
    core: LogCore<PgBackend>,
}

impl_event_store!(PostgresEventStore, BackendKind::Postgres);

impl PostgresEventStore {
    /// Connect (and migrate, unless told not to) to `url` (`postgres://…`).
    pub async fn connect(url: &str, options: StoreOptions) -> Result<Self, EventLogError> {
        let connect =
            PgConnectOptions::from_str(url).map_err(|_| EventLogError::UnsupportedUrl(crate::url::redact(url)))?;
        if options.migrate {
            // On a connection of its own: a migration may take longer than a statement may.
            let mut conn =
                PgConnection::connect_with(&connect).await.map_err(EventLogError::db("connecting to PostgreSQL"))?;
            crate::migrate::migrate_postgres_on(&mut conn).await?;
            let _ = conn.close().await;
        }
        let connect = match options.statement_timeout {
            Some(t) => connect.options([("statement_timeout", format!("{}", t.as_millis().max(1)))]),
            None => connect,
        };
        let pool = PgPoolOptions::new()
            .max_connections(pool_size(&connect, options.read_connections.max(2)).await)
            // No ping on every checkout (a round trip each: stack-notes §3), but one for a
            // connection idle for a while: after a database restart, the idle connections are
            // dead, and each would otherwise fail one request.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for < IDLE_BEFORE_PING {
                        return Ok(true);
                    }
                    Ok(conn.ping().await.is_ok())
                })
            })
            // While the database is down, a checkout keeps trying to connect until this bound:
            // a request then fails (UNAVAILABLE) instead of hanging.
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(connect.clone())
            .await
            .map_err(EventLogError::db("connecting to PostgreSQL"))?;
        warn_if_not_durable(&pool).await;
        let backend = PgBackend { pool, connect, listen: options.listen_notify };
        Ok(Self { core: LogCore::start(backend, &options).await? })
    }

    /// The connection pool (projections keep their read models in the same database).
    pub fn pool(&self) -> &PgPool {
        &self.core.backend.pool
    }

    /// PostgreSQL checkpoints on its own.
    fn checkpoint_stats(&self) -> Option<std::sync::Arc<crate::checkpoints::CheckpointStats>> {
        None
    }

    fn database_pool(&self) -> crate::store::DatabasePool {
        crate::store::DatabasePool::Postgres(self.core.backend.pool.clone())
    }
}

/// SQL for the PostgreSQL log.
pub(crate) struct PgBackend {
    pool: PgPool,
    connect: PgConnectOptions,
    listen: bool,
}

impl PgBackend {
    /// The rows of the events after `after` (up to `up_to`) that pass `filter`, in log order, at
    /// most `limit`.
    async fn forward(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<PgRow>, EventLogError> {
        let mut q = QueryBuilder::<Postgres>::new(format!("SELECT {COLUMNS} FROM events WHERE position > "));
        q.push_bind(after);
        if let Some(up_to) = up_to {
            q.push(" AND position <= ").push_bind(up_to);
        }
        push_filter(&mut q, filter);
        q.push(" ORDER BY position LIMIT ").push_bind(limit.min(i64::MAX as usize) as i64);
        q.build().fetch_all(&self.pool).await.map_err(EventLogError::db("reading the log"))
    }
}

/// The stored events with these ids and the current versions of these streams, in one round trip.
async fn load_state(
    conn: &mut PgConnection,
    ids: &[Uuid],
    streams: Vec<String>,
) -> Result<(HashMap<Uuid, StoredEvent>, HashMap<String, i64>), EventLogError> {
    let mut stored = HashMap::new();
    let mut versions = HashMap::new();
    let rows = sqlx::query(
        // Each stream's last version by one backward step of its (stream_id, stream_version)
        // index: `MAX(…) … GROUP BY` would read every version of the streams, under the lock.
        // The untyped NULLs take the columns' type: `json`, or `jsonb` before migration 0040.
        "SELECT 0, s.id, v.stream_version, NULL::uuid, NULL::int8, NULL::text, NULL::int4, NULL, \
         NULL FROM UNNEST($1::text[]) AS s(id) CROSS JOIN LATERAL (SELECT stream_version FROM events \
         WHERE stream_id = s.id ORDER BY stream_version DESC LIMIT 1) AS v \
         UNION ALL SELECT 1, stream_id, stream_version, event_id, position, event_type, schema_version, payload, \
         metadata FROM events WHERE event_id = ANY($2)",
    )
    .bind(streams)
    .bind(ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(EventLogError::db("reading stream versions and event ids"))?;
    for row in rows {
        let kind: i32 = row.try_get(0).map_err(EventLogError::db("decoding a lookup row"))?;
        let stream_id: String = row.try_get(1).map_err(EventLogError::db("decoding a stream id"))?;
        let version: i64 = row.try_get(2).map_err(EventLogError::db("decoding a stream version"))?;
        if kind == 0 {
            versions.insert(stream_id, version);
            continue;
        }
        stored.insert(
            row.try_get::<Uuid, _>(3).map_err(EventLogError::db("decoding an event id"))?,
            StoredEvent {
                position: row.try_get(4).map_err(EventLogError::db("decoding a position"))?,
                stream_id,
                stream_version: version,
                event_type: row.try_get(5).map_err(EventLogError::db("decoding an event type"))?,
                schema_version: row.try_get(6).map_err(EventLogError::db("decoding a schema version"))?,
                payload: row.try_get::<Json<serde_json::Value>, _>(7).map(|j| j.0).unwrap_or(serde_json::Value::Null),
                metadata: row.try_get::<Json<_>, _>(8).map(|j| j.0).ok(),
            },
        );
    }
    Ok((stored, versions))
}

async fn commit_in_transaction(
    conn: &mut PgConnection,
    batch: &[&PreparedAppend],
    now: DateTime<Utc>,
) -> Result<BatchAnswers, EventLogError> {
    // The lock was taken by the BEGIN statement before this lookup.
    let (stored, versions) = load_state(conn, &batch::event_ids(batch), batch::stream_ids(batch)).await?;
    let plan = batch::plan(batch, &stored, versions);
    let mut located: batch::Located = stored.iter().map(|(id, s)| (*id, (s.position, s.stream_version))).collect();
    if !plan.rows.is_empty() {
        let n = plan.rows.len();
        let (mut event_ids, mut streams, mut versions, mut types, mut schemas) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut payloads, mut metas, mut roots, mut parents, mut users) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for row in &plan.rows {
            let e = &row.event.event;
            event_ids.push(e.event_id);
            streams.push(row.stream_id);
            versions.push(row.stream_version);
            types.push(e.event_type.as_str());
            schemas.push(e.schema_version);
            payloads.push(row.event.payload_json.as_str());
            metas.push(row.event.metadata_json.as_str());
            roots.push(e.metadata.chain.root_source_id);
            parents.push(e.metadata.chain.parent_node_id);
            users.push(e.metadata.user_id.as_str());
        }
        let inserted = sqlx::query(
            "INSERT INTO events (event_id, stream_id, stream_version, event_type, schema_version, payload, \
             metadata, root_source_id, parent_node_id, user_id, recorded_at) \
             SELECT t.event_id, t.stream_id, t.stream_version, t.event_type, t.schema_version, t.payload::json, \
             t.metadata::json, t.root_source_id, t.parent_node_id, t.user_id, $11 \
             FROM UNNEST($1::uuid[], $2::text[], $3::int8[], $4::text[], $5::int4[], $6::text[], $7::text[], \
             $8::uuid[], $9::uuid[], $10::text[]) WITH ORDINALITY \
             AS t(event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, \
             root_source_id, parent_node_id, user_id, ord) \
             ORDER BY t.ord RETURNING event_id, position, stream_id, stream_version",
        )
        .bind(&event_ids)
        .bind(&streams)
        .bind(&versions)
        .bind(&types)
        .bind(&schemas)
        .bind(&payloads)
        .bind(&metas)
        .bind(&roots)
        .bind(&parents)
        .bind(&users)
        .bind(now)
        .fetch_all(&mut *conn)
        .await
        .map_err(EventLogError::db("inserting events"))?;
        // Positions must rise with stream versions; refuse the batch rather than break that.
        let mut last_in_stream: HashMap<String, (i64, i64)> = HashMap::new();
        let mut rows: Vec<(Uuid, i64, String, i64)> = Vec::with_capacity(inserted.len());
        for r in &inserted {
            rows.push((
                r.try_get(0).map_err(EventLogError::db("decoding an inserted id"))?,
                r.try_get(1).map_err(EventLogError::db("decoding an inserted position"))?,
                r.try_get(2).map_err(EventLogError::db("decoding an inserted stream"))?,
                r.try_get(3).map_err(EventLogError::db("decoding an inserted version"))?,
            ));
        }
        rows.sort_by_key(|r| r.1);
        for (id, position, stream, version) in rows {
            if let Some((_, v)) = last_in_stream.get(&stream)
                && *v >= version
            {
                return Err(EventLogError::Corrupt {
                    position,
                    reason: format!("positions out of stream order in `{stream}`; batch refused"),
                });
            }
            last_in_stream.insert(stream, (position, version));
            located.insert(id, (position, version));
        }
    }
    Ok(batch::answers(batch, plan.verdicts, &located))
}

async fn import_in_transaction(
    conn: &mut PgConnection,
    events: &[PreparedImport],
) -> Result<ImportResult, EventLogError> {
    let ids: Vec<Uuid> = events.iter().map(|e| e.recorded.event_id).collect();
    let mut streams: Vec<String> = events.iter().map(|e| e.recorded.stream_id.clone()).collect();
    streams.sort_unstable();
    streams.dedup();
    let (stored, versions) = load_state(conn, &ids, streams).await?;
    let last: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(position), 0)::int8 FROM events")
        .fetch_one(&mut *conn)
        .await
        .map_err(EventLogError::db("reading the log head"))?;
    let plan = plan_import(events, &stored, versions, last)?;
    if plan.rows.is_empty() {
        return Ok(plan.result);
    }
    let n = plan.rows.len();
    let mut cols = ImportColumns::with_capacity(n);
    for row in &plan.rows {
        let r = &row.event.recorded;
        cols.positions.push(row.position);
        cols.event_ids.push(r.event_id);
        cols.streams.push(r.stream_id.as_str());
        cols.versions.push(r.stream_version);
        cols.types.push(r.event_type.as_str());
        cols.schemas.push(r.schema_version);
        cols.payloads.push(row.event.prepared.payload_json.as_str());
        cols.metas.push(row.event.prepared.metadata_json.as_str());
        cols.roots.push(r.metadata.chain.root_source_id);
        cols.parents.push(r.metadata.chain.parent_node_id);
        cols.users.push(r.metadata.user_id.as_str());
        cols.recorded.push(r.recorded_at);
    }
    sqlx::query(
        "INSERT INTO events (position, event_id, stream_id, stream_version, event_type, schema_version, payload, \
         metadata, root_source_id, parent_node_id, user_id, recorded_at) OVERRIDING SYSTEM VALUE \
         SELECT t.position, t.event_id, t.stream_id, t.stream_version, t.event_type, t.schema_version, \
         t.payload::json, t.metadata::json, t.root_source_id, t.parent_node_id, t.user_id, t.recorded_at \
         FROM UNNEST($1::int8[], $2::uuid[], $3::text[], $4::int8[], $5::text[], $6::int4[], $7::text[], \
         $8::text[], $9::uuid[], $10::uuid[], $11::text[], $12::timestamptz[]) \
         AS t(position, event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, \
         root_source_id, parent_node_id, user_id, recorded_at)",
    )
    .bind(&cols.positions)
    .bind(&cols.event_ids)
    .bind(&cols.streams)
    .bind(&cols.versions)
    .bind(&cols.types)
    .bind(&cols.schemas)
    .bind(&cols.payloads)
    .bind(&cols.metas)
    .bind(&cols.roots)
    .bind(&cols.parents)
    .bind(&cols.users)
    .bind(&cols.recorded)
    .execute(&mut *conn)
    .await
    .map_err(EventLogError::db("inserting imported events"))?;
    // Explicit positions do not move the identity sequence: move it past them, or the next
    // append would collide. (nextval may leave a gap of one; positions may have gaps.)
    sqlx::query(
        "SELECT setval(pg_get_serial_sequence('events', 'position'), \
         GREATEST($1, nextval(pg_get_serial_sequence('events', 'position'))))",
    )
    .bind(plan.result.last_position)
    .execute(&mut *conn)
    .await
    .map_err(EventLogError::db("moving the position sequence past imported events"))?;
    Ok(plan.result)
}

/// The columns of an import's rows, one array each for `UNNEST`.
struct ImportColumns<'a> {
    positions: Vec<i64>,
    event_ids: Vec<Uuid>,
    streams: Vec<&'a str>,
    versions: Vec<i64>,
    types: Vec<&'a str>,
    schemas: Vec<i32>,
    payloads: Vec<&'a str>,
    metas: Vec<&'a str>,
    roots: Vec<Uuid>,
    parents: Vec<Option<Uuid>>,
    users: Vec<&'a str>,
    recorded: Vec<DateTime<Utc>>,
}

impl ImportColumns<'_> {
    fn with_capacity(n: usize) -> Self {
        Self {
            positions: Vec::with_capacity(n),
            event_ids: Vec::with_capacity(n),
            streams: Vec::with_capacity(n),
            versions: Vec::with_capacity(n),
            types: Vec::with_capacity(n),
            schemas: Vec::with_capacity(n),
            payloads: Vec::with_capacity(n),
            metas: Vec::with_capacity(n),
            roots: Vec::with_capacity(n),
            parents: Vec::with_capacity(n),
            users: Vec::with_capacity(n),
            recorded: Vec::with_capacity(n),
        }
    }
}

/// agentlog acknowledges an append when PostgreSQL acknowledges its commit. With
/// `synchronous_commit` or `fsync` off, PostgreSQL acknowledges commits that a crash of the
/// server (or the machine) can still lose: say so at start, loudly.
/// Connections a server keeps outside the read pool: the log's writer, its LISTEN, and the API's
/// delta relay LISTEN.
const CONNECTIONS_OUTSIDE_POOL: i64 = 3;

/// The read pool's size: `wanted`, or fewer when PostgreSQL has fewer connections left for
/// this role (`max_connections`, less the reserved slots for a non-superuser, less the client
/// connections open now). A pool larger than what the server allows would not queue requests
/// for a free connection: a checkout that finds none idle opens a new one, which PostgreSQL
/// refuses (53300) until the checkout's timeout, even while other connections come free.
async fn pool_size(connect: &PgConnectOptions, wanted: u32) -> u32 {
    let Ok(mut conn) = PgConnection::connect_with(connect).await else { return wanted };
    let free: Result<i64, _> = sqlx::query_scalar(
        "SELECT current_setting('max_connections')::int8 \
           - CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN 0 \
             ELSE current_setting('superuser_reserved_connections')::int8 \
                + COALESCE(current_setting('reserved_connections', true)::int8, 0) END \
           - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') + 1",
    )
    .fetch_one(&mut conn)
    .await;
    let _ = conn.close().await;
    let Ok(free) = free else { return wanted };
    let fits = u32::try_from((free - CONNECTIONS_OUTSIDE_POOL).max(2)).unwrap_or(2);
    if fits < wanted {
        tracing::warn!(
            free,
            pool = fits,
            wanted,
            "PostgreSQL has few connections left: the read pool is smaller than configured (requests queue for it)"
        );
    }
    fits.min(wanted)
}

async fn warn_if_not_durable(pool: &PgPool) {
    for setting in ["synchronous_commit", "fsync"] {
        let value: Result<String, _> = sqlx::query_scalar(&format!("SHOW {setting}")).fetch_one(pool).await;
        if let Ok(v) = value
            && v == "off"
        {
            tracing::warn!(
                setting,
                "PostgreSQL runs with {setting} = off: appends agentlog acknowledged can be lost if PostgreSQL crashes"
            );
        }
    }
}

impl Backend for PgBackend {
    type Writer = PgConnection;

    async fn open_writer(&self) -> Result<PgConnection, EventLogError> {
        PgConnection::connect_with(&self.connect).await.map_err(EventLogError::db("opening the writer connection"))
    }

    async fn commit_batch(
        &self,
        conn: &mut PgConnection,
        batch: &[Arc<PreparedAppend>],
        now: DateTime<Utc>,
    ) -> Result<BatchAnswers, EventLogError> {
        let batch: Vec<&PreparedAppend> = batch.iter().map(|a| &**a).collect();
        let batch = batch.as_slice();
        // BEGIN and the append lock in one round trip (a simple-query batch).
        // A query without arguments goes over the simple protocol, which allows two statements.
        conn.execute(BEGIN_AND_LOCK).await.map_err(EventLogError::db("starting an append transaction"))?;
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

    async fn import_batch(&self, events: Vec<PreparedImport>) -> Result<ImportResult, EventLogError> {
        let events = events.as_slice();
        let mut conn = self.pool.acquire().await.map_err(EventLogError::db("opening an import connection"))?;
        // The append lock orders the import with every appender, exactly as an append.
        conn.execute(BEGIN_AND_LOCK).await.map_err(EventLogError::db("starting an import transaction"))?;
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
        decode_all(&self.forward(after, up_to, filter, limit).await?, decode_row)
    }

    async fn read_all_unparsed(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<UnparsedEvent>, EventLogError> {
        decode_all(&self.forward(after, up_to, filter, limit).await?, unparsed_row)
    }

    async fn read_all_back(
        &self,
        after: i64,
        before: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let mut q = QueryBuilder::<Postgres>::new(format!("SELECT {COLUMNS} FROM events WHERE position > "));
        q.push_bind(after).push(" AND position < ").push_bind(before);
        push_filter(&mut q, filter);
        q.push(" ORDER BY position DESC LIMIT ").push_bind(limit.min(i64::MAX as usize) as i64);
        let rows = q.build().fetch_all(&self.pool).await.map_err(EventLogError::db("reading the log"))?;
        decode_all(&rows, decode_row)
    }

    async fn read_stream(
        &self,
        stream_id: &str,
        from_version: i64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM events WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version LIMIT $3"
        ))
        .bind(stream_id)
        .bind(from_version)
        .bind(limit.min(i64::MAX as usize) as i64)
        .fetch_all(&self.pool)
        .await
        .map_err(EventLogError::db("reading a stream"))?;
        decode_all(&rows, decode_row)
    }

    async fn stream_version(&self, stream_id: &str) -> Result<i64, EventLogError> {
        sqlx::query_scalar("SELECT COALESCE(MAX(stream_version), 0)::int8 FROM events WHERE stream_id = $1")
            .bind(stream_id)
            .fetch_one(&self.pool)
            .await
            .map_err(EventLogError::db("reading a stream version"))
    }

    async fn head(&self) -> Result<i64, EventLogError> {
        sqlx::query_scalar("SELECT COALESCE(MAX(position), 0)::int8 FROM events")
            .fetch_one(&self.pool)
            .await
            .map_err(EventLogError::db("reading the log head"))
    }

    async fn locate(&self, ids: &[uuid::Uuid]) -> Result<Vec<LocatedEvent>, EventLogError> {
        let rows: Vec<(i64, String, i64)> =
            sqlx::query_as("SELECT position, stream_id, stream_version FROM events WHERE event_id = ANY($1)")
                .bind(ids)
                .fetch_all(&self.pool)
                .await
                .map_err(EventLogError::db("looking up a command's earlier events"))?;
        Ok(rows
            .into_iter()
            .map(|(position, stream_id, stream_version)| LocatedEvent { position, stream_id, stream_version })
            .collect())
    }

    fn spawn_fan_out(self: &Arc<Self>, committed: watch::Receiver<i64>, wake: Arc<Notify>) -> Vec<JoinHandle<()>> {
        let mut tasks = vec![tokio::spawn(run_analyzer(self.pool.clone(), committed.clone()))];
        if self.listen {
            tasks.push(tokio::spawn(run_notifier(self.pool.clone(), committed)));
            tasks.push(tokio::spawn(run_listener(self.pool.clone(), wake)));
        }
        tasks
    }
}

/// The head at which the log's analyzer task first refreshes the log's statistics.
pub const FIRST_ANALYZE_AT: i64 = 1_000;

/// Refresh `events`' planner statistics (`ANALYZE events`) when this instance's commits take
/// the head past 1,000 events, and again each time it has doubled since.
///
/// PostgreSQL plans a prepared statement once for all after its first executions (a generic
/// plan): on a new database that happens while `events` is nearly empty, and the plan for a
/// lookup by event id or by stream is then a scan of the whole table — one per mutation, its
/// cost growing with the log — until autovacuum's next `ANALYZE` (a minute or more) invalidates
/// it. Refreshed statistics invalidate every connection's cached plans, which are then made
/// again for the table's size, with its unique indexes. Doubling keeps the cost to a few
/// `ANALYZE`s over a log's life; autovacuum takes over on a large one.
async fn run_analyzer(pool: PgPool, mut committed: watch::Receiver<i64>) {
    let mut next = FIRST_ANALYZE_AT;
    while committed.changed().await.is_ok() {
        let head = *committed.borrow_and_update();
        if head < next {
            continue;
        }
        next = head.saturating_mul(2);
        if let Err(e) = sqlx::query("ANALYZE events").execute(&pool).await {
            tracing::debug!(error = %e, "ANALYZE events failed; autovacuum will refresh the statistics");
        }
    }
}

/// Tell other instances about local commits: one NOTIFY per change of the head, coalesced.
async fn run_notifier(pool: PgPool, mut committed: watch::Receiver<i64>) {
    while committed.changed().await.is_ok() {
        let head = *committed.borrow_and_update();
        if let Err(e) =
            sqlx::query("SELECT pg_notify($1, $2)").bind(NOTIFY_CHANNEL).bind(head.to_string()).execute(&pool).await
        {
            tracing::debug!(error = %e, "NOTIFY failed; other instances will find the events by polling");
        }
    }
}

/// Wake the tailer whenever another instance announces appends.
async fn run_listener(pool: PgPool, wake: Arc<Notify>) {
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!(error = %e, "LISTEN connection failed; polling meanwhile");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(NOTIFY_CHANNEL).await {
            tracing::debug!(error = %e, "LISTEN failed; polling meanwhile");
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            continue;
        }
        // A (re)connect may have missed notifications: look once.
        wake.notify_one();
        loop {
            match listener.try_recv().await {
                Ok(Some(_)) => wake.notify_one(),
                Ok(None) => {
                    // The connection dropped; sqlx reconnects on the next call. Look once.
                    wake.notify_one();
                }
                Err(e) => {
                    tracing::debug!(error = %e, "LISTEN connection lost; reconnecting");
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                    break;
                }
            }
        }
    }
}

/// The `AND …` conditions of a log filter.
fn push_filter(q: &mut QueryBuilder<'_, Postgres>, filter: &EventFilter) {
    if !filter.event_types.is_empty() {
        q.push(" AND event_type = ANY(").push_bind(filter.event_types.clone()).push(")");
    }
    if let Some(prefix) = &filter.stream_prefix {
        q.push(" AND starts_with(stream_id, ").push_bind(prefix.clone()).push(")");
    }
    if let Some(root) = filter.root_source_id {
        q.push(" AND root_source_id = ").push_bind(root);
    }
    if let Some(user) = &filter.user_id {
        q.push(" AND user_id = ").push_bind(user.clone());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_begin_statement_takes_the_append_lock() {
        assert!(super::BEGIN_AND_LOCK.contains(&super::APPEND_LOCK.to_string()));
    }
}
