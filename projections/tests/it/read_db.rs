//! The portable read-model layer on both backends: a statement first run with NULLs keeps
//! working with values of the columns' real types (PostgreSQL caches prepared statements by SQL
//! text, with the parameter types of their first use), and bulk upserts round-trip.

use agentlog_eventlog::{
    BackendKind, StoreOptions,
    testing::{TestLog, reopen},
};
use agentlog_projections::{ReadDb, SqlValue};

async fn nulls_do_not_type_a_cached_statement(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_nulls (id BIGINT PRIMARY KEY, a TEXT, b BIGINT, c DOUBLE PRECISION)", &[])
        .await
        .unwrap();
    let insert = "INSERT INTO t_nulls (id, a, b, c) VALUES ($1, $2, $3, $4)";
    let rows: [[SqlValue; 4]; 4] = [
        [1.into(), SqlValue::Null, SqlValue::Null, SqlValue::Null],
        [2.into(), "x".into(), 7.into(), 1.5.into()],
        [3.into(), SqlValue::Null, 8.into(), SqlValue::Null],
        [4.into(), "y".into(), SqlValue::Null, 2.5.into()],
    ];
    for _ in 0..2 {
        // the pool may hand out another connection: repeat so every statement is cached
        db.execute("DELETE FROM t_nulls", &[]).await.unwrap();
        for row in &rows {
            db.execute(insert, row).await.unwrap();
        }
    }
    let mut tx = db.begin().await.unwrap();
    let columns = ["id", "a", "b", "c"];
    tx.upsert("t_nulls", &columns, &["id"], &[vec![2.into(), SqlValue::Null, SqlValue::Null, SqlValue::Null]])
        .await
        .unwrap();
    tx.upsert("t_nulls", &columns, &["id"], &[vec![3.into(), "z".into(), 9.into(), 3.5.into()]]).await.unwrap();
    tx.commit().await.unwrap();
    let got = db.fetch("SELECT id, a, b, c FROM t_nulls ORDER BY id", &[]).await.unwrap();
    let got: Vec<Vec<SqlValue>> = got.into_iter().map(|r| r.0).collect();
    assert_eq!(
        got,
        vec![
            vec![1.into(), SqlValue::Null, SqlValue::Null, SqlValue::Null],
            vec![2.into(), SqlValue::Null, SqlValue::Null, SqlValue::Null],
            vec![3.into(), "z".into(), 9.into(), 3.5.into()],
            vec![4.into(), "y".into(), SqlValue::Null, 2.5.into()],
        ]
    );
}

both!(nulls_do_not_type_a_cached_statement as read_db_nulls_do_not_type_statements);

/// Bulk upserts (PostgreSQL: one `UNNEST` statement; SQLite: a one-row statement per row): thousands of
/// rows, a float column that also receives integers, a column that is NULL in every row, and a
/// second upsert of the same keys replacing every non-key column.
async fn bulk_upserts_round_trip(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_bulk (id TEXT PRIMARY KEY, n INTEGER, x DOUBLE PRECISION, note TEXT, gone BIGINT)", &[])
        .await
        .unwrap();
    let columns = ["id", "n", "x", "note", "gone"];
    let rows = |round: i64| -> Vec<Vec<SqlValue>> {
        (0..5_000i64)
            .map(|i| {
                vec![
                    format!("row-{i}").into(),
                    (i * round).into(),
                    if i % 2 == 0 { SqlValue::Int(i) } else { SqlValue::Float(i as f64 + 0.5) },
                    if i % 3 == 0 { SqlValue::Null } else { format!("note {i}/{round}").into() },
                    SqlValue::Null,
                ]
            })
            .collect()
    };
    for round in 1..=2 {
        let mut tx = db.begin().await.unwrap();
        tx.upsert("t_bulk", &columns, &["id"], &rows(round)).await.unwrap();
        tx.commit().await.unwrap();
    }
    let got = db.fetch("SELECT COUNT(*), SUM(n), SUM(x), COUNT(note), COUNT(gone) FROM t_bulk", &[]).await.unwrap();
    let r = &got[0];
    assert_eq!(r.i64(0), Some(5_000));
    assert_eq!(r.i64(1), Some((0..5_000i64).map(|i| i * 2).sum::<i64>()));
    let x: f64 = (0..5_000i64).map(|i| if i % 2 == 0 { i as f64 } else { i as f64 + 0.5 }).sum();
    assert_eq!(r.f64(2), Some(x));
    assert_eq!(r.i64(3), Some((0..5_000).filter(|i| i % 3 != 0).count() as i64));
    assert_eq!(r.i64(4), Some(0));
    let one = db.fetch("SELECT note FROM t_bulk WHERE id = $1", &["row-4".into()]).await.unwrap();
    assert_eq!(one[0].str(0), Some("note 4/2"));
}

