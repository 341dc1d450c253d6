//! Event-log benchmark: every figure beside a raw sqlx baseline doing the same work on the same
//! table, in the same run, so each figure is also a ratio.
//!
//! ```text
//! cargo bench -p agentlog-eventlog --bench eventlog            # SQLite, plus PostgreSQL when
//! AGENTLOG_BENCH_PG_URL=postgres://… cargo bench …            # a server URL is given (falls back
//!                                                               # to AGENTLOG_TEST_PG_URL)
//! ```
//! Sizes scale with `AGENTLOG_BENCH_SCALE` (default 1.0).

mod support;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
use agentlog_eventlog::{
    EventFilter, EventStore, ExpectedVersion, PostgresEventStore, SqliteEventStore, StoreOptions,
    testing::{TempPostgres, TempSqlite},
};
use futures_util::StreamExt;
use serde_json::json;
use sqlx::{Connection, Executor, PgConnection, QueryBuilder, Row, Sqlite, SqliteConnection};
use uuid::Uuid;

use support::open;

fn scale(n: usize) -> usize {
    let s: f64 = std::env::var("AGENTLOG_BENCH_SCALE").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0);
    ((n as f64) * s).max(10.0) as usize
}

fn event(i: usize) -> NewEvent {
    let id = Uuid::now_v7();
    let payload = json!({
        "operationId": format!("op-{i}"), "agentId": "agent-7", "phase": "acting", "step": i,
        "toolCalls": [{"name": "search", "ok": true}], "usage": {"inputTokens": 1200, "outputTokens": 310},
        "note": "x".repeat(40)
    });
    NewEvent::new(
        id,
        "operation.step_reported",
        payload,
        EventMetadata::source(id, Actor::worker("w-1"), "user-1", "user:user-1"),
    )
}

fn stream_of(i: usize) -> String {
    format!("operation-{}", i / 10)
}

struct Row_ {
    name: String,
    backend: &'static str,
    lib: f64,
    raw: f64,
    unit: &'static str,
}

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

// ---------------------------------------------------------------- raw baselines

enum Raw {
    Sqlite(TempSqlite),
    Postgres(TempPostgres),
}

impl Raw {
    async fn fresh(pg_url: Option<&str>) -> Self {
        match pg_url {
            None => {
                let f = TempSqlite::new();
                let s = SqliteEventStore::open(&f.url(), StoreOptions::default()).await.unwrap();
                s.close().await;
                Raw::Sqlite(f)
            }
            Some(url) => {
                let db = TempPostgres::create(url).await.unwrap();
                let s = PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap();
                s.close().await;
                Raw::Postgres(db)
            }
        }
    }
}

struct Prepared {
    id: Uuid,
    stream: String,
    version: i64,
    ty: String,
    payload: String,
    metadata: String,
    root: Uuid,
}

fn prepared(from: usize, n: usize) -> Vec<Prepared> {
    let events: Vec<NewEvent> = (from..from + n).map(event).collect();
    serialize(&events, from)
}

/// Serialize events for a raw insert: the baseline pays for this inside its timing, as the
/// library does.
fn serialize(events: &[NewEvent], from: usize) -> Vec<Prepared> {
    events
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let i = from + k;
            let e = e.clone();
            Prepared {
                id: e.event_id,
                stream: stream_of(i),
                version: (i % 10) as i64 + 1,
                ty: e.event_type,
                payload: e.payload.to_string(),
                metadata: serde_json::to_string(&e.metadata).unwrap(),
                root: e.metadata.chain.root_source_id,
            }
        })
        .collect()
}

