//! PostgreSQL only: a log that earlier builds kept with `jsonb` payloads and metadata (before
//! migration 0040) upgrades in place to the `json` text the log keeps now, every event readable
//! and unchanged, and the log goes on from where it was.

use std::borrow::Cow;

use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
use agentlog_eventlog::{
    EventFilter, EventStore, ExpectedVersion, PostgresEventStore, StoreOptions,
    migrate::POSTGRES,
    testing::{TempPostgres, pg_url},
};
use serde_json::json;
use sqlx::migrate::Migrator;
use uuid::Uuid;

fn event(payload: serde_json::Value) -> NewEvent {
    let id = Uuid::now_v7();
    NewEvent::new(id, "test.happened", payload, EventMetadata::source(id, Actor::user("u"), "u", "user:u"))
}

/// The type of `events.column`.
async fn column_type(pool: &sqlx::PgPool, column: &str) -> String {
    sqlx::query_scalar(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
         WHERE attrelid = 'events'::regclass AND attname = $1",
    )
    .bind(column)
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_jsonb_log_upgrades_to_json_text_postgres() {
    let Some(url) = pg_url("a_jsonb_log_upgrades_to_json_text_postgres") else { return };
    let db = TempPostgres::create(&url).await.unwrap();
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();

    // The schema as the builds before 0040 left it.
    let before = Migrator {
        migrations: Cow::Owned(POSTGRES.iter().filter(|m| m.version < 40).cloned().collect()),
        ..Migrator::DEFAULT
    };
    before.run(&pool).await.unwrap();
    assert_eq!(column_type(&pool, "payload").await, "jsonb");
    let old =
        PostgresEventStore::connect(&db.url, StoreOptions { migrate: false, ..StoreOptions::default() }).await.unwrap();
    let payloads = [json!({"b": 1, "aa": [1.5, "x"], "nested": {"z": null}}), json!({}), json!({"text": "é ✓"})];
    for (i, p) in payloads.iter().enumerate() {
        old.append(&format!("s-{i}"), ExpectedVersion::NoStream, vec![event(p.clone())]).await.unwrap();
    }
    let written = old.read_all(0, &EventFilter::all(), 100).await.unwrap();
    assert_eq!(written.len(), 3);
    drop(old);

    // The build with 0040 opens it: the columns become json, every event reads as it did.
    let store = PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap();
    assert_eq!(column_type(&pool, "payload").await, "json");
    assert_eq!(column_type(&pool, "metadata").await, "json");
    let read = store.read_all(0, &EventFilter::all(), 100).await.unwrap();
    assert_eq!(read.len(), 3);
    for (w, r) in written.iter().zip(&read) {
        assert_eq!(
            (w.position, w.event_id, &w.payload, &w.metadata),
            (r.position, r.event_id, &r.payload, &r.metadata)
        );
    }
    let unparsed = store.read_all_unparsed(0, &EventFilter::all(), 100).await.unwrap();
    for (u, p) in unparsed.iter().zip(&payloads) {
        assert_eq!(&serde_json::from_str::<serde_json::Value>(&u.payload).unwrap(), p);
    }

    // It goes on: the next append continues the positions and keeps its text as written.
    let next = store.append("s-0", ExpectedVersion::Exact(1), vec![event(json!({"zero": -0.0}))]).await.unwrap();
    assert_eq!(next.positions, vec![4]);
    let text: String =
        sqlx::query_scalar("SELECT payload::text FROM events WHERE position = 4").fetch_one(&pool).await.unwrap();
    assert_eq!(text, r#"{"zero":-0.0}"#);
    pool.close().await;
}
