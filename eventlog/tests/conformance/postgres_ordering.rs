//! PostgreSQL only: appending transactions that take positions and commit out of order must never
//! make a tailing reader skip an event. See `postgres.rs` and docs/log.md ("Ordering on PostgreSQL") for the mechanism:
//! every append holds one transaction-level advisory lock from before it takes positions until
//! after its commit is visible.

use std::{sync::Arc, time::Duration};

use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
use agentlog_eventlog::{
    EventFilter, EventStore, ExpectedVersion, PostgresEventStore, StoreOptions,
    postgres::APPEND_LOCK,
    testing::{TempPostgres, pg_url},
};
use futures_util::StreamExt;
use serde_json::json;
use sqlx::{Connection, Executor, PgConnection};
use tokio::time::timeout;
use uuid::Uuid;

fn event() -> NewEvent {
    let id = Uuid::now_v7();
    NewEvent::new(id, "test.happened", json!({}), EventMetadata::source(id, Actor::user("u"), "u", "user:u"))
}

/// Insert one event by hand inside the caller's transaction, as another writer would.
async fn raw_insert(conn: &mut PgConnection, stream: &str) -> i64 {
    let e = event();
    sqlx::query_scalar(
        "INSERT INTO events (event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, \
         root_source_id, parent_node_id, user_id, recorded_at) \
         VALUES ($1, $2, 1, 'test.happened', 1, '{}'::json, $3::json, $1, NULL, 'u', now()) RETURNING position",
    )
    .bind(e.event_id)
    .bind(stream)
    .bind(serde_json::to_string(&e.metadata).unwrap())
    .fetch_one(&mut *conn)
    .await
    .unwrap()
}

async fn setup(test: &str) -> Option<(TempPostgres, Arc<dyn EventStore>)> {
    let url = pg_url(test)?;
    let db = TempPostgres::create(&url).await.unwrap();
    let store: Arc<dyn EventStore> =
        Arc::new(PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap());
    Some((db, store))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_append_makes_readers_wait_not_skip_postgres() {
    let Some((db, store)) = setup("a_held_append_makes_readers_wait_not_skip_postgres").await else { return };
    store.append("before-1", ExpectedVersion::NoStream, vec![event()]).await.unwrap();
    let start = store.head_position().await.unwrap();
    let mut sub = store.subscribe(start, EventFilter::all());

    // An appending transaction takes its position and then stalls before committing.
    let mut held = PgConnection::connect(&db.url).await.unwrap();
    held.execute("BEGIN").await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(APPEND_LOCK).execute(&mut held).await.unwrap();
    let held_position = raw_insert(&mut held, "held-1").await;

    // Later appends start meanwhile.
    let mut later = Vec::new();
    for i in 0..5 {
        let store = Arc::clone(&store);
        later.push(tokio::spawn(async move {
            store.append(&format!("later-{i}"), ExpectedVersion::NoStream, vec![event()]).await.unwrap()
        }));
    }
    // The reader sees nothing: it waits rather than running past the held position.
    assert!(timeout(Duration::from_millis(800), sub.next()).await.is_err(), "reader must wait");
    assert!(later.iter().all(|t| !t.is_finished()), "later appends queue behind the held one");

    held.execute("COMMIT").await.unwrap();
    let mut later_positions = Vec::new();
    for t in later {
        later_positions.push(t.await.unwrap().positions[0]);
    }
    assert!(later_positions.iter().all(|p| *p > held_position));

    let mut got = Vec::new();
    while got.len() < 6 {
        let e = timeout(Duration::from_secs(5), sub.next()).await.expect("events arrive").unwrap().unwrap();
        got.push(e.position);
    }
    assert_eq!(got[0], held_position, "the held event is delivered first, not skipped");
    assert!(got.windows(2).all(|w| w[0] < w[1]));
    let all: Vec<i64> =
        store.read_all(start, &EventFilter::all(), 100).await.unwrap().iter().map(|e| e.position).collect();
    assert_eq!(got, all);
    store.close().await;
}

/// Why the lock exists: without it a sequence hands out positions before commit, a later
/// transaction commits first, and a reader that tracks "the highest position seen" skips the
/// earlier one for ever. This test reproduces the hazard on purpose with raw transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_lock_a_position_reader_would_skip_postgres() {
    let Some((db, store)) = setup("without_the_lock_a_position_reader_would_skip_postgres").await else { return };
    let mut first = PgConnection::connect(&db.url).await.unwrap();
    let mut second = PgConnection::connect(&db.url).await.unwrap();
    first.execute("BEGIN").await.unwrap();
    second.execute("BEGIN").await.unwrap();
    let p1 = raw_insert(&mut first, "naive-1").await;
    let p2 = raw_insert(&mut second, "naive-2").await;
    assert!(p1 < p2);
    second.execute("COMMIT").await.unwrap();
    // a naive reader now sees p2 and would remember it as its checkpoint...
    let seen: Vec<i64> = sqlx::query_scalar("SELECT position FROM events WHERE position > 0 ORDER BY position")
        .fetch_all(&mut second)
        .await
        .unwrap();
    assert_eq!(seen, vec![p2]);
    first.execute("COMMIT").await.unwrap();
    // ...and its next read from that checkpoint never returns p1.
    let next: Vec<i64> = sqlx::query_scalar("SELECT position FROM events WHERE position > $1 ORDER BY position")
        .bind(p2)
        .fetch_all(&mut second)
        .await
        .unwrap();
    assert!(next.is_empty(), "p1 = {p1} was skipped: this is the hazard the append lock prevents");
    store.close().await;
}

