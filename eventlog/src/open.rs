//! Open a store from a URL, whichever backend it names.

use std::sync::Arc;

use sqlx::{Connection, PgConnection, SqliteConnection};

use crate::{
    error::EventLogError,
    migrate,
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

/// Why a command that must not change the schema refuses the log at `url` (one lacking this
/// build's migrations, holding a newer build's, or holding none of agentlog's tables), or
/// `None` when its schema is this build's; `tool` is the binary the advice names. Read on a
/// connection of its own, without opening the log or changing anything.
pub async fn schema_refusal(url: &str, tool: &str) -> Result<Option<String>, EventLogError> {
    let gap = match backend(url)? {
        Backend::Postgres => {
            let mut conn = PgConnection::connect(url).await.map_err(EventLogError::db("connecting to PostgreSQL"))?;
            let gap = migrate::gap_postgres(&mut conn).await;
            let _ = conn.close().await;
            gap?
        }
        Backend::Sqlite => {
            let connect = sqlite::existing_file(url)?;
            let mut conn = SqliteConnection::connect_with(&connect)
                .await
                .map_err(EventLogError::db("opening the SQLite database"))?;
            let gap = migrate::gap_sqlite(&mut conn).await;
            let _ = conn.close().await;
            gap?
        }
    };
    Ok(gap.refusal(url, tool))
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
