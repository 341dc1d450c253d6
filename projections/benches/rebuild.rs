//! Rebuild throughput of the read models: a workload log (every aggregate, see
//! `agentlog_projections::workload`) is loaded into a fresh log, then each projection alone and
//! then all of them together are rebuilt from position 0; events/s counts every event of the log
//! (a projection skips the types it does not handle, which is part of its cost).
//!
//! Run: `cargo bench -p agentlog-projections --bench rebuild`
//! - `AGENTLOG_BENCH_EVENTS` (default 100000): the log's size (1000000 works, slowly);
//! - PostgreSQL runs when `AGENTLOG_BENCH_PG_URL` or `AGENTLOG_TEST_PG_URL` names a server
//!   (a fresh database is created on it and dropped after), SQLite always (a temp file).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentlog_eventlog::{
    EventStore, PostgresEventStore, SqliteEventStore, StoreOptions,
    testing::{TempPostgres, TempSqlite},
};
use agentlog_projections::{
    ProjectionRunner, ReadDb, RunnerOptions, all_projections,
    workload::{Workload, WorkloadConfig},
};

type BoxError = Box<dyn std::error::Error>;

fn options() -> RunnerOptions {
    RunnerOptions { batch_size: 2_000, retry_delay: Duration::from_millis(100) }
}

/// Load `workload` into `store`, 20 rounds per append. Returns the head.
async fn load(store: &dyn EventStore, workload: &Workload) -> Result<i64, BoxError> {
    let start = Instant::now();
    for batch in workload.batches(20) {
        store.append_multi(batch).await?;
    }
    let head = store.head_position().await?;
    let secs = start.elapsed().as_secs_f64();
    println!("  load: {head} events in {secs:.1} s ({:.0} events/s)", head as f64 / secs);
    Ok(head)
}

/// Rebuild each projection alone, then all together; print events/s.
async fn rebuild_all(store: Arc<dyn EventStore>, head: i64) -> Result<(), BoxError> {
    let db = ReadDb::from(store.database());
    println!("  {:<16} {:>10} {:>12}", "projection", "seconds", "events/s");
    for projection in all_projections() {
        let name = projection.name();
        let runner = ProjectionRunner::new(Arc::clone(&store), db.clone(), vec![projection], options());
        runner.rebuild(Some(name)).await?;
        let start = Instant::now();
        let reached = runner.catch_up().await?;
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(reached, head, "{name} reached the head");
        println!("  {name:<16} {secs:>10.2} {:>12.0}", head as f64 / secs);
    }
    let runner = ProjectionRunner::new(Arc::clone(&store), db, all_projections(), options());
    runner.rebuild(None).await?;
    let start = Instant::now();
    runner.catch_up().await?;
    let secs = start.elapsed().as_secs_f64();
    println!("  {:<16} {secs:>10.2} {:>12.0}", "all together", head as f64 / secs);
    Ok(())
}

async fn run() -> Result<(), BoxError> {
    let events: usize = std::env::var("AGENTLOG_BENCH_EVENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let start = Instant::now();
    let workload = Workload::generate(&WorkloadConfig {
        min_events: events,
        users: (events / 1_000).clamp(6, 400),
        ..WorkloadConfig::default()
    })?;
    println!(
        "workload: {} events, {} streams, {} rounds, generated in {:.1} s",
        workload.stats.events,
        workload.stats.streams,
        workload.stats.rounds,
        start.elapsed().as_secs_f64()
    );

    let file = TempSqlite::new();
    let store: Arc<dyn EventStore> = Arc::new(SqliteEventStore::open(&file.url(), StoreOptions::default()).await?);
    println!("SQLite ({})", file.path.display());
    let head = load(store.as_ref(), &workload).await?;
    rebuild_all(Arc::clone(&store), head).await?;
    store.close().await;

    let pg = std::env::var("AGENTLOG_BENCH_PG_URL").or_else(|_| std::env::var("AGENTLOG_TEST_PG_URL"));
    match pg {
        Ok(url) if !url.is_empty() => {
            let db = TempPostgres::create(&url).await?;
            let store: Arc<dyn EventStore> =
                Arc::new(PostgresEventStore::connect(&db.url, StoreOptions::default()).await?);
            println!("PostgreSQL ({})", db.name);
            let head = load(store.as_ref(), &workload).await?;
            rebuild_all(Arc::clone(&store), head).await?;
            store.close().await;
        }
        _ => println!("PostgreSQL: skipped (set AGENTLOG_BENCH_PG_URL or AGENTLOG_TEST_PG_URL)"),
    }
    Ok(())
}

fn main() -> Result<(), BoxError> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?.block_on(run())
}
