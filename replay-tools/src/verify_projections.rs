//! The read-model half of `verify`: every projection equals a fresh rebuild, table by table.
//!
//! Nothing live is written. For each projection we read its checkpoint (the position its tables
//! reflect), rebuild it from position 0 up to exactly that position into a scratch database,
//! and compare the tables' order-independent checksums; for a table that differs, its rows are
//! compared by primary key and each differing key is reported.
//!
//! The scratch database is of the same backend as the log, because checksums are only
//! comparable within one backend: a temporary SQLite file next to the system's temp files, or a
//! temporary schema (`agentlog_verify_<uuid>`) in the same PostgreSQL database (needs the
//! CREATE privilege on it). Either is removed at the end, also when the comparison fails. A
//! server running meanwhile may move the live checkpoints; that is detected and noted.

use std::{
    collections::{BTreeMap, BTreeSet},
    str::FromStr,
    sync::Arc,
};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{
    AppendResult, BackendKind, DatabasePool, EventFilter, EventLogError, EventStore, EventSubscription, ImportResult,
    StreamAppend,
};
use agentlog_projections::{
    Projection, ProjectionRunner, ReadDb, RunnerOptions, SqlValue, SqliteDb, all_projections, checksum::table_checksums,
};
use anyhow::Context;
use async_trait::async_trait;
use serde::Serialize;
use uuid::Uuid;

use crate::{
    output,
    problem::{Check, Problem},
};

/// Most differing rows reported per table (the count of all is reported too).
const MAX_ROWS_REPORTED: usize = 20;

/// A read model that was compared.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compared {
    /// The projection.
    pub projection: String,
    /// The position its live tables reflect, and the rebuild was taken to.
    pub position: i64,
}

/// What the comparison found.
#[derive(Debug, Default)]
pub struct Found {
    /// The projections compared.
    pub compared: Vec<Compared>,
    /// Differences.
    pub problems: Vec<Problem>,
    /// Remarks (a projection never run, a server moving checkpoints…).
    pub notes: Vec<String>,
}

fn read_model_problem(table: String, detail: String) -> Problem {
    Problem { check: Check::ReadModel, stream_id: None, position: None, table: Some(table), detail }
}

/// The live checkpoints: projection → (version, position).
async fn checkpoints(db: &ReadDb) -> anyhow::Result<BTreeMap<String, (i64, i64)>> {
    let rows = db
        .fetch("SELECT name, version, position FROM projection_checkpoints", &[])
        .await
        .context("reading the projection checkpoints")?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.str(0)?.to_string(), (r.i64(1).unwrap_or(0), r.i64(2).unwrap_or(0)))))
        .collect())
}

/// Compare every projection with a rebuild (see the module doc).
pub async fn compare(store: &Arc<dyn EventStore>, database: &str, json: bool) -> anyhow::Result<Found> {
    let live = ReadDb::from(store.database());
    let before = checkpoints(&live).await?;
    let mut found = Found::default();
    // Projections whose tables reflect the same position are rebuilt together (usually all).
    let mut groups: BTreeMap<i64, Vec<Arc<dyn Projection>>> = BTreeMap::new();
    for p in all_projections() {
        match before.get(p.name()) {
            Some((version, _)) if *version != i64::from(p.version()) => found.notes.push(format!(
                "read model {} is at version {version} but this build has version {}: the server rebuilds it at start; not compared",
                p.name(),
                p.version()
            )),
            Some((_, position)) => groups.entry(*position).or_default().push(p),
            None => {
                found.notes.push(format!("read model {} has never run (no checkpoint): its tables must be empty", p.name()));
                groups.entry(0).or_default().push(p);
            }
        }
    }
    let scratch = Scratch::create(&live, database).await?;
    let result = compare_groups(store, &live, &scratch.db, groups, json, &mut found).await;
    scratch.remove(&live).await;
    result?;
    let after = checkpoints(&live).await?;
    if after != before {
        found.notes.push(
            "live read models advanced while verify ran (is a server running?): differences may come from events applied meanwhile"
                .into(),
        );
    }
    Ok(found)
}

/// The scratch rebuild's SQLite page cache, MiB: the scratch file's own default (2 MiB) read
/// back most pages each batch wrote (a quarter of verify's time in system calls).
const SCRATCH_CACHE_MIB: u32 = 0;