async fn raw_sqlite_insert(conn: &mut SqliteConnection, rows: &[Prepared], first_position: i64) {
    let mut q = QueryBuilder::<Sqlite>::new(
        "INSERT INTO events (position, event_id, stream_id, stream_version, event_type, schema_version, payload, \
         metadata, root_source_id, parent_node_id, user_id, recorded_at) ",
    );
    let mut pos = first_position;
    q.push_values(rows, |mut b, r| {
        b.push_bind(pos)
            .push_bind(r.id.to_string())
            .push_bind(&r.stream)
            .push_bind(r.version)
            .push_bind(&r.ty)
            .push_bind(1)
            .push_bind(&r.payload)
            .push_bind(&r.metadata)
            .push_bind(r.root.to_string())
            .push_bind(None::<String>)
            .push_bind("user-1")
            .push_bind(0i64);
        pos += 1;
    });
    q.build().execute(&mut *conn).await.unwrap();
}

async fn raw_pg_insert(conn: &mut PgConnection, rows: &[Prepared]) {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let streams: Vec<&str> = rows.iter().map(|r| r.stream.as_str()).collect();
    let versions: Vec<i64> = rows.iter().map(|r| r.version).collect();
    let types: Vec<&str> = rows.iter().map(|r| r.ty.as_str()).collect();
    let payloads: Vec<&str> = rows.iter().map(|r| r.payload.as_str()).collect();
    let metas: Vec<&str> = rows.iter().map(|r| r.metadata.as_str()).collect();
    let roots: Vec<Uuid> = rows.iter().map(|r| r.root).collect();
    sqlx::query(
        "INSERT INTO events (event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, \
         root_source_id, parent_node_id, user_id, recorded_at) \
         SELECT t.a, t.b, t.c, t.d, 1, t.e::json, t.f::json, t.g, NULL, 'user-1', now() \
         FROM UNNEST($1::uuid[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::uuid[]) AS t(a, b, c, d, e, f, g)",
    )
    .bind(ids)
    .bind(streams)
    .bind(versions)
    .bind(types)
    .bind(payloads)
    .bind(metas)
    .bind(roots)
    .execute(&mut *conn)
    .await
    .unwrap();
}

/// Raw: `n` events, `per_txn` per transaction, one writer on a held connection.
async fn raw_append(raw: &Raw, n: usize, per_txn: usize) -> Duration {
    let events: Vec<NewEvent> = (0..n).map(event).collect();
    match raw {
        Raw::Sqlite(f) => {
            let mut c = SqliteConnection::connect(&format!("{}?mode=rwc", f.url())).await.unwrap();
            c.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL").await.unwrap();
            let t = Instant::now();
            let rows = serialize(&events, 0);
            for (k, chunk) in rows.chunks(per_txn).enumerate() {
                c.execute("BEGIN IMMEDIATE").await.unwrap();
                raw_sqlite_insert(&mut c, chunk, (k * per_txn) as i64 + 1).await;
                c.execute("COMMIT").await.unwrap();
            }
            t.elapsed()
        }
        Raw::Postgres(db) => {
            let mut c = PgConnection::connect(&db.url).await.unwrap();
            let t = Instant::now();
            let rows = serialize(&events, 0);
            for chunk in rows.chunks(per_txn) {
                c.execute("BEGIN").await.unwrap();
                raw_pg_insert(&mut c, chunk).await;
                c.execute("COMMIT").await.unwrap();
            }
            t.elapsed()
        }
    }
}

/// Raw: 8 writers, each its own connection, one event per transaction.
async fn raw_concurrent(raw: &Raw, writers: usize, per_writer: usize) -> Duration {
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let rows = prepared(w * per_writer, per_writer);
        match raw {
            Raw::Sqlite(f) => {
                let url = f.url();
                tasks.push(tokio::spawn(async move {
                    let mut c = SqliteConnection::connect(&url).await.unwrap();
                    c.execute("PRAGMA synchronous=FULL; PRAGMA busy_timeout=30000").await.unwrap();
                    for r in &rows {
                        c.execute("BEGIN IMMEDIATE").await.unwrap();
                        let next: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(position), 0) + 1 FROM events")
                            .fetch_one(&mut c)
                            .await
                            .unwrap();
                        raw_sqlite_insert(&mut c, std::slice::from_ref(r), next).await;
                        c.execute("COMMIT").await.unwrap();
                    }
                }));
            }
            Raw::Postgres(db) => {
                let url = db.url.clone();
                tasks.push(tokio::spawn(async move {
                    let mut c = PgConnection::connect(&url).await.unwrap();
                    for r in &rows {
                        c.execute("BEGIN").await.unwrap();
                        raw_pg_insert(&mut c, std::slice::from_ref(r)).await;
                        c.execute("COMMIT").await.unwrap();
                    }
                }));
            }
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    t.elapsed()
}

