//! Test support (feature `test-support`): a fresh log on a throwaway SQLite file or a fresh
//! PostgreSQL database, plus raw SQL access for tests that tamper with tables.
//!
//! PostgreSQL tests take their server from `AGENTLOG_TEST_PG_URL`. Without it they are skipped
//! with a message on stderr — except under `CI=true`, where a missing server fails the test.

use std::{io::Write, path::PathBuf, str::FromStr, sync::Arc};

use sqlx::{Connection, Executor, PgConnection, postgres::PgConnectOptions};
use uuid::Uuid;

use crate::postgres::PostgresEventStore;
use crate::sqlite::SqliteEventStore;
use crate::store::EventStore;
use crate::store::StoreOptions;

/// The PostgreSQL server URL for tests, or `None` (after saying so) when tests should skip.
///
/// # Panics
/// Under `CI=true` when `AGENTLOG_TEST_PG_URL` is not set: CI must run the PostgreSQL tests.
pub fn pg_url(test_name: &str) -> Option<String> {
    match std::env::var("AGENTLOG_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                panic!("CI=true but AGENTLOG_TEST_PG_URL is not set: the PostgreSQL test `{test_name}` must run in CI");
            }
            // Written to the real stderr, past the test harness's capture, so it is seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test_name}: set AGENTLOG_TEST_PG_URL (e.g. `bash scripts/pg-test-server.sh start`) to run PostgreSQL tests"
            );
            None
        }
    }
}

/// A throwaway SQLite file, deleted (with its WAL) on drop.
#[derive(Debug)]
pub struct TempSqlite {
    /// The database file.
    pub path: PathBuf,
}

impl TempSqlite {
    /// A fresh path in the temp directory.
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(format!("agentlog-test-{}.db", Uuid::now_v7().simple()));
        Self { path }
    }

    /// `sqlite:` URL of the file.
    pub fn url(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }
}

impl Default for TempSqlite {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TempSqlite {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.path.display()));
        }
    }
}

/// A fresh PostgreSQL database on the test server, emptied for reuse (or dropped) on drop.
#[derive(Debug)]
pub struct TempPostgres {
    admin_url: String,
    /// The database's name.
    pub name: String,
    /// URL of the fresh database.
    pub url: String,
}

/// Emptied test databases waiting for reuse are named with this prefix.
const FREE_PREFIX: &str = "agentlog_free_";

impl TempPostgres {
    /// A fresh (empty) database on the server at `admin_url`: an emptied one left by an
    /// earlier test when there is one, else a new one.
    ///
    /// `CREATE DATABASE` costs ~3 s even on a server that does not wait for the disk (it
    /// checkpoints); with ~100 PostgreSQL tests that was minutes of every CI run. Renaming an
    /// emptied database costs milliseconds.
    pub async fn create(admin_url: &str) -> Result<Self, sqlx::Error> {
        let name = format!("agentlog_t_{}", Uuid::now_v7().simple());
        let mut admin = PgConnection::connect(admin_url).await?;
        let free: Vec<String> =
            sqlx::query_scalar("SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname")
                .bind(FREE_PREFIX)
                .fetch_all(&mut admin)
                .await?;
        let mut claimed = false;
        for candidate in free {
            // Another test may rename the same one first: then try the next.
            if admin.execute(format!("ALTER DATABASE {candidate} RENAME TO {name}").as_str()).await.is_ok() {
                claimed = true;
                break;
            }
        }
        if !claimed {
            // FILE_COPY (PostgreSQL 15+) takes half the time of the default WAL_LOG for a small
            // template; older servers do not know the option.
            let quick = admin.execute(format!("CREATE DATABASE {name} STRATEGY FILE_COPY").as_str()).await;
            if quick.is_err() {
                admin.execute(format!("CREATE DATABASE {name}").as_str()).await?;
            }
        }
        admin.close().await?;
        Ok(Self { admin_url: admin_url.to_string(), url: with_database(admin_url, &name), name })
    }

    /// How many tables its `public` schema holds (0 for a database nothing migrated).
    pub async fn table_count(&self) -> Result<i64, sqlx::Error> {
        let mut conn = PgConnection::connect(&self.url).await?;
        let n =
            sqlx::query_scalar("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").fetch_one(&mut conn).await;
        conn.close().await?;
        n
    }

    /// Empty the database and rename it for reuse: every session on it ended, every schema
    /// dropped (the log's tables, a verifier's scratch schemas) and `public` made again, its
    /// settings reset. Fails when anything is in the way; the caller then drops it.
    async fn recycle(admin: &mut PgConnection, admin_url: &str, name: &str) -> Result<(), sqlx::Error> {
        const END_SESSIONS: &str = "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity \
                                    WHERE datname = $1 AND pid <> pg_backend_pid()";
        admin.execute(format!("ALTER DATABASE {name} RESET ALL").as_str()).await?;
        sqlx::query(END_SESSIONS).bind(name).execute(&mut *admin).await?;
        let mut db = PgConnection::connect(&with_database(admin_url, name)).await?;
        let schemas: Vec<String> = sqlx::query_scalar(
            "SELECT nspname::text FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'",
        )
        .fetch_all(&mut db)
        .await?;
        for schema in schemas {
            db.execute(format!("DROP SCHEMA \"{schema}\" CASCADE").as_str()).await?;
        }
        db.execute("CREATE SCHEMA public").await?;
        db.close().await?;
        // A session that connected meanwhile makes the rename fail (and the database dropped).
        sqlx::query(END_SESSIONS).bind(name).execute(&mut *admin).await?;
        let free = format!("{FREE_PREFIX}{}", Uuid::now_v7().simple());
        admin.execute(format!("ALTER DATABASE {name} RENAME TO {free}").as_str()).await?;
        Ok(())
    }

