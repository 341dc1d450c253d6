//! Schema migrations, embedded at build time from `migrations/sqlite` and `migrations/postgres`.
//! Applying them is idempotent: already applied migrations are skipped.

use sqlx::{PgPool, SqlitePool, migrate::Migrator};

use crate::error::EventLogError;

/// The SQLite migrations.
pub static SQLITE: Migrator = sqlx::migrate!("../migrations/sqlite");
/// The PostgreSQL migrations.
pub static POSTGRES: Migrator = sqlx::migrate!("../migrations/postgres");

/// Apply the SQLite migrations.
pub async fn migrate_sqlite(pool: &SqlitePool) -> Result<(), EventLogError> {
    SQLITE.run(pool).await?;
    Ok(())
}

/// Apply the PostgreSQL migrations (serialized across instances by sqlx's advisory lock).
pub async fn migrate_postgres(pool: &PgPool) -> Result<(), EventLogError> {
    POSTGRES.run(pool).await?;
    Ok(())
}
