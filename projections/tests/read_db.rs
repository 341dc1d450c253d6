//! The portable read-model layer on both backends: a statement first run with NULLs keeps
//! working with values of the columns' real types (PostgreSQL caches prepared statements by SQL
//! text, with the parameter types of their first use).

mod support;

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