both!(bulk_upserts_round_trip as read_db_bulk_upserts_round_trip);

/// Many rows at once (PostgreSQL: one array of the table's row type) and the same rows a few at
/// a time (one array per column) write the same table: integers into INTEGER and DOUBLE
/// PRECISION columns, floats, text, NULLs, a column left to its default; and a value that does
/// not fit the row type's field (text in a numeric column) still goes by the other way.
async fn many_rows_or_few_write_the_same(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    for t in ["t_many", "t_few"] {
        db.execute(
            &format!(
                "CREATE TABLE {t} (id TEXT PRIMARY KEY, n INTEGER, x DOUBLE PRECISION, note TEXT, big BIGINT, \
                 kept TEXT NOT NULL DEFAULT 'default')"
            ),
            &[],
        )
        .await
        .unwrap();
    }
    let columns = ["id", "n", "x", "note", "big"];
    let rows: Vec<Vec<SqlValue>> = (0..1_000i64)
        .map(|i| {
            vec![
                format!("row-{i}").into(),
                if i % 7 == 0 { SqlValue::Null } else { (i - 500).into() },
                if i % 2 == 0 { SqlValue::Int(i * 1_000_003) } else { SqlValue::Float(i as f64 / 3.0) },
                if i % 3 == 0 { SqlValue::Null } else { format!("note \u{e9} {i}").into() },
                SqlValue::Int(i64::MAX - i),
            ]
        })
        .collect();
    let mut tx = db.begin().await.unwrap();
    tx.upsert("t_many", &columns, &["id"], &rows).await.unwrap();
    for chunk in rows.chunks(50) {
        tx.upsert("t_few", &columns, &["id"], chunk).await.unwrap();
    }
    tx.commit().await.unwrap();
    let all = |t: &str| format!("SELECT id, n, x, note, big, kept FROM {t} ORDER BY id");
    let (many, few) = (db.fetch(&all("t_many"), &[]).await.unwrap(), db.fetch(&all("t_few"), &[]).await.unwrap());
    assert_eq!(many.len(), 1_000);
    assert_eq!(many, few);
    assert_eq!(many[0].str(5), Some("default"));

    // Text into the INTEGER column: not a field of the row type, so the arrays per column carry
    // it and the database's own rules decide (PostgreSQL refuses it).
    let mut odd = rows.clone();
    odd[3][1] = "12".into();
    let mut tx = db.begin().await.unwrap();
    let mixed = tx.upsert("t_many", &columns, &["id"], &odd).await;
    if tx.is_postgres() {
        assert!(mixed.is_err(), "a text value in an INTEGER column is refused as before");
    } else {
        mixed.unwrap();
    }
}

both!(many_rows_or_few_write_the_same as read_db_many_rows_or_few_write_the_same);

/// A transaction dropped before its commit writes nothing, and the next one begins and commits
/// (SQLite: on the same writer connection, which must not be left inside a transaction).
async fn a_dropped_transaction_writes_nothing(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_drop (id BIGINT PRIMARY KEY, v TEXT)", &[]).await.unwrap();
    {
        let mut tx = db.begin().await.unwrap();
        tx.upsert("t_drop", &["id", "v"], &["id"], &[vec![1.into(), "lost".into()]]).await.unwrap();
    }
    let mut tx = db.begin().await.unwrap();
    tx.upsert("t_drop", &["id", "v"], &["id"], &[vec![2.into(), "kept".into()]]).await.unwrap();
    tx.rollback().await.unwrap();
    let mut tx = db.begin().await.unwrap();
    tx.upsert("t_drop", &["id", "v"], &["id"], &[vec![3.into(), "kept".into()]]).await.unwrap();
    tx.commit().await.unwrap();
    let got = db.fetch("SELECT id, v FROM t_drop ORDER BY id", &[]).await.unwrap();
    assert_eq!(got.into_iter().map(|r| r.0).collect::<Vec<_>>(), vec![vec![3.into(), "kept".into()]]);
}

both!(a_dropped_transaction_writes_nothing as read_db_dropped_transaction_writes_nothing);

