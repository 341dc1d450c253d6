//! A command that only reads never changes the log's schema: on a log that lacks one of this
//! build's migrations (as a live server of the build before leaves it) every such command is
//! refused, saying why, and leaves the database as it was; `rebuild`, which writes, migrates. A
//! log with a newer build's migration is refused too.

use agentlog_eventlog::testing::{RawDb, TempSqlite};

use crate::{
    both,
    support::{Fixture, json_ok, replay},
};

/// The log as the builds before migration 0040 left it (0040's record gone; on PostgreSQL the
/// columns `jsonb` again).
async fn as_before_0040(raw: &RawDb) {
    raw.execute("DELETE FROM _sqlx_migrations WHERE version >= 40").await.expect("forget 0040 on");
    raw.execute("DROP TABLE budget_spend_rollups").await.expect("undo 0041");
    raw.execute("DROP TABLE server_secrets").await.expect("undo 0042");
    if let RawDb::Postgres(_) = raw {
        raw.execute("ALTER TABLE events ALTER COLUMN payload TYPE jsonb, ALTER COLUMN metadata TYPE jsonb")
            .await
            .expect("jsonb columns");
    }
}

/// The newest migration the log records, and (PostgreSQL) the payload column's type.
async fn schema(raw: &RawDb) -> (i64, Option<String>) {
    let version = raw.scalar_i64("SELECT MAX(version) FROM _sqlx_migrations").await.expect("version");
    let payload = match raw {
        RawDb::Postgres(pool) => Some(
            sqlx::query_scalar(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = 'events'::regclass AND attname = 'payload'",
            )
            .fetch_one(pool)
            .await
            .expect("payload type"),
        ),
        RawDb::Sqlite(_) => None,
    };
    (version, payload)
}

async fn reading_never_migrates(f: Fixture) {
    as_before_0040(&f.log.raw).await;
    let before = schema(&f.log.raw).await;
    assert_eq!(before.0, 39);
    let target = TempSqlite::new();
    let out = std::env::temp_dir().join(format!("agentlog-schema-{}.ndjson", uuid::Uuid::now_v7().simple()));
    let out = out.to_string_lossy().into_owned();
    let root = "01900000-0000-7000-8000-000000000001";
    let readers: [&[&str]; 9] = [
        &["run", "op-1"],
        &["chain", root],
        &["state", "operation-op-1"],
        &["stats"],
        &["export", "-o", &out],
        &["budget-spend"],
        &["budget-crossings", "b1"],
        &["verify"],
        &["copy", &f.url, &target.url()],
    ];
    for args in readers {
        let r = replay(&f.url, args);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{args:?} read an older schema: {stderr}");
        assert!(stderr.contains("lacks this build's migration(s) 40"), "{args:?}: {stderr}");
        assert!(stderr.contains("agentlog serve"), "{args:?} says what to do: {stderr}");
    }
    assert_eq!(schema(&f.log.raw).await, before, "a reading command changed the schema");
    assert!(!std::path::Path::new(&out).exists(), "export wrote a file");

    // Commands that write refuse bad input before they migrate: the schema stays as it was.
    for args in [&["rebuild", "--projection", "nope"][..], &["generate", "--events", "100"][..]] {
        let r = replay(&f.url, args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&r.stderr));
        assert_eq!(schema(&f.log.raw).await, before, "{args:?} migrated before refusing");
    }
    // Arguments that select nothing, refused before anything is opened or written: an existing
    // output file is left as it was.
    std::fs::write(&out, "kept\n").expect("an existing file");
    for args in [
        &["export", "-o", &out, "--from", "10", "--to", "5"][..],
        &["export", "-o", &out, "--since", "2026-11-02", "--until", "2026-11-01"][..],
        &["export", "-o", &out, "--from", "-1"][..],
        &["state", "operation-op-1", "--at", "-1"][..],
        &["run", "op-1", "--at", "-1"][..],
    ] {
        let r = replay(&f.url, args);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&r.stderr));
    }
    assert_eq!(std::fs::read_to_string(&out).expect("the file"), "kept\n", "a refused export kept the file");
    // `verify` that cannot run (no log there) exits 2, apart from the 1 of problems found.
    let missing = replay("sqlite:/nonexistent-agentlog-dir/x.db", &["verify"]);
    assert_eq!(missing.status.code(), Some(2), "{}", String::from_utf8_lossy(&missing.stderr));
    let _ = std::fs::remove_file(&out);

    // `rebuild` writes: it migrates, and the readers read again.
    json_ok(&replay(&f.url, &["--json", "rebuild"]));
    let after = schema(&f.log.raw).await;
    assert_eq!(after.0, 42);
    if after.1.is_some() {
        assert_eq!(after.1.as_deref(), Some("json"));
    }
    json_ok(&replay(&f.url, &["--json", "stats"]));
    json_ok(&replay(&f.url, &["--json", "verify"]));

    // A newer build's migration: the readers refuse, naming it.
    let checksum = if let RawDb::Postgres(_) = &f.log.raw { "'\\x00'::bytea" } else { "X'00'" };
    f.log
        .raw
        .execute(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (9999, 'from the future', TRUE, {checksum}, 0)"
        ))
        .await
        .expect("a newer migration");
    let r = replay(&f.url, &["stats"]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success() && stderr.contains("migration(s) 9999 that this build does not know"), "{stderr}");
}

both!(reading_never_migrates as reading_never_migrates);

/// A database without agentlog's tables (a mistyped database name) is no log to a reader: it is
/// refused, and left without tables (it used to be given the schema and audited as empty).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_without_the_schema_is_no_log() {
    use sqlx::Connection;
    let file = TempSqlite::new();
    let mut conn = sqlx::SqliteConnection::connect(&format!("{}?mode=rwc", file.url())).await.expect("create");
    sqlx::query("CREATE TABLE other (a INTEGER)").execute(&mut conn).await.expect("a table");
    let tables = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'";
    let mut urls = vec![file.url()];
    let pg = match agentlog_eventlog::testing::pg_url("a_database_without_the_schema_is_no_log") {
        Some(admin) => Some(agentlog_eventlog::testing::TempPostgres::create(&admin).await.expect("database")),
        None => None,
    };
    urls.extend(pg.iter().map(|db| db.url.clone()));
    for url in &urls {
        for args in [&["stats"][..], &["verify"], &["run", "op-1"]] {
            let r = replay(url, args);
            let stderr = String::from_utf8_lossy(&r.stderr);
            assert!(!r.status.success() && stderr.contains("holds none of agentlog's tables"), "{args:?}: {stderr}");
        }
    }
    let n: i64 = sqlx::query_scalar(tables).fetch_one(&mut conn).await.expect("count");
    assert_eq!(n, 1, "only the table that was there");
    if let Some(db) = &pg {
        assert_eq!(db.table_count().await.expect("count"), 0, "no tables were made");
    }
}