    /// Connect options for the fresh database.
    pub fn connect_options(&self) -> Result<PgConnectOptions, sqlx::Error> {
        PgConnectOptions::from_str(&self.url)
    }
}

/// `url` with its database name replaced by `name`.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[host_start..].find('/') {
        Some(slash) => &base[..host_start + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop may run inside a runtime; do the async clean-up on a thread of its own.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                if let Ok(mut admin) = PgConnection::connect(&admin_url).await
                    && Self::recycle(&mut admin, &admin_url, &name).await.is_err()
                {
                    let _ = admin.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str()).await;
                }
            });
        })
        .join();
    }
}

/// A store under test and a raw handle on its database.
pub struct TestLog {
    /// The store.
    pub store: Arc<dyn EventStore>,
    /// Raw SQL access to the same database.
    pub raw: RawDb,
    /// Keeps the SQLite file or PostgreSQL database alive.
    pub guard: TestDbGuard,
}

/// Keeps a test database alive.
#[derive(Debug)]
pub enum TestDbGuard {
    /// A SQLite file.
    Sqlite(Arc<TempSqlite>),
    /// A PostgreSQL database.
    Postgres(Arc<TempPostgres>),
}

impl TestDbGuard {
    /// The database URL.
    pub fn url(&self) -> String {
        match self {
            Self::Sqlite(s) => s.url(),
            Self::Postgres(p) => p.url.clone(),
        }
    }
}

/// Raw SQL access for tests.
#[derive(Clone, Debug)]
pub enum RawDb {
    /// SQLite pool.
    Sqlite(sqlx::SqlitePool),
    /// PostgreSQL pool.
    Postgres(sqlx::PgPool),
}

impl RawDb {
    /// Run one statement; the error (e.g. a trigger's refusal) comes back as text.
    pub async fn execute(&self, sql: &str) -> Result<u64, String> {
        match self {
            Self::Sqlite(p) => p.execute(sql).await.map(|r| r.rows_affected()).map_err(|e| e.to_string()),
            Self::Postgres(p) => p.execute(sql).await.map(|r| r.rows_affected()).map_err(|e| e.to_string()),
        }
    }

    /// A single integer from `sql`.
    pub async fn scalar_i64(&self, sql: &str) -> Result<i64, String> {
        match self {
            Self::Sqlite(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await.map_err(|e| e.to_string()),
            Self::Postgres(p) => sqlx::query_scalar::<_, i64>(sql).fetch_one(p).await.map_err(|e| e.to_string()),
        }
    }
}

/// A fresh SQLite-backed log.
pub async fn sqlite_log(options: StoreOptions) -> TestLog {
    let file = Arc::new(TempSqlite::new());
    let store = SqliteEventStore::open(&file.url(), options).await.unwrap_or_else(|e| panic!("open SQLite log: {e}"));
    let raw = RawDb::Sqlite(store.pool().clone());
    TestLog { store: Arc::new(store), raw, guard: TestDbGuard::Sqlite(file) }
}

/// A fresh PostgreSQL-backed log, or `None` when PostgreSQL tests are skipped.
pub async fn postgres_log(test_name: &str, options: StoreOptions) -> Option<TestLog> {
    let url = pg_url(test_name)?;
    let db = Arc::new(TempPostgres::create(&url).await.unwrap_or_else(|e| panic!("create test database: {e}")));
    let store =
        PostgresEventStore::connect(&db.url, options).await.unwrap_or_else(|e| panic!("open PostgreSQL log: {e}"));
    let raw = RawDb::Postgres(store.pool().clone());
    Some(TestLog { store: Arc::new(store), raw, guard: TestDbGuard::Postgres(db) })
}

/// Open a second store on the same database as `log` (another "instance").
pub async fn reopen(guard: &TestDbGuard, options: StoreOptions) -> Arc<dyn EventStore> {
    match guard {
        TestDbGuard::Sqlite(f) => {
            Arc::new(SqliteEventStore::open(&f.url(), options).await.unwrap_or_else(|e| panic!("reopen: {e}")))
        }
        TestDbGuard::Postgres(p) => {
            Arc::new(PostgresEventStore::connect(&p.url, options).await.unwrap_or_else(|e| panic!("reopen: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn database_name_is_replaced() {
        use super::with_database;
        assert_eq!(with_database("postgres://u@h:1/postgres", "x"), "postgres://u@h:1/x");
        assert_eq!(
            with_database("postgres://u@h:1/postgres?sslmode=disable", "x"),
            "postgres://u@h:1/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://u@h:1", "x"), "postgres://u@h:1/x");
    }
}