/// A write outside a transaction waits for the transaction in flight and then runs (SQLite:
/// both on the writer, so it neither fails busy nor holds a thread in SQLite's busy wait), and
/// a query meanwhile sees the last committed state.
async fn a_write_outside_waits_for_the_transaction(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_wait (id BIGINT PRIMARY KEY, v BIGINT)", &[]).await.unwrap();
    let mut tx = db.begin().await.unwrap();
    tx.upsert("t_wait", &["id", "v"], &["id"], &[vec![1.into(), 1.into()]]).await.unwrap();
    let outside = {
        let db = db.clone();
        tokio::spawn(async move {
            db.execute(
                "INSERT INTO t_wait (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = 2",
                &[1.into(), 3.into()],
            )
            .await
        })
    };
    let seen = db.fetch("SELECT COUNT(*) FROM t_wait", &[]).await.unwrap();
    assert_eq!(seen[0].i64(0), Some(0), "a query sees only what is committed");
    tx.commit().await.unwrap();
    outside.await.unwrap().unwrap();
    let got = db.fetch("SELECT v FROM t_wait WHERE id = 1", &[]).await.unwrap();
    assert_eq!(got[0].i64(0), Some(2), "the outside write ran after the transaction committed");
}

both!(a_write_outside_waits_for_the_transaction as read_db_write_outside_waits_for_the_transaction);

/// Far more distinct statements than a connection keeps prepared (each `IN` list of another
/// length is another text), inside one transaction and outside: every one answers right.
/// Read-model transactions commit without waiting for the disk (their rows are rebuilt from the
/// log after a crash); a write outside one stays durable (API tokens are not in the log). Each
/// records the setting it ran with, through the writer's own connection.
async fn read_model_commits_do_not_wait_for_the_disk(log: TestLog) {
    let store = if log.store.backend_kind() == BackendKind::Postgres {
        // The shared test server runs with synchronous_commit off; this database's sessions
        // get it on, so a write outside a transaction shows the durable setting.
        log.raw
            .execute(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$",
            )
            .await
            .unwrap();
        reopen(&log.guard, StoreOptions::default()).await
    } else {
        log.store.clone()
    };
    let db = ReadDb::from(store.database());
    db.execute("CREATE TABLE t_sync (k TEXT, v TEXT)", &[]).await.unwrap();
    let (record, durable, derived) = if db.is_postgres() {
        ("INSERT INTO t_sync (k, v) SELECT $1, current_setting('synchronous_commit')", "on", "off")
    } else {
        ("INSERT INTO t_sync (k, v) SELECT $1, synchronous FROM pragma_synchronous", "2", "1")
    };
    for round in 0..2 {
        db.execute(record, &[format!("outside-{round}").into()]).await.unwrap();
        let mut tx = db.begin().await.unwrap();
        tx.execute(record, &[format!("inside-{round}").into()]).await.unwrap();
        tx.commit().await.unwrap();
    }
    let got = db.fetch("SELECT k, v FROM t_sync ORDER BY k", &[]).await.unwrap();
    let got: Vec<(String, String)> =
        got.iter().map(|r| (r.str(0).unwrap().to_string(), r.str(1).unwrap().to_string())).collect();
    let want = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        got,
        vec![
            want("inside-0", derived),
            want("inside-1", derived),
            want("outside-0", durable),
            want("outside-1", durable),
        ]
    );
}

both!(read_model_commits_do_not_wait_for_the_disk as read_db_read_model_commits_do_not_wait_for_the_disk);

async fn many_distinct_statements(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_many (id BIGINT PRIMARY KEY)", &[]).await.unwrap();
    let mut tx = db.begin().await.unwrap();
    let ids: Vec<Vec<SqlValue>> = (1..=700i64).map(|i| vec![i.into()]).collect();
    tx.upsert("t_many", &["id"], &["id"], &ids).await.unwrap();
    for n in 1..=700usize {
        let list: Vec<String> = (1..=n).map(|i| format!("${i}")).collect();
        let args: Vec<SqlValue> = (1..=n as i64).map(SqlValue::from).collect();
        let sql = format!("SELECT COUNT(*) FROM t_many WHERE id IN ({})", list.join(", "));
        assert_eq!(tx.fetch(&sql, &args).await.unwrap()[0].i64(0), Some(n as i64));
    }
    tx.commit().await.unwrap();
    for n in [1usize, 600, 700] {
        let list: Vec<String> = (1..=n).map(|i| format!("${i}")).collect();
        let args: Vec<SqlValue> = (1..=n as i64).map(SqlValue::from).collect();
        let sql = format!("SELECT COUNT(*) FROM t_many WHERE id IN ({})", list.join(", "));
        assert_eq!(db.fetch(&sql, &args).await.unwrap()[0].i64(0), Some(n as i64));
    }
}

both!(many_distinct_statements as read_db_many_distinct_statements);

