//! Open a store from a URL, whichever backend it names.

use std::sync::Arc;

use crate::{
    error::EventLogError,
    postgres::PostgresEventStore,
    sqlite::SqliteEventStore,
    store::{EventStore, StoreOptions},
    url::redact,
};

/// Open the log at `url`: `postgres://…` / `postgresql://…` for PostgreSQL; `sqlite:…` or a
/// plain file path for SQLite.
pub async fn open_store(url: &str, options: StoreOptions) -> Result<Arc<dyn EventStore>, EventLogError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PostgresEventStore::connect(url, options).await?))
    } else if url.contains("://") && !url.starts_with("sqlite://") {
        Err(EventLogError::UnsupportedUrl(redact(url)))
    } else {
        Ok(Arc::new(SqliteEventStore::open(url, options).await?))
    }
}