async fn compare_groups(
    store: &Arc<dyn EventStore>,
    live: &ReadDb,
    scratch: &ReadDb,
    groups: BTreeMap<i64, Vec<Arc<dyn Projection>>>,
    json: bool,
    found: &mut Found,
) -> anyhow::Result<()> {
    for (position, projections) in groups {
        let prefix: Arc<dyn EventStore> = Arc::new(LogPrefix { inner: Arc::clone(store), up_to: position });
        // A bulk load into the scratch tables, in batches of 5,000: three batches of decoded
        // events are in memory at once, and verify's memory must not grow with the log (nor
        // take a bulk load's page cache: SCRATCH_CACHE_MIB on SQLite).
        let options = RunnerOptions { batch_size: 5_000, sqlite_cache_mib: SCRATCH_CACHE_MIB, ..RunnerOptions::bulk() };
        let runner = ProjectionRunner::new(prefix, scratch.clone(), projections.clone(), options);
        let bar = output::progress(u64::try_from(position).unwrap_or(0), "rebuild", json);
        let mut progress = runner.watch_position();
        let watcher_bar = bar.clone();
        let watcher = tokio::spawn(async move {
            while progress.changed().await.is_ok() {
                let p = *progress.borrow_and_update();
                if p != i64::MAX {
                    watcher_bar.set_position(u64::try_from(p).unwrap_or(0));
                }
            }
        });
        let caught_up = runner.rebuild_bulk(None).await;
        watcher.abort();
        bar.finish_and_clear();
        if let Err(e) = caught_up {
            for p in &projections {
                found.problems.push(read_model_problem(p.name().to_string(), format!("cannot be rebuilt: {e}")));
            }
            continue;
        }
        for status in runner.status() {
            if let Some(reason) = status.failed {
                found.problems.push(read_model_problem(status.name.to_string(), format!("rebuild failed: {reason}")));
            }
        }
        for p in &projections {
            found.compared.push(Compared { projection: p.name().to_string(), position });
            let tables: Vec<&str> = p.tables().to_vec();
            let want = table_checksums(scratch, &tables).await.context("checksumming the rebuilt tables")?;
            let got = table_checksums(live, &tables).await.context("checksumming the live tables")?;
            for table in &tables {
                if want.get(*table) != got.get(*table) {
                    let name = format!("{}.{table}", p.name());
                    for detail in diff_rows(live, scratch, table).await? {
                        found.problems.push(read_model_problem(name.clone(), detail));
                    }
                }
            }
        }
    }
    Ok(())
}

/// A table's columns, sorted, and its primary-key columns.
async fn columns(db: &ReadDb, table: &str) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (all, key) = if db.is_postgres() {
        (
            db.fetch(
                "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = current_schema() \
                 AND table_name = $1",
                &[table.into()],
            )
            .await?,
            db.fetch(
                "SELECT a.attname::TEXT FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid \
                 AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass($1) AND i.indisprimary",
                &[table.into()],
            )
            .await?,
        )
    } else {
        (
            db.fetch("SELECT name FROM pragma_table_info($1)", &[table.into()]).await?,
            db.fetch("SELECT name FROM pragma_table_info($1) WHERE pk > 0", &[table.into()]).await?,
        )
    };
    let names = |rows: Vec<agentlog_projections::Row>| {
        let mut v: Vec<String> = rows.iter().filter_map(|r| r.str(0).map(str::to_string)).collect();
        v.sort();
        v
    };
    Ok((names(all), names(key)))
}

fn show(v: &SqlValue) -> String {
    match v {
        SqlValue::Null => "NULL".into(),
        SqlValue::Int(i) => i.to_string(),
        SqlValue::Float(f) => f.to_string(),
        SqlValue::Text(t) => format!("{:?}", output::cut(t, 40)),
    }
}