/// SQLite: what the read models' own connections write is stored as sqlx stores it — integers
/// as INTEGER, floats as REAL, text as TEXT (digits included), NULL as NULL — and read back the
/// same, a BLOB as NULL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_values_keep_their_storage_types() {
    let log = agentlog_eventlog::testing::sqlite_log(agentlog_eventlog::StoreOptions::default()).await;
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_types (id BIGINT PRIMARY KEY, i BIGINT, f DOUBLE PRECISION, t TEXT, n TEXT)", &[])
        .await
        .unwrap();
    let mut tx = db.begin().await.unwrap();
    let row = vec![1.into(), 42.into(), 2.5.into(), "007".into(), SqlValue::Null];
    tx.upsert("t_types", &["id", "i", "f", "t", "n"], &["id"], std::slice::from_ref(&row)).await.unwrap();
    tx.commit().await.unwrap();
    let agentlog_eventlog::DatabasePool::Sqlite(pool) = log.store.database() else { unreachable!() };
    let types: (String, String, String, String) =
        sqlx::query_as("SELECT typeof(i), typeof(f), typeof(t), typeof(n) FROM t_types")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(types, ("integer".into(), "real".into(), "text".into(), "null".into()));
    let got = db.fetch("SELECT id, i, f, t, n, x'00ff' FROM t_types", &[]).await.unwrap();
    let mut want = row;
    want.push(SqlValue::Null);
    assert_eq!(got[0].0, want);
}

/// A read snapshot sees every query as of its first one: a commit after it is invisible to the
/// snapshot's later queries (in any table), visible to live reads and to the next snapshot; it
/// refuses writes; and dropping it gives its connection back (more snapshots than may be open
/// at once, one after another, never wait).
async fn a_snapshot_reads_one_moment(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE t_snap_a (id BIGINT PRIMARY KEY, v BIGINT)", &[]).await.unwrap();
    db.execute("CREATE TABLE t_snap_b (id BIGINT PRIMARY KEY, v BIGINT)", &[]).await.unwrap();
    db.execute("INSERT INTO t_snap_a (id, v) VALUES (1, 1)", &[]).await.unwrap();
    db.execute("INSERT INTO t_snap_b (id, v) VALUES (1, 1)", &[]).await.unwrap();
    let snapshots = db.snapshots();
    let value = |rows: Vec<agentlog_projections::Row>| rows[0].i64(0);

    let snapshot = snapshots.take();
    assert_eq!(value(snapshot.fetch("SELECT v FROM t_snap_a WHERE id = $1", &[1.into()]).await.unwrap()), Some(1));
    // Both tables change in one transaction, after the snapshot's first read.
    let mut tx = db.begin().await.unwrap();
    tx.execute("UPDATE t_snap_a SET v = 2", &[]).await.unwrap();
    tx.execute("UPDATE t_snap_b SET v = 2", &[]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        value(snapshot.fetch("SELECT v FROM t_snap_b WHERE id = $1", &[1.into()]).await.unwrap()),
        Some(1),
        "the other table as of the snapshot's first read"
    );
    let mut seen = Vec::new();
    snapshot.for_each_row("SELECT v FROM t_snap_a", &[], |r| seen.push(r.i64(0))).await.unwrap();
    assert_eq!(seen, vec![Some(1)]);
    assert_eq!(value(db.fetch("SELECT v FROM t_snap_b", &[]).await.unwrap()), Some(2), "live reads see the commit");
    assert!(snapshot.execute("UPDATE t_snap_a SET v = 3", &[]).await.is_err(), "a snapshot only reads");
    assert!(snapshot.begin().await.is_err());
    assert_eq!(snapshot.is_postgres(), db.is_postgres());
    let clone = snapshot.clone();
    drop(snapshot);
    assert_eq!(value(clone.fetch("SELECT v FROM t_snap_a", &[]).await.unwrap()), Some(1), "clones share it");
    drop(clone);

    // Dropped snapshots give their connections back: many more than may be open at once.
    for _ in 0..40 {
        let s = snapshots.take();
        assert_eq!(value(s.fetch("SELECT v FROM t_snap_b", &[]).await.unwrap()), Some(2));
    }
    // An untouched snapshot opens nothing.
    let idle: Vec<ReadDb> = (0..100).map(|_| snapshots.take()).collect();
    assert_eq!(value(snapshots.take().fetch("SELECT v FROM t_snap_a", &[]).await.unwrap()), Some(2));
    drop(idle);
}

both!(a_snapshot_reads_one_moment as read_db_snapshot_reads_one_moment);