/// Two instances append concurrently; a reader on a third follows; it sees every event once, in
/// strictly increasing positions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_writing_concurrently_never_make_a_reader_skip_postgres() {
    let Some((db, a)) = setup("two_instances_writing_concurrently_never_make_a_reader_skip_postgres").await else {
        return;
    };
    let b: Arc<dyn EventStore> = Arc::new(PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap());
    let reader: Arc<dyn EventStore> =
        Arc::new(PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap());
    let mut sub = reader.subscribe(0, EventFilter::all());
    let mut writers = Vec::new();
    for (n, store) in
        [a.clone(), b.clone(), a.clone(), b.clone(), a.clone(), b.clone(), a.clone(), b.clone()].into_iter().enumerate()
    {
        writers.push(tokio::spawn(async move {
            for i in 0..100 {
                store
                    .append(&format!("inst{n}-{}", i % 5), ExpectedVersion::Any, vec![event(), event()])
                    .await
                    .unwrap();
            }
        }));
    }
    let mut got = Vec::new();
    while got.len() < 8 * 100 * 2 {
        let e = timeout(Duration::from_secs(30), sub.next()).await.expect("events keep arriving").unwrap().unwrap();
        got.push(e.position);
    }
    for w in writers {
        w.await.unwrap();
    }
    assert!(got.windows(2).all(|w| w[0] < w[1]));
    let all: Vec<i64> =
        reader.read_all(0, &EventFilter::all(), 100_000).await.unwrap().iter().map(|e| e.position).collect();
    assert_eq!(got, all);
    for s in [a, b, reader] {
        s.close().await;
    }
}

/// With LISTEN/NOTIFY switched off, polling alone still brings another instance's appends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn polling_alone_finds_another_instances_appends_postgres() {
    let Some((db, a)) = setup("polling_alone_finds_another_instances_appends_postgres").await else { return };
    let options =
        StoreOptions { listen_notify: false, poll_interval: Duration::from_millis(200), ..StoreOptions::default() };
    let b: Arc<dyn EventStore> = Arc::new(PostgresEventStore::connect(&db.url, options).await.unwrap());
    let mut sub = b.subscribe(0, EventFilter::all());
    let appended = a.append("poll-1", ExpectedVersion::NoStream, vec![event()]).await.unwrap();
    let got = timeout(Duration::from_secs(1), sub.next()).await.expect("within a second").unwrap().unwrap();
    assert_eq!(got.position, appended.positions[0]);
    a.close().await;
    b.close().await;
}
