//! Schema migrations, embedded at build time. A migration whose SQL is the same for both backends
//! is one file in `migrations/shared`; one that differs by dialect has a file in each of
//! `migrations/sqlite` and `migrations/postgres`. Applying them is idempotent: already applied
//! migrations are skipped.
//!
//! Built by hand rather than with `sqlx::migrate!`: the macro's crate (sqlx-macros) compiles a
//! second copy of sqlx with every driver, and SQLite's C sources, for the build host — minutes of
//! CI for one macro. The result is the same: version and description from the file name
//! (`0002_read_models_core.sql` → 2, "read models core"), the SHA-384 of the SQL as checksum
//! (`Migration::new`), so databases migrated by earlier builds validate unchanged.

use std::{borrow::Cow, sync::LazyLock};

use sqlx::{
    PgConnection, PgPool, SqliteConnection, SqlitePool,
    migrate::{Migration, MigrationType, Migrator},
};

use crate::error::EventLogError;

/// `(file name, SQL)` of each migration, in order.
type Files = &'static [(&'static str, &'static str)];

/// The migration files, each `shared` (one file for both backends) or `own` (a file per
/// backend, same name): `(SQLite files, PostgreSQL files)`.
macro_rules! migration_files {
    ($($kind:ident $name:literal),* $(,)?) => {
        (
            &[$(($name, migration_files!(@sql sqlite $kind $name))),*],
            &[$(($name, migration_files!(@sql postgres $kind $name))),*],
        )
    };
    (@sql $backend:ident shared $name:literal) => {
        include_str!(concat!("../../migrations/shared/", $name))
    };
    (@sql $backend:ident own $name:literal) => {
        include_str!(concat!("../../migrations/", stringify!($backend), "/", $name))
    };
}

const FILES: (Files, Files) = migration_files!(
    own "0001_events.sql",
    shared "0002_read_models_core.sql",
    shared "0003_snapshots.sql",
    shared "0004_read_models_operations.sql",
    shared "0005_read_models_work.sql",
    shared "0006_api_tokens.sql",
    shared "0007_reactor_checkpoints.sql",
    shared "0012_api_token_last_used.sql",
    shared "0013_notification_created_position.sql",
    shared "0018_export_leases.sql",
    shared "0019_conversation_message_groups.sql",
    shared "0021_budgets.sql",
    shared "0022_projection_dropped_indexes.sql",
    shared "0023_task_skipped_ticks.sql",
    shared "0027_analytics_fleet_rollups.sql",
    shared "0030_per_owner_cron_jobs_groups.sql",
    shared "0031_per_owner_agents.sql",
    shared "0032_per_owner_briefs.sql",
    shared "0033_per_owner_conversations.sql",
    shared "0034_per_owner_budgets.sql",
    shared "0035_per_owner_tasks.sql",
    shared "0036_per_owner_operations.sql",
    shared "0037_analytics_agent_rollups.sql",
    shared "0038_scheduler_due_columns.sql",
    shared "0039_chains_from_the_log.sql",
    own "0040_events_json_text.sql",
    shared "0041_budget_spend_rollups.sql",
    shared "0042_server_secrets.sql",
);
const SQLITE_FILES: Files = FILES.0;
const POSTGRES_FILES: Files = FILES.1;

/// Checksums databases recorded for files whose comments changed since (when 0004 and 0005 were
/// two files, one per backend, that differed only in a comment line): `(version, SQLite,
/// PostgreSQL)`, hex SHA-384. Only comments may differ — `statements_are_pinned` checks that the
/// statements still hash as they did.
const RECORDED: &[(i64, &str, &str)] = &[
    (
        4,
        "06a31fed69a773a1ee3dbe79ed9b530449250617732a281b0954e8022ddf5619ffc4f16251ac927e8e260fe62462e44d",
        "31e6047560b590956caa37d032db46b84e3319e3ebe3b822d76c50b9de04d434614a4bd8675a3149d38a361259d6d003",
    ),
    (
        5,
        "5114c03a042ab0d23866609ec1d075fcd9de96f799b64d1b5529e3a343ff0f85c1fdc5a74734b926d2586626b3c7874b",
        "b3db8a1b3ffb825e309fb808e5a8b4b371157a449b30967cd37a9e9a6bf2292cfffa42c239aa7ea7cb0610a0ee7a24fe",
    ),
];

