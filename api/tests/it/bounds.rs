//! Bounds one request (or one anonymous client) cannot pass: the database's statement timeout,
//! anonymous websockets, the answer-size bound on subscriptions, and introspection's depth.
//! RELIABILITY.md, "Hostile requests", lists them with the other probes.

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::{Connection, Executor, PgConnection, Row};

use crate::support::{Db, Server, error_code};

const START: &str =
    "mutation($i: StartOperationInput!, $r: String) { startOperation(input: $i, requestId: $r) { position } }";

/// The longest any statement of this database has been waiting on a lock, other than `me`'s.
async fn longest_lock_wait(me: &mut PgConnection) -> f64 {
    let row = me
        .fetch_one(
            "SELECT COALESCE(MAX(EXTRACT(EPOCH FROM now() - query_start)), 0)::float8 FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active' \
             AND wait_event_type = 'Lock'",
        )
        .await
        .expect("pg_stat_activity");
    row.get(0)
}

/// PostgreSQL cancels a statement past `--statement-timeout-ms`: a read blocked in the database
/// answers LIMIT at that bound (not at the query timeout), no statement of the server keeps
/// waiting (its connection is free again), and a mutation whose append is held answers LIMIT,
/// writes nothing, and succeeds when sent again with the same requestId.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_cancels_a_statement_past_the_statement_timeout() {
    let Some(db) = Db::postgres("the_database_cancels_a_statement_past_the_statement_timeout").await else { return };
    let url = db.url();
    let s = Server::start_with(db, &["--statement-timeout-ms", "500", "--query-timeout-ms", "60000"]).await;
    let alice = s.user_token("alice").await;
    let op = |id: &str| json!({"operationId": id, "kind": "TASK", "agentId": "inbox"});
    s.data(Some(&alice), START, json!({"i": op("before"), "r": null})).await;

    // Another client holds the operations table: the server's read waits on its lock.
    let mut holder = PgConnection::connect(&url).await.expect("connect");
    holder.execute("BEGIN; LOCK TABLE operations IN ACCESS EXCLUSIVE MODE").await.expect("lock");
    let mut watcher = PgConnection::connect(&url).await.expect("connect");
    let t = Instant::now();
    let read = "{ operations(first: 5) { edges { node { id } } } }";
    let r = tokio::time::timeout(Duration::from_secs(10), s.gql(Some(&alice), read, json!({})))
        .await
        .expect("the blocked read answers within 10 s, long before the 60 s query timeout");
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    assert!(t.elapsed() < Duration::from_secs(5), "answered after {:?}", t.elapsed());
    // Whatever the server retries meanwhile (projections, tailer), none of its statements
    // waits on the lock for much longer than the statement timeout.
    for _ in 0..10 {
        let waited = longest_lock_wait(&mut watcher).await;
        assert!(waited < 2.0, "a server statement has waited {waited} s on the lock");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    holder.execute("ROLLBACK").await.expect("unlock");

    // The log held: the append is cancelled, answered LIMIT, and nothing of it is written.
    holder.execute("BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE").await.expect("lock the log");
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        s.gql(Some(&alice), START, json!({"i": op("held"), "r": "req-held"})),
    )
    .await
    .expect("the held append answers");
    assert_eq!(error_code(&r).as_deref(), Some("LIMIT"), "{r}");
    holder.execute("ROLLBACK").await.expect("unlock");
    let written: i64 =
        watcher.fetch_one("SELECT COUNT(*) FROM events WHERE stream_id LIKE '%held%'").await.expect("count").get(0);
    assert_eq!(written, 0, "a cancelled append wrote events");
    s.data(Some(&alice), START, json!({"i": op("held"), "r": "req-held"})).await;
    let r = s.data(Some(&alice), read, json!({})).await;
    assert_eq!(r["operations"]["edges"].as_array().map(Vec::len), Some(2), "{r}");
    s.stop();
}
