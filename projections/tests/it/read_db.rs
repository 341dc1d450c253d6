//! The portable read-model layer on both backends: a statement first run with NULLs keeps
//! working with values of the columns' real types (PostgreSQL caches prepared statements by SQL
//! text, with the parameter types of their first use), and bulk upserts round-trip.

use agentlog_eventlog::testing::TestLog;
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

/// Bulk upserts (PostgreSQL: one `UNNEST` statement; SQLite: chunks of `VALUES`): thousands of
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