/// Which backend a migrator is for (picks its column in [`RECORDED`]).
#[derive(Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

/// The bytes of a hex string (this file's own constants).
fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2).filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// A migrator over `files`, named as `sqlx::migrate!` names them.
fn migrator(files: Files, backend: Backend) -> Migrator {
    let migrations = files
        .iter()
        .map(|(name, sql)| {
            let stem = name.trim_end_matches(".sql");
            let (version, description) = stem.split_once('_').unwrap_or((stem, ""));
            // The names are this crate's own files (tested below), not input.
            let version: i64 = version.parse().unwrap_or_default();
            let no_tx = sql.starts_with("-- no-transaction");
            let mut migration = Migration::new(
                version,
                Cow::Owned(description.replace('_', " ")),
                MigrationType::Simple,
                Cow::Borrowed(*sql),
                no_tx,
            );
            if let Some((_, sqlite, postgres)) = RECORDED.iter().find(|(v, ..)| *v == version) {
                let recorded = match backend {
                    Backend::Sqlite => sqlite,
                    Backend::Postgres => postgres,
                };
                migration.checksum = Cow::Owned(unhex(recorded));
            }
            migration
        })
        .collect::<Vec<_>>();
    Migrator { migrations: Cow::Owned(migrations), ..Migrator::DEFAULT }
}

/// The SQLite migrations.
pub static SQLITE: LazyLock<Migrator> = LazyLock::new(|| migrator(SQLITE_FILES, Backend::Sqlite));
/// The PostgreSQL migrations.
pub static POSTGRES: LazyLock<Migrator> = LazyLock::new(|| migrator(POSTGRES_FILES, Backend::Postgres));

/// Apply the SQLite migrations.
pub async fn migrate_sqlite(pool: &SqlitePool) -> Result<(), EventLogError> {
    let mut conn = pool.acquire().await.map_err(EventLogError::db("connecting to migrate"))?;
    let applied = applied_sqlite(&mut conn).await?;
    drop(conn);
    announce(&SQLITE, applied);
    SQLITE.run(pool).await?;
    Ok(())
}

/// Apply the PostgreSQL migrations (serialized across instances by sqlx's advisory lock).
pub async fn migrate_postgres(pool: &PgPool) -> Result<(), EventLogError> {
    let mut conn = pool.acquire().await.map_err(EventLogError::db("connecting to migrate"))?;
    migrate_postgres_on(&mut conn).await
}

/// Apply the PostgreSQL migrations on one connection.
pub async fn migrate_postgres_on(conn: &mut PgConnection) -> Result<(), EventLogError> {
    announce(&POSTGRES, applied_postgres(conn).await?);
    POSTGRES.run(conn).await?;
    Ok(())
}

/// How a database's schema differs from this build's: the migrations it lacks and those it has
/// that this build does not know (a newer build's).
#[derive(Debug)]
pub(crate) struct SchemaGap {
    /// This build's migrations the database has not applied, oldest first (every one for a
    /// database without agentlog's tables).
    missing: Vec<i64>,
    /// Migrations the database applied that this build does not have.
    unknown: Vec<i64>,
}

impl SchemaGap {
    /// Why a command that must not change the schema refuses the log at `url` (`tool`: the
    /// binary, named in the advice), or `None` when its schema is this build's.
    pub(crate) fn refusal(&self, url: &str, tool: &str) -> Option<String> {
        let list = |versions: &[i64]| versions.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let url = crate::url::redact(url);
        if !self.unknown.is_empty() {
            return Some(format!(
                "the log at {url} has migration(s) {} that this build does not know: a newer agentlog \
                 serves it; use that build's {tool}",
                list(&self.unknown)
            ));
        }
        match self.missing.as_slice() {
            [] => None,
            [1, ..] => Some(format!("no log at {url}: the database holds none of agentlog's tables")),
            versions => Some(format!(
                "the log at {url} lacks this build's migration(s) {}: this command never changes the schema. \
                 Start this build's `agentlog serve` on it first (it applies them), or use the {tool} of \
                 the build that serves it",
                list(versions)
            )),
        }
    }
}

