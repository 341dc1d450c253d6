//! PostgreSQL only: the log refreshes `events`' planner statistics as it grows from empty, so
//! the plans every connection cached while the table was nearly empty (scans of the whole
//! table) are made again for its size. See `run_analyzer` in `postgres.rs`.

use std::{sync::Arc, time::Duration};

use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
use agentlog_eventlog::{
    EventStore, ExpectedVersion, PostgresEventStore, StoreOptions,
    postgres::FIRST_ANALYZE_AT,
    testing::{TempPostgres, pg_url},
};
use serde_json::json;
use uuid::Uuid;

fn event() -> NewEvent {
    let id = Uuid::now_v7();
    NewEvent::new(id, "test.happened", json!({}), EventMetadata::source(id, Actor::user("u"), "u", "user:u"))
}

/// `pg_class.reltuples` of `events`: -1 until the table is first analyzed (or vacuumed).
async fn counted_rows(db: &TempPostgres) -> f64 {
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let n: f32 =
        sqlx::query_scalar("SELECT reltuples FROM pg_class WHERE relname = 'events'").fetch_one(&pool).await.unwrap();
    pool.close().await;
    f64::from(n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_log_analyzes_events_as_it_grows_postgres() {
    let Some(url) = pg_url("the_log_analyzes_events_as_it_grows_postgres") else { return };
    let db = TempPostgres::create(&url).await.unwrap();
    let store: Arc<dyn EventStore> =
        Arc::new(PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap());
    // Only the log's own ANALYZE may count: an autovacuum round landing in the test's second
    // would analyze the table too.
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    sqlx::query("ALTER TABLE events SET (autovacuum_enabled = false)").execute(&pool).await.unwrap();
    pool.close().await;
    let below = usize::try_from(FIRST_ANALYZE_AT).unwrap() - 100;
    for (i, chunk) in (0..below).collect::<Vec<_>>().chunks(100).enumerate() {
        let events = chunk.iter().map(|_| event()).collect();
        store.append(&format!("grow-{i}"), ExpectedVersion::NoStream, events).await.unwrap();
    }
    // Nothing analyzed it yet.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(counted_rows(&db).await < 0.0, "events was analyzed before the log reached {FIRST_ANALYZE_AT}");
    let events = (0..200).map(|_| event()).collect();
    store.append("grow-last", ExpectedVersion::NoStream, events).await.unwrap();
    let mut rows = counted_rows(&db).await;
    for _ in 0..100 {
        if rows >= FIRST_ANALYZE_AT as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        rows = counted_rows(&db).await;
    }
    assert!(rows >= FIRST_ANALYZE_AT as f64, "events not analyzed past {FIRST_ANALYZE_AT} events: reltuples {rows}");
}
