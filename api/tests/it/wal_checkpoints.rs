//! The server's SQLite log checkpoints its WAL on a thread of its own, never in a request's
//! commit (docs/log.md), and `/metrics` counts what that thread did; on PostgreSQL there is no
//! such thread and no such series.

use std::time::Duration;

use serde_json::json;

use crate::support::{Db, Server};

/// The value of the unlabelled series `name`, if present.
fn value(metrics: &str, name: &str) -> Option<u64> {
    metrics.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).and_then(|v| v.parse().ok())
}

async fn checkpoints_run_off_the_commit_path(db: Db) {
    let sqlite = matches!(db, Db::Sqlite(_));
    let s = Server::start(db).await;
    for i in 0..20 {
        s.data(
            Some(&s.admin_token),
            "mutation($t: String!) { createNotification(input: {category: \"x\", type: \"y\", title: $t, body: \"b\"}) { position } }",
            json!({"t": format!("n{i}")}),
        )
        .await;
    }
    if !sqlite {
        let (status, metrics) = s.metrics_text().await;
        assert_eq!(status, 200);
        assert!(!metrics.contains("agentlog_sqlite_wal"), "PostgreSQL has no WAL checkpointer:\n{metrics}");
        return;
    }
    let mut last = String::new();
    for _ in 0..100 {
        let (status, metrics) = s.metrics_text().await;
        assert_eq!(status, 200);
        if value(&metrics, "agentlog_sqlite_wal_checkpointed_frames_total").is_some_and(|f| f > 0) {
            assert!(value(&metrics, "agentlog_sqlite_wal_checkpoints_total").is_some_and(|p| p > 0), "{metrics}");
            assert_eq!(value(&metrics, "agentlog_sqlite_wal_checkpoint_failures_total"), Some(0), "{metrics}");
            return;
        }
        last = metrics;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the checkpointer copied nothing back:\n{last}");
}

both!(checkpoints_run_off_the_commit_path as wal_checkpoints_off_the_commit_path);