/// The gap between a SQLite database's schema and this build's.
pub(crate) async fn gap_sqlite(conn: &mut SqliteConnection) -> Result<SchemaGap, EventLogError> {
    Ok(gap(&SQLITE, &applied_sqlite(conn).await?))
}

/// [`gap_sqlite`] for PostgreSQL.
pub(crate) async fn gap_postgres(conn: &mut PgConnection) -> Result<SchemaGap, EventLogError> {
    Ok(gap(&POSTGRES, &applied_postgres(conn).await?))
}

/// The gap between `migrator` and the versions in `applied`.
fn gap(migrator: &Migrator, applied: &[i64]) -> SchemaGap {
    let ours: Vec<i64> = migrator.iter().map(|m| m.version).collect();
    SchemaGap {
        missing: ours.iter().copied().filter(|v| !applied.contains(v)).collect(),
        unknown: applied.iter().copied().filter(|v| !ours.contains(v)).collect(),
    }
}

/// The migrations a SQLite database records as applied (none for a new one).
async fn applied_sqlite(conn: &mut SqliteConnection) -> Result<Vec<i64>, EventLogError> {
    let exists: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
            .fetch_one(&mut *conn)
            .await
            .map_err(EventLogError::db("reading the applied migrations"))?;
    if exists == 0 {
        return Ok(Vec::new());
    }
    sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
        .fetch_all(&mut *conn)
        .await
        .map_err(EventLogError::db("reading the applied migrations"))
}

/// The migrations a PostgreSQL database records as applied (none for a new one).
async fn applied_postgres(conn: &mut PgConnection) -> Result<Vec<i64>, EventLogError> {
    // `to_regclass` first: a fresh database has no table to read, and an error would show in
    // the server's log.
    let exists: Option<String> = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
        .fetch_one(&mut *conn)
        .await
        .map_err(EventLogError::db("reading the applied migrations"))?;
    if exists.is_none() {
        return Ok(Vec::new());
    }
    sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
        .fetch_all(&mut *conn)
        .await
        .map_err(EventLogError::db("reading the applied migrations"))
}

