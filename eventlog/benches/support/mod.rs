//! What both benchmarks share.

use std::sync::Arc;

use agentlog_eventlog::{
    EventStore, PostgresEventStore, SqliteEventStore, StoreOptions,
    testing::{TempPostgres, TempSqlite},
};

/// A fresh store: a temporary SQLite file, or a new database on the PostgreSQL server at
/// `pg_url`; the second value keeps it alive.
pub async fn open(pg_url: Option<&str>) -> (Arc<dyn EventStore>, Box<dyn std::any::Any>) {
    match pg_url {
        None => {
            let f = TempSqlite::new();
            let s = SqliteEventStore::open(&f.url(), StoreOptions::default()).await.unwrap();
            (Arc::new(s), Box::new(f))
        }
        Some(url) => {
            let db = TempPostgres::create(url).await.unwrap();
            let s = PostgresEventStore::connect(&db.url, StoreOptions::default()).await.unwrap();
            (Arc::new(s), Box::new(db))
        }
    }
}
