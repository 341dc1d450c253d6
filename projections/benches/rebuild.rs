//! Rebuild throughput of the read models: a workload log (every aggregate, see
//! `agentlog_workload`) is loaded into a fresh log, then each projection alone and
//! then all of them together are rebuilt from position 0; events/s counts every event of the log
//! (a projection skips the types it does not handle, which is part of its cost).
//!
//! Run: `cargo bench -p agentlog-projections --bench rebuild`
//! - `AGENTLOG_BENCH_EVENTS` (default 100000): the log's size (1000000 works, slowly);
//! - `AGENTLOG_BENCH_ONLY=together`: skip the one-projection-at-a-time runs;
//! - PostgreSQL runs when `AGENTLOG_BENCH_PG_URL` or `AGENTLOG_TEST_PG_URL` names a server
//!   (a fresh database is created on it and dropped after), SQLite always (a temp file).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentlog_eventlog::{
    EventFilter, EventStore, PostgresEventStore, SqliteEventStore, StoreOptions,
    testing::{TempPostgres, TempSqlite},
};
use agentlog_projections::{ProjectionRunner, ReadDb, RunnerOptions, all_projections};
use agentlog_workload::{Workload, WorkloadConfig};

type BoxError = Box<dyn std::error::Error>;

/// Events per batch (and per page read from the log).
const BATCH: usize = 5_000;

fn options() -> RunnerOptions {
    RunnerOptions { batch_size: BATCH, retry_delay: Duration::from_millis(100), ..RunnerOptions::default() }
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

/// Read the whole log in pages of `BATCH` with no projection: the floor of any rebuild.
async fn read_floor(store: &dyn EventStore, head: i64) -> Result<(), BoxError> {
    let start = Instant::now();
    let mut after = 0;
    while after < head {
        let page = store.read_all(after, &EventFilter::all(), BATCH).await?;
        let Some(last) = page.last() else { break };
        after = last.position;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("  {:<16} {secs:>10.2} {:>12.0}", "(read the log)", head as f64 / secs);
    Ok(())
}

/// Rebuild each projection alone, then all together; print events/s.
async fn rebuild_all(store: Arc<dyn EventStore>, head: i64) -> Result<(), BoxError> {
    let db = ReadDb::from(store.database());
    println!("  {:<16} {:>10} {:>12}", "projection", "seconds", "events/s");
    read_floor(store.as_ref(), head).await?;
    let alone = std::env::var("AGENTLOG_BENCH_ONLY").map_or(true, |v| v != "together");
    for projection in all_projections().into_iter().filter(|_| alone) {
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
    // Where the time of the run with every projection went.
    let t = runner.timings();
    let s = |micros: u64| micros as f64 / 1e6;
    println!(
        "    of which: waiting for the log {:.2} s, in apply {:.2} s, checkpoint + commit {:.2} s ({} batches)",
        s(t.read_wait_micros),
        s(runner.status().iter().map(|p| p.apply_micros).sum()),
        s(t.commit_micros),
        t.batches
    );
    for p in runner.status() {
        println!("    apply {:<16} {:>8.2} s  {:>8} events", p.name, s(p.apply_micros), p.applied_events);
    }
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