/// Log what `migrator` is about to do to a database that has `applied` (versions): one line
/// for a new database, one per migration for an upgrade, since an upgrade's migration may
/// rewrite a large table (0040 rewrites `events`) and start-up waits for it.
fn announce(migrator: &Migrator, applied: Vec<i64>) {
    let pending: Vec<&Migration> = migrator.iter().filter(|m| !applied.contains(&m.version)).collect();
    if pending.is_empty() {
        return;
    }
    if applied.is_empty() {
        tracing::info!(migrations = pending.len(), "creating the schema");
        return;
    }
    for m in pending {
        tracing::info!(version = m.version, description = %m.description, "applying migration");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names of the `.sql` files in `migrations/<dir>`, sorted.
    fn on_disk(dir: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations").join(dir);
        let mut names: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        names.sort();
        names
    }

    /// Every file in the migrations folders is listed, in order, with a numeric version; a name is
    /// either shared or in both backend folders, never both.
    #[test]
    fn every_migration_file_is_embedded() {
        let shared = on_disk("shared");
        let (sqlite, postgres) = (on_disk("sqlite"), on_disk("postgres"));
        assert_eq!(sqlite, postgres, "a per-backend migration has a file in both folders");
        assert!(shared.iter().all(|n| !sqlite.contains(n)), "a migration is shared or per backend, not both");
        let mut all: Vec<String> = shared.into_iter().chain(sqlite).collect();
        all.sort();
        for files in [SQLITE_FILES, POSTGRES_FILES] {
            let listed: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
            assert_eq!(listed, all, "list every migration file in migrate.rs");
        }
        let versions: Vec<i64> = SQLITE.iter().map(|m| m.version).collect();
        assert_eq!(
            versions,
            (1..=7)
                .chain([12, 13, 18, 19, 21, 22, 23, 27, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42])
                .collect::<Vec<_>>()
        );
        assert_eq!(SQLITE.iter().nth(1).map(|m| m.description.to_string()).as_deref(), Some("read models core"));
    }

    /// The migrations whose recorded checksum is carried over changed only in comments: their
    /// statements (the SQL without `--` lines) hash as the statements of the recorded files did.
    #[test]
    fn statements_are_pinned() {
        let statements = |sql: &str| -> String {
            sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n")
        };
        for (version, pinned) in STATEMENTS {
            let m = SQLITE.iter().find(|m| m.version == version).unwrap();
            // Migration::new hashes its SQL with SHA-384, as for the checksum.
            let of_statements =
                Migration::new(0, Cow::Borrowed(""), MigrationType::Simple, Cow::Owned(statements(&m.sql)), false);
            let hash: String = of_statements.checksum.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(&hash, pinned, "migration {version}'s statements changed: write a new migration");
        }
    }

    /// SHA-384 of the statements of the files [`RECORDED`] names, as they were recorded.
    const STATEMENTS: [(i64, &str); 2] = [
        (4, "b1eda53b2055cadb749819fe637b0cf5c6083c48789450a5f39e8703d2c237d851f6f52ef27c0a6c59454a37f6869b2d"),
        (5, "d8d1c89f3904ff24792a594ef4ce0989896278629419a41fe18d4794cbf76eb5327cf865e8dfc375ecdbada73051d9b2"),
    ];

    /// The checksums `sqlx::migrate!` recorded for these files (hex SHA-384, read from a SQLite
    /// and a PostgreSQL database migrated by the macro-built version at c27a558; later files: the SHA-384 of their SQL):
    /// databases migrated earlier still validate.
    #[test]
    fn checksums_match_what_the_macro_recorded() {
        let hex = |m: &Migration| m.checksum.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let sqlite: Vec<String> = SQLITE.iter().map(hex).collect();
        let postgres: Vec<String> = POSTGRES.iter().map(hex).collect();
        assert_eq!(sqlite, RECORDED_SQLITE);
        assert_eq!(postgres, RECORDED_POSTGRES);
    }

    const RECORDED_SQLITE: [&str; 28] = [
        "c47c7b2eb67d5e6075beb55d5ec9b6aab0fadeb5e17dbed4a0a3ff5d1841f976ee78d2dc998defa8b51914ed040606df",
        "fc545267339f4702c55cdcf7387bfb8f720ece73941bd8f9500c1239cdc4ce0e7c1be58e3fa42f9b52ce0722560e111b",
        "53daf129d56a90b9a0fb160c2307bada5e1e9371d8705ff47eb20ddf458fb3cc35ead9caffa5cc6c823637003b036ce3",
        "06a31fed69a773a1ee3dbe79ed9b530449250617732a281b0954e8022ddf5619ffc4f16251ac927e8e260fe62462e44d",
        "5114c03a042ab0d23866609ec1d075fcd9de96f799b64d1b5529e3a343ff0f85c1fdc5a74734b926d2586626b3c7874b",
        "bf7a2045ff8e855365b7d3a564026b2719fa4a279524965ec80efc2ea67365c0f86fd2f50d7d8377157fea10bf12e1fb",
        "ba1c1e9e155c0f0acb5f4be9a8218862124f67407949f55c0b8b68dd08cd5491ed0e6598b199d1ac953c966224259c82",
        "5fbf32f28ec194e469ebe632872499c930d98c909729045b86352a4639716bce0a887ef9dd2f56d4ba607d066db7c969",
        "d8a042bdb58d8deba605044782ee87417e24fb02ed24a3b42cce27e535779db38b5e48b9ead8ad1781229c405fde107c",
        "39be24d67b8b6e26b1fcf79945d063776945d8bc1cbce8a797d9f47cc7a26e8bc4c5d53b4c3c7cb16f88a3e614f848d2",
        "afc59d7fbf18316f1d012fe64aee65f0ff79019caea96f3fdf71ef7568e28ea8f6afcee62d029986bccbc39ffe1b3e60",
        "f42ffa1b62988d704e3e5aa642c173dbf59317c2d88eadc4266d14572198453313f4d8da4824373d413b7a5de9186d9a",
        "5a6144ef69aa0105dcbe246e316d22f88bcec8c5bf0ea9d952c47afaf92f87e03c8f568f30a37b559a57f3e5e8cd7cfd",
        "e61654ef0e87ddd5e47a8f530f7ac9346ec6856fb2bf07d28641853c9005203d4350388f083ada4fb795f357c6874753",
        "05b7d121c0ecd80a32b99f313d3d2fcf29f159ece829d7cb4a66bacfc6759ff1771845dd6755aae7e37e56ebe9476ee0",
        "e9f80a440b6bf2b9aff4c3efdf56ac05d930b1c5e5a1337d5878f8e909f7fae8baebbd6f3b2b9647ab865f808fc25b29",
        "1a0eebe5177c305731b38f62356b443fef55e98b608f83cab35e311191e779e247bd6395110afacea5289d155659803e",
        "5abb0cf322e928cbb4aa024c8ba5eadf14f02addd470c16fb18fce6aabaafd801ec4795a968732978ed3ccf07dd182af",
        "cbe325b8af9407ee50a58a82e42dbb6d007a445b62d47830d9e1506b7392621a83dc411d7b7f71ef6ce216118d643100",
        "3ac05ea487d03b003249f734d3ae9dba3de9221f775209bb9b8578eae4a591b165ab61d0d2e92fea2a372f8946780c86",
        "55c139a2f984d30ea29e55d0e36c1942efa2717def731228c396e257e00b856555a7e3cc293cf366b54ff3593420babc",
        "a2fed8d92e3e6d7a3d86af9b0148c3ddd0f98a94e89890d070b851a8f0cc548deaab0c9bb7d9d1554115af70c1e959f4",
        "47bbec2813009b8e205ae05ff7b78f6b15f97b353658a685960ddbe67e57f411ac67a927f1cfad2b964901964606b8b4",
        "732fe4bae5d034784efecbb9e1935f3f25c8bc1c4af6c1ac34ced44b592f882ad8beecf8917a88f9e00a6d6fd1638963",
        "e19da8d1be5fbed70714b49f44936da89202056ef42a484e835be0c2b1276091e2de3d6668bcf1945a050b8f113f6c2f",
        "49df0f7ac4ce74295d647e7848d168ed383b378165de61e52843bbeeaef9bf0b31d79744c6a9601343972db6448b349a",
        "ed90c103693936725e533f180eb9cef454ab92e83e7b441f7983c34d5470c11480426c6c8949bc86ee355381abe4afd1",
        "587d02a00d6c82a0ea2b1ab6a2069ebcf3a04a512a8d55e0cb24f159cf4b95367b55aea5c10f4213101ff18c7fe6e482",
    ];

    const RECORDED_POSTGRES: [&str; 28] = [
        "a310766a893f218cda81d192a0f2f8624956b837d5b22624efcf3d3fc6f4281b4b8c109f6024bb27cd1b1f2238d3b29f",
        "fc545267339f4702c55cdcf7387bfb8f720ece73941bd8f9500c1239cdc4ce0e7c1be58e3fa42f9b52ce0722560e111b",
        "53daf129d56a90b9a0fb160c2307bada5e1e9371d8705ff47eb20ddf458fb3cc35ead9caffa5cc6c823637003b036ce3",
        "31e6047560b590956caa37d032db46b84e3319e3ebe3b822d76c50b9de04d434614a4bd8675a3149d38a361259d6d003",
        "b3db8a1b3ffb825e309fb808e5a8b4b371157a449b30967cd37a9e9a6bf2292cfffa42c239aa7ea7cb0610a0ee7a24fe",
        "bf7a2045ff8e855365b7d3a564026b2719fa4a279524965ec80efc2ea67365c0f86fd2f50d7d8377157fea10bf12e1fb",
        "ba1c1e9e155c0f0acb5f4be9a8218862124f67407949f55c0b8b68dd08cd5491ed0e6598b199d1ac953c966224259c82",
        "5fbf32f28ec194e469ebe632872499c930d98c909729045b86352a4639716bce0a887ef9dd2f56d4ba607d066db7c969",
        "d8a042bdb58d8deba605044782ee87417e24fb02ed24a3b42cce27e535779db38b5e48b9ead8ad1781229c405fde107c",
        "39be24d67b8b6e26b1fcf79945d063776945d8bc1cbce8a797d9f47cc7a26e8bc4c5d53b4c3c7cb16f88a3e614f848d2",
        "afc59d7fbf18316f1d012fe64aee65f0ff79019caea96f3fdf71ef7568e28ea8f6afcee62d029986bccbc39ffe1b3e60",
        "f42ffa1b62988d704e3e5aa642c173dbf59317c2d88eadc4266d14572198453313f4d8da4824373d413b7a5de9186d9a",
        "5a6144ef69aa0105dcbe246e316d22f88bcec8c5bf0ea9d952c47afaf92f87e03c8f568f30a37b559a57f3e5e8cd7cfd",
        "e61654ef0e87ddd5e47a8f530f7ac9346ec6856fb2bf07d28641853c9005203d4350388f083ada4fb795f357c6874753",
        "05b7d121c0ecd80a32b99f313d3d2fcf29f159ece829d7cb4a66bacfc6759ff1771845dd6755aae7e37e56ebe9476ee0",
        "e9f80a440b6bf2b9aff4c3efdf56ac05d930b1c5e5a1337d5878f8e909f7fae8baebbd6f3b2b9647ab865f808fc25b29",
        "1a0eebe5177c305731b38f62356b443fef55e98b608f83cab35e311191e779e247bd6395110afacea5289d155659803e",
        "5abb0cf322e928cbb4aa024c8ba5eadf14f02addd470c16fb18fce6aabaafd801ec4795a968732978ed3ccf07dd182af",
        "cbe325b8af9407ee50a58a82e42dbb6d007a445b62d47830d9e1506b7392621a83dc411d7b7f71ef6ce216118d643100",
        "3ac05ea487d03b003249f734d3ae9dba3de9221f775209bb9b8578eae4a591b165ab61d0d2e92fea2a372f8946780c86",
        "55c139a2f984d30ea29e55d0e36c1942efa2717def731228c396e257e00b856555a7e3cc293cf366b54ff3593420babc",
        "a2fed8d92e3e6d7a3d86af9b0148c3ddd0f98a94e89890d070b851a8f0cc548deaab0c9bb7d9d1554115af70c1e959f4",
        "47bbec2813009b8e205ae05ff7b78f6b15f97b353658a685960ddbe67e57f411ac67a927f1cfad2b964901964606b8b4",
        "732fe4bae5d034784efecbb9e1935f3f25c8bc1c4af6c1ac34ced44b592f882ad8beecf8917a88f9e00a6d6fd1638963",
        "e19da8d1be5fbed70714b49f44936da89202056ef42a484e835be0c2b1276091e2de3d6668bcf1945a050b8f113f6c2f",
        "36c1425b07cb7f7d504ba805039e829aaa065b17d5c4f1e63b3ebb707db46090676464780c01140035d9eea962c3051d",
        "ed90c103693936725e533f180eb9cef454ab92e83e7b441f7983c34d5470c11480426c6c8949bc86ee355381abe4afd1",
        "587d02a00d6c82a0ea2b1ab6a2069ebcf3a04a512a8d55e0cb24f159cf4b95367b55aea5c10f4213101ff18c7fe6e482",
    ];
}