/// Rows of `table` keyed by their primary key (the whole row when there is none).
async fn keyed_rows(
    db: &ReadDb,
    table: &str,
    cols: &[String],
    key: &[usize],
) -> anyhow::Result<BTreeMap<String, Vec<Vec<SqlValue>>>> {
    let rows = db.fetch(&format!("SELECT {} FROM {table}", cols.join(", ")), &[]).await?;
    let mut out: BTreeMap<String, Vec<Vec<SqlValue>>> = BTreeMap::new();
    for row in rows {
        let k = if key.is_empty() {
            row.0.iter().map(show).collect::<Vec<_>>().join(", ")
        } else {
            key.iter().map(|&i| format!("{}={}", cols[i], show(&row.0[i]))).collect::<Vec<_>>().join(", ")
        };
        out.entry(k).or_default().push(row.0);
    }
    Ok(out)
}

/// Describe each row of `table` that differs between the live and the rebuilt read model.
async fn diff_rows(live: &ReadDb, rebuilt: &ReadDb, table: &str) -> anyhow::Result<Vec<String>> {
    let (cols, key_cols) = columns(rebuilt, table).await.with_context(|| format!("reading the columns of {table}"))?;
    let key: Vec<usize> = key_cols.iter().filter_map(|k| cols.iter().position(|c| c == k)).collect();
    let mine = keyed_rows(live, table, &cols, &key).await.with_context(|| format!("reading live {table}"))?;
    let theirs = keyed_rows(rebuilt, table, &cols, &key).await.with_context(|| format!("reading rebuilt {table}"))?;
    let keys: BTreeSet<&String> = mine.keys().chain(theirs.keys()).collect();
    let mut out = Vec::new();
    let mut total = 0usize;
    for k in keys {
        let detail = match (mine.get(k), theirs.get(k)) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) if a.len() == 1 && b.len() == 1 => {
                let changed: Vec<String> = cols
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| a[0][*i] != b[0][*i])
                    .map(|(i, c)| format!("{c}: {} (rebuild: {})", show(&a[0][i]), show(&b[0][i])))
                    .collect();
                format!("row {k} differs: {}", changed.join("; "))
            }
            (Some(a), Some(b)) => format!("row {k}: {} live row(s), {} in a rebuild", a.len(), b.len()),
            (Some(_), None) => format!("row {k} is in the read model but not in a rebuild"),
            (None, Some(_)) => format!("row {k} is missing from the read model"),
            (None, None) => continue,
        };
        total += 1;
        if out.len() < MAX_ROWS_REPORTED {
            out.push(detail);
        }
    }
    if total > out.len() {
        out.push(format!("… and {} more differing row(s)", total - out.len()));
    }
    if total == 0 {
        out.push("checksums differ but no row does (a column type or encoding changed?)".into());
    }
    Ok(out)
}

/// The scratch read-model database (see the module doc).
struct Scratch {
    db: ReadDb,
    /// The SQLite file, or the PostgreSQL schema.
    place: Place,
}

enum Place {
    File(std::path::PathBuf),
    Schema(String),
}

impl Scratch {
    async fn create(live: &ReadDb, database: &str) -> anyhow::Result<Self> {
        let id = Uuid::now_v7().simple();
        match live {
            ReadDb::Sqlite(_) => {
                let path = std::env::temp_dir().join(format!("agentlog-verify-{id}.db"));
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&path)
                    .create_if_missing(true)
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sqlx::sqlite::SqliteSynchronous::Off);
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(4)
                    .connect_with(options)
                    .await
                    .with_context(|| format!("creating the scratch database {}", path.display()))?;
                let scratch = Self { db: ReadDb::Sqlite(SqliteDb::new(pool.clone())), place: Place::File(path) };
                if let Err(e) = agentlog_eventlog::migrate::migrate_sqlite(&pool).await {
                    scratch.remove(live).await;
                    return Err(anyhow::Error::new(e).context("migrating the scratch database"));
                }
                Ok(scratch)
            }
            ReadDb::Postgres(_) => {
                let schema = format!("agentlog_verify_{id}");
                live.execute(&format!("CREATE SCHEMA {schema}"), &[]).await.with_context(|| {
                    format!("creating the scratch schema {schema} (verify needs CREATE on the database)")
                })?;
                let options = sqlx::postgres::PgConnectOptions::from_str(database)
                    .context("parsing the database URL")?
                    .options([("search_path", schema.as_str())]);
                let pool = match sqlx::postgres::PgPoolOptions::new().max_connections(4).connect_with(options).await {
                    Ok(pool) => pool,
                    Err(e) => {
                        let _ = live.execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"), &[]).await;
                        return Err(anyhow::Error::new(e).context("connecting to the scratch schema"));
                    }
                };
                let scratch = Self { db: ReadDb::Postgres(pool.clone()), place: Place::Schema(schema) };
                if let Err(e) = agentlog_eventlog::migrate::migrate_postgres(&pool).await {
                    scratch.remove(live).await;
                    return Err(anyhow::Error::new(e).context("migrating the scratch schema"));
                }
                Ok(scratch)
            }
            ReadDb::Snapshot(_) => anyhow::bail!("verify compares the live read models, not a snapshot of them"),
        }
    }

    /// Close and delete the scratch database (best effort: a leftover is only clutter).
    async fn remove(self, live: &ReadDb) {
        match &self.db {
            ReadDb::Sqlite(db) => db.pool().close().await,
            ReadDb::Postgres(p) => p.close().await,
            ReadDb::Snapshot(_) => {}
        }
        match self.place {
            Place::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Place::Schema(schema) => {
                if let Err(e) = live.execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"), &[]).await {
                    eprintln!("warning: could not drop the scratch schema {schema}: {e}");
                }
            }
        }
    }
}