/// Raw: read the whole table in keyset pages of 1,000 and decode payload and metadata.
async fn raw_read_all(raw: &Raw) -> (usize, Duration) {
    let t = Instant::now();
    let mut n = 0;
    let mut after = 0i64;
    match raw {
        Raw::Sqlite(f) => {
            let mut c = SqliteConnection::connect(&f.url()).await.unwrap();
            loop {
                let rows = sqlx::query("SELECT position, event_id, stream_id, stream_version, event_type, payload, metadata, recorded_at FROM events WHERE position > ? ORDER BY position LIMIT 1000")
                    .bind(after).fetch_all(&mut c).await.unwrap();
                if rows.is_empty() {
                    break;
                }
                for r in &rows {
                    after = r.get(0);
                    let _id = Uuid::parse_str(r.get::<&str, _>(1)).unwrap();
                    let _p: serde_json::Value = serde_json::from_str(r.get::<&str, _>(5)).unwrap();
                    let _m: EventMetadata = serde_json::from_str(r.get::<&str, _>(6)).unwrap();
                    n += 1;
                }
            }
        }
        Raw::Postgres(db) => {
            let mut c = PgConnection::connect(&db.url).await.unwrap();
            loop {
                let rows = sqlx::query("SELECT position, event_id, stream_id, stream_version, event_type, payload, metadata, recorded_at FROM events WHERE position > $1 ORDER BY position LIMIT 1000")
                    .bind(after).fetch_all(&mut c).await.unwrap();
                if rows.is_empty() {
                    break;
                }
                for r in &rows {
                    after = r.get(0);
                    let _id: Uuid = r.get(1);
                    let _p: sqlx::types::Json<serde_json::Value> = r.get(5);
                    let _m: sqlx::types::Json<EventMetadata> = r.get(6);
                    n += 1;
                }
            }
        }
    }
    (n, t.elapsed())
}

