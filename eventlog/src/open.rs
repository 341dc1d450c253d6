//! Open a store from a URL, whichever backend it names.

use std::sync::Arc;

use crate::{
    error::EventLogError,
    postgres::PostgresEventStore,
    sqlite::SqliteEventStore,
    store::{EventStore, StoreOptions},
};

/// Open the log at `url`: `postgres://…` / `postgresql://…` for PostgreSQL; `sqlite:…` or a
/// plain file path for SQLite.
pub async fn open_store(url: &str, options: StoreOptions) -> Result<Arc<dyn EventStore>, EventLogError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PostgresEventStore::connect(url, options).await?))
    } else if url.contains("://") && !url.starts_with("sqlite://") {
        Err(EventLogError::UnsupportedUrl(crate::postgres::redact(url)))
    } else {
        Ok(Arc::new(SqliteEventStore::open(url, options).await?))
    }
}

/// The file of a SQLite URL or path (`None` for PostgreSQL and in-memory databases): what a
/// command that must not create a log checks exists before it opens one.
pub fn sqlite_path(url: &str) -> Option<&str> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return None;
    }
    let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    (!path.is_empty() && path != ":memory:").then_some(path)
}

#[cfg(test)]
mod tests {
    use super::sqlite_path;

    #[test]
    fn sqlite_paths() {
        assert_eq!(sqlite_path("sqlite:agentlog.db"), Some("agentlog.db"));
        assert_eq!(sqlite_path("sqlite:///tmp/a.db?mode=rwc"), Some("/tmp/a.db"));
        assert_eq!(sqlite_path("/tmp/a.db"), Some("/tmp/a.db"));
        assert_eq!(sqlite_path("postgres://u@h/db"), None);
        assert_eq!(sqlite_path("sqlite::memory:"), None);
    }
}