/// The log as it was at position `up_to`: what a rebuild "up to the live checkpoint" reads.
/// Read-only; the runner's catch-up only reads the log and its head.
struct LogPrefix {
    inner: Arc<dyn EventStore>,
    up_to: i64,
}

fn read_only() -> EventLogError {
    EventLogError::Unavailable { reason: "verify reads a prefix of the log and never writes it".into() }
}

#[async_trait]
impl EventStore for LogPrefix {
    async fn append_multi(&self, _appends: Vec<StreamAppend>) -> Result<Vec<AppendResult>, EventLogError> {
        Err(read_only())
    }
    async fn import(&self, _events: Vec<RecordedEvent>) -> Result<ImportResult, EventLogError> {
        Err(read_only())
    }
    async fn read_stream(&self, stream_id: &str, from: i64, limit: usize) -> Result<Vec<RecordedEvent>, EventLogError> {
        let mut events = self.inner.read_stream(stream_id, from, limit).await?;
        events.retain(|e| e.position <= self.up_to);
        Ok(events)
    }
    async fn read_all(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        if after >= self.up_to {
            return Ok(Vec::new());
        }
        let mut events = self.inner.read_all(after, filter, limit).await?;
        events.retain(|e| e.position <= self.up_to);
        Ok(events)
    }
    async fn read_all_unparsed(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<agentlog_eventlog::UnparsedEvent>, EventLogError> {
        if after >= self.up_to {
            return Ok(Vec::new());
        }
        let mut events = self.inner.read_all_unparsed(after, filter, limit).await?;
        events.retain(|e| e.event.position <= self.up_to);
        Ok(events)
    }
    async fn read_all_back(
        &self,
        after: i64,
        before: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError> {
        self.inner.read_all_back(after, before.min(self.up_to.saturating_add(1)), filter, limit).await
    }
    async fn stream_version(&self, stream_id: &str) -> Result<i64, EventLogError> {
        Ok(self.read_stream(stream_id, 1, usize::MAX >> 1).await?.last().map_or(0, |e| e.stream_version))
    }
    async fn head_position(&self) -> Result<i64, EventLogError> {
        Ok(self.inner.head_position().await?.min(self.up_to))
    }
    async fn locate(&self, ids: &[uuid::Uuid]) -> Result<Vec<agentlog_eventlog::LocatedEvent>, EventLogError> {
        let mut located = self.inner.locate(ids).await?;
        located.retain(|e| e.position <= self.up_to);
        Ok(located)
    }
    fn subscribe(&self, after: i64, filter: EventFilter) -> EventSubscription {
        // Only a following runner subscribes; verify's runner catches up and stops.
        self.inner.subscribe(after, filter)
    }
    fn watch_head(&self) -> tokio::sync::watch::Receiver<i64> {
        self.inner.watch_head()
    }
    fn backend_kind(&self) -> BackendKind {
        self.inner.backend_kind()
    }
    fn database(&self) -> DatabasePool {
        self.inner.database()
    }
    fn wal_checkpoints(&self) -> Option<Arc<agentlog_eventlog::CheckpointStats>> {
        self.inner.wal_checkpoints()
    }
    async fn close(&self) {}
}