/// Raw: a writer commits one event at a time; a reader polls every millisecond.
async fn raw_latency(raw: &Raw, n: usize) -> Vec<Duration> {
    let sent: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let rows = prepared(0, n);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Vec<Duration>>();
    match raw {
        Raw::Sqlite(f) => {
            let url = f.url();
            let sent_r = Arc::clone(&sent);
            tokio::spawn(async move {
                let mut c = SqliteConnection::connect(&url).await.unwrap();
                let (mut after, mut lat) = (0i64, Vec::new());
                while lat.len() < n {
                    let ps: Vec<i64> = sqlx::query_scalar(
                        "SELECT position FROM events WHERE position > ? ORDER BY position LIMIT 1000",
                    )
                    .bind(after)
                    .fetch_all(&mut c)
                    .await
                    .unwrap();
                    let now = Instant::now();
                    for p in ps {
                        after = p;
                        if let Some(t) = sent_r.lock().unwrap().get(&p) {
                            lat.push(now - *t);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let _ = done_tx.send(lat);
            });
            let mut c = SqliteConnection::connect(&f.url()).await.unwrap();
            c.execute("PRAGMA synchronous=FULL").await.unwrap();
            for (i, r) in rows.iter().enumerate() {
                let pos = i as i64 + 1;
                sent.lock().unwrap().insert(pos, Instant::now());
                c.execute("BEGIN IMMEDIATE").await.unwrap();
                raw_sqlite_insert(&mut c, std::slice::from_ref(r), pos).await;
                c.execute("COMMIT").await.unwrap();
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        Raw::Postgres(db) => {
            let url = db.url.clone();
            let sent_r = Arc::clone(&sent);
            tokio::spawn(async move {
                let mut c = PgConnection::connect(&url).await.unwrap();
                let (mut after, mut lat) = (0i64, Vec::new());
                while lat.len() < n {
                    let ps: Vec<i64> = sqlx::query_scalar(
                        "SELECT position FROM events WHERE position > $1 ORDER BY position LIMIT 1000",
                    )
                    .bind(after)
                    .fetch_all(&mut c)
                    .await
                    .unwrap();
                    let now = Instant::now();
                    for p in ps {
                        after = p;
                        if let Some(t) = sent_r.lock().unwrap().get(&p) {
                            lat.push(now - *t);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let _ = done_tx.send(lat);
            });
            let mut c = PgConnection::connect(&db.url).await.unwrap();
            for (i, r) in rows.iter().enumerate() {
                // identity positions start at 1 in a fresh table and this is the only writer
                sent.lock().unwrap().insert(i as i64 + 1, Instant::now());
                c.execute("BEGIN").await.unwrap();
                raw_pg_insert(&mut c, std::slice::from_ref(r)).await;
                c.execute("COMMIT").await.unwrap();
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    }
    done_rx.await.unwrap()
}

// ---------------------------------------------------------------- the library

async fn lib_append(store: &Arc<dyn EventStore>, n: usize, per_append: usize) -> Duration {
    let events: Vec<NewEvent> = (0..n).map(event).collect();
    let t = Instant::now();
    for (k, chunk) in events.chunks(per_append).enumerate() {
        let stream = if per_append == 1 { stream_of(k) } else { format!("batch-{k}") };
        store.append(&stream, ExpectedVersion::Any, chunk.to_vec()).await.unwrap();
    }
    t.elapsed()
}

async fn lib_concurrent(store: &Arc<dyn EventStore>, writers: usize, per_writer: usize) -> Duration {
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = Arc::clone(store);
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                store.append(&format!("w{w}-{}", i / 10), ExpectedVersion::Any, vec![event(i)]).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    t.elapsed()
}

async fn lib_read_all(store: &Arc<dyn EventStore>) -> (usize, Duration) {
    let t = Instant::now();
    let (mut after, mut n) = (0, 0);
    loop {
        let page = store.read_all(after, &EventFilter::all(), 1000).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.position;
        n += page.len();
    }
    (n, t.elapsed())
}

async fn lib_latency(store: &Arc<dyn EventStore>, n: usize) -> Vec<Duration> {
    let sent: Arc<Mutex<HashMap<Uuid, Instant>>> = Arc::default();
    let mut sub = store.subscribe(store.head_position().await.unwrap(), EventFilter::all());
    let sent_r = Arc::clone(&sent);
    let reader = tokio::spawn(async move {
        let mut lat = Vec::with_capacity(n);
        while lat.len() < n {
            let e = sub.next().await.unwrap().unwrap();
            let now = Instant::now();
            if let Some(t) = sent_r.lock().unwrap().get(&e.event_id) {
                lat.push(now - *t);
            }
        }
        lat
    });
    for i in 0..n {
        let e = event(i);
        sent.lock().unwrap().insert(e.event_id, Instant::now());
        store.append(&format!("lat-{}", i / 10), ExpectedVersion::Any, vec![e]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    reader.await.unwrap()
}

fn pct(mut v: Vec<Duration>, p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

async fn run(pg_url: Option<&str>, out: &mut Vec<Row_>) {
    let backend = if pg_url.is_some() { "postgres" } else { "sqlite" };
    eprintln!("== {backend}");
    let single = scale(2_000);
    let batched = scale(100_000);
    let per_writer = scale(2_000);

    let (store, _g) = open(pg_url).await;
    let lib = lib_append(&store, single, 1).await;
    let raw = raw_append(&Raw::fresh(pg_url).await, single, 1).await;
    out.push(Row_ {
        name: "append, 1 event per transaction, 1 writer".into(),
        backend,
        lib: rate(single, lib),
        raw: rate(single, raw),
        unit: "events/s",
    });

    for per in [100, 1000] {
        let (store, _g) = open(pg_url).await;
        let lib = lib_append(&store, batched, per).await;
        let raw = raw_append(&Raw::fresh(pg_url).await, batched, per).await;
        out.push(Row_ {
            name: format!("append, batches of {per}"),
            backend,
            lib: rate(batched, lib),
            raw: rate(batched, raw),
            unit: "events/s",
        });
    }

    let (store, _g) = open(pg_url).await;
    let lib = lib_concurrent(&store, 8, per_writer).await;
    let raw_raw = Raw::fresh(pg_url).await;
    let raw = raw_concurrent(&raw_raw, 8, per_writer).await;
    let n = 8 * per_writer;
    out.push(Row_ {
        name: "append, 8 concurrent writers, 1 event each (raw: 8 connections, 1 commit per event)".into(),
        backend,
        lib: rate(n, lib),
        raw: rate(n, raw),
        unit: "events/s",
    });
    let raw_single = raw_append(&Raw::fresh(pg_url).await, single, 1).await;
    out.push(Row_ {
        name: "append, 8 concurrent writers vs raw 1 writer 1 commit per event".into(),
        backend,
        lib: rate(n, lib),
        raw: rate(single, raw_single),
        unit: "events/s",
    });

    // read-all over the 100k-event log of the batch-of-1000 run
    let (store, _g) = open(pg_url).await;
    lib_append(&store, batched, 1000).await;
    let (n_lib, lib) = lib_read_all(&store).await;
    let raw_db = Raw::fresh(pg_url).await;
    raw_append(&raw_db, batched, 1000).await;
    let (n_raw, raw) = raw_read_all(&raw_db).await;
    out.push(Row_ {
        name: "read all, pages of 1,000, decoded".into(),
        backend,
        lib: rate(n_lib, lib),
        raw: rate(n_raw, raw),
        unit: "events/s",
    });

    let lat_n = scale(1_000);
    let (store, _g) = open(pg_url).await;
    let lib = lib_latency(&store, lat_n).await;
    let raw = raw_latency(&Raw::fresh(pg_url).await, lat_n).await;
    out.push(Row_ {
        name: "append-to-delivery latency p50 (raw: 1 ms polling reader)".into(),
        backend,
        lib: pct(lib.clone(), 0.5),
        raw: pct(raw.clone(), 0.5),
        unit: "ms",
    });
    out.push(Row_ {
        name: "append-to-delivery latency p99 (raw: 1 ms polling reader)".into(),
        backend,
        lib: pct(lib, 0.99),
        raw: pct(raw, 0.99),
        unit: "ms",
    });
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let mut rows = Vec::new();
    run(None, &mut rows).await;
    let pg = std::env::var("AGENTLOG_BENCH_PG_URL").or_else(|_| std::env::var("AGENTLOG_TEST_PG_URL")).ok();
    match &pg {
        Some(url) => run(Some(url), &mut rows).await,
        None => eprintln!("PostgreSQL skipped: set AGENTLOG_BENCH_PG_URL (or AGENTLOG_TEST_PG_URL)"),
    }
    println!("| backend | scenario | agentlog | raw sqlx | ratio |");
    println!("|---|---|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {:.1} {} | {:.1} {} | {:.2} |",
            r.backend,
            r.name,
            r.lib,
            r.unit,
            r.raw,
            r.unit,
            r.lib / r.raw
        );
    }
}
