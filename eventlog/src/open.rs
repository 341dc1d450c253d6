//! Open a store from a URL, whichever backend it names.

use std::sync::Arc;

use sqlx::{Connection, PgConnection, SqliteConnection};

use crate::{
    error::EventLogError,
    migrate::{self, SchemaGap},
    postgres::PostgresEventStore,
    sqlite::{self, SqliteEventStore},
    store::{EventStore, StoreOptions},
    url::redact,
};

/// Open the log at `url`: `postgres://…` / `postgresql://…` for PostgreSQL; `sqlite:…` or a
/// plain file path for SQLite.
pub async fn open_store(url: &str, options: StoreOptions) -> Result<Arc<dyn EventStore>, EventLogError> {
    match backend(url)? {
        Backend::Postgres => Ok(Arc::new(PostgresEventStore::connect(url, options).await?)),
        Backend::Sqlite => Ok(Arc::new(SqliteEventStore::open(url, options).await?)),
    }
}

/// How the schema of the log at `url` differs from this build's, read on a connection of its
/// own without opening the log or changing anything: what a reader that must leave the schema
/// alone checks first.
pub async fn schema_gap(url: &str) -> Result<SchemaGap, EventLogError> {
    match backend(url)? {
        Backend::Postgres => {
            let mut conn = PgConnection::connect(url).await.map_err(EventLogError::db("connecting to PostgreSQL"))?;
            let gap = migrate::gap_postgres(&mut conn).await;
            let _ = conn.close().await;
            gap
        }
        Backend::Sqlite => {
            let connect = sqlite::existing_file(url)?;
            let mut conn = SqliteConnection::connect_with(&connect)
                .await
                .map_err(EventLogError::db("opening the SQLite database"))?;
            let gap = migrate::gap_sqlite(&mut conn).await;
            let _ = conn.close().await;
            gap
        }
    }
}

/// Which backend a URL names.
enum Backend {
    Postgres,
    Sqlite,
}

/// The backend of `url`, or why it names none.
fn backend(url: &str) -> Result<Backend, EventLogError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Backend::Postgres)
    } else if url.contains("://") && !url.starts_with("sqlite://") {
        Err(EventLogError::UnsupportedUrl(redact(url)))
    } else {
        Ok(Backend::Sqlite)
    }
}
