//! Determinism of every read model, on SQLite and PostgreSQL: a realistic workload (every
//! aggregate, 5,000+ events) is appended while the projections follow it live — and the runner
//! is killed between batches and in the middle of one, then restarted from its checkpoints —
//! and the result equals, table by table (order-independent checksums), a rebuild of every
//! projection from position 0 into a fresh database. Then a bulk rebuild of the live tables
//! beside a second instance, and one killed midway, end with the same tables and indexes.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use agentlog_eventlog::testing::TestLog;
use agentlog_projections::{
    DecodedEvent, Projection, ProjectionError, ProjectionRunner, ReadDb, ReadTx, RunnerOptions, all_projections,
    checksum::{TableChecksum, table_checksums},
};
use agentlog_workload::{Workload, WorkloadConfig};
use async_trait::async_trait;
use tokio::sync::Notify;

const WAIT: Duration = Duration::from_secs(60);

/// A projection that hangs (holding the batch's transaction open) on its `trip_at`-th apply,
/// so the test can kill the runner in the middle of a batch.
struct Tripwire {
    inner: Arc<dyn Projection>,
    calls: Arc<AtomicUsize>,
    trip_at: usize,
    tripped: Arc<Notify>,
}

#[async_trait]
impl Projection for Tripwire {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn version(&self) -> i32 {
        self.inner.version()
    }
    fn tables(&self) -> &'static [&'static str] {
        self.inner.tables()
    }
    fn handles(&self, event_type: &str) -> bool {
        self.inner.handles(event_type)
    }
    fn bulk_kept_indexes(&self) -> &'static [&'static str] {
        self.inner.bulk_kept_indexes()
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        // The projections before this one have written into the open transaction already.
        self.inner.apply(tx, events).await?;
        if self.calls.fetch_add(1, Ordering::SeqCst) == self.trip_at {
            self.tripped.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// The workload, generated once for both backends.
fn workload() -> &'static Workload {
    static WORKLOAD: std::sync::OnceLock<Workload> = std::sync::OnceLock::new();
    WORKLOAD
        .get_or_init(|| Workload::generate(&WorkloadConfig { min_events: 5_000, ..WorkloadConfig::default() }).unwrap())
}

fn runner(log: &TestLog, db: &ReadDb, projections: Vec<Arc<dyn Projection>>, batch_size: usize) -> ProjectionRunner {
    let options = RunnerOptions { batch_size, retry_delay: Duration::from_millis(20), ..RunnerOptions::default() };
    ProjectionRunner::new(Arc::clone(&log.store), db.clone(), projections, options)
}

fn all_tables() -> Vec<&'static str> {
    all_projections().iter().flat_map(|p| p.tables().iter().copied()).collect()
}

async fn checksums(db: &ReadDb) -> BTreeMap<String, TableChecksum> {
    table_checksums(db, &all_tables()).await.unwrap()
}

async fn live_with_kills_equals_rebuild(log: TestLog, fresh: TestLog) {
    let workload = workload();
    assert!(workload.stats.events >= 5_000 && workload.stats.refused.is_empty());
    let db = ReadDb::from(log.store.database());
    // eight rounds per append: a realistic log, loaded in a reasonable time by a debug build
    let batches = workload.batches(8);
    let n = batches.len();
    let append = |range: std::ops::Range<usize>| {
        let store = Arc::clone(&log.store);
        let batches = batches[range].to_vec();
        async move {
            for batch in batches {
                store.append_multi(batch).await.unwrap();
            }
            store.head_position().await.unwrap()
        }
    };
    let (a, b, c) = (n / 4, n / 2, 3 * n / 4);

    // 1. live: the runner follows while the first quarter is appended
    let live = runner(&log, &db, all_projections(), 500);
    live.start().await.unwrap();
    let head = append(0..a).await;
    live.wait_for(head, WAIT).await.unwrap();

    // 2. killed between batches (caught up), more appended while it is down, restarted
    assert!(live.stop().await);
    let head = append(a..b).await;
    let restarted = runner(&log, &db, all_projections(), 300);
    restarted.start().await.unwrap();
    let head2 = append(b..c).await;
    restarted.wait_for(head2, WAIT).await.unwrap();
    assert!(head2 > head);
    restarted.stop().await;

    // 3. killed inside a batch: the last projection hangs on its third batch with the batch's
    //    transaction open (the others' writes in it); the runner is aborted there
    let head = append(c..n).await;
    let tripped = Arc::new(Notify::new());
    let mut projections = all_projections();
    let last = projections.pop().unwrap();
    projections.push(Arc::new(Tripwire {
        inner: last,
        calls: Arc::new(AtomicUsize::new(0)),
        trip_at: 2,
        tripped: Arc::clone(&tripped),
    }));
    let crashing = runner(&log, &db, projections, 97);
    crashing.start().await.unwrap();
    tokio::time::timeout(WAIT, tripped.notified()).await.expect("the tripwire was reached");
    assert!(crashing.position() < head, "killed before the end");
    assert!(crashing.stop().await);

    // 4. restarted once more from the checkpoints, it finishes
    let last_runner = runner(&log, &db, all_projections(), 500);
    last_runner.start().await.unwrap();
    last_runner.wait_for(head, WAIT).await.unwrap();
    last_runner.stop().await;
    assert!(
        last_runner.status().iter().all(|s| s.failed.is_none() && s.position == head),
        "{:?}",
        last_runner.status()
    );

    // 5. every projection rebuilt from position 0 into a fresh database, in one go
    let fresh_db = ReadDb::from(fresh.store.database());
    let rebuild = runner(&log, &fresh_db, all_projections(), 2_000);
    assert_eq!(rebuild.catch_up().await.unwrap(), head);

    let (got, want) = (checksums(&db).await, checksums(&fresh_db).await);
    let differ: Vec<String> = want
        .iter()
        .filter(|(t, c)| got.get(*t) != Some(*c))
        .map(|(t, c)| format!("{t}: live {:?} rebuilt {c}", got.get(t).map(ToString::to_string)))
        .collect();
    assert!(differ.is_empty(), "live and rebuilt read models differ:\n{}", differ.join("\n"));
    // the workload reaches every read model
    let empty: Vec<&String> = want.iter().filter(|(_, c)| c.rows == 0).map(|(t, _)| t).collect();
    eprintln!("{} events, {} tables, empty: {empty:?}", workload.stats.events, want.len());
    for table in ["operations", "agents", "groups", "tasks", "task_topics", "briefs", "notifications", "cron_jobs"] {
        assert!(want.get(table).is_some_and(|c| c.rows > 0), "{table} is empty");
    }
    for table in ["conversation_messages", "analytics_rollups", "analytics_agent_rollups", "analytics_fleet_rollups"] {
        assert!(want.get(table).is_some_and(|c| c.rows > 0), "{table} is empty");
    }
    let indexes = secondary_indexes(&fresh_db).await;
    assert!(indexes.len() > 20, "{indexes:?}");
    assert_eq!(secondary_indexes(&db).await, indexes);

    // 6. a bulk rebuild of the live tables (secondary indexes dropped and created again; on
    //    PostgreSQL each projection in its own transaction, all at once) while a second
    //    instance catches up on the same tables: each event is applied once, and the tables and
    //    their indexes equal the rebuild's
    let bulk_options = || RunnerOptions { batch_size: 300, ..RunnerOptions::bulk() };
    let bulk = ProjectionRunner::new(Arc::clone(&log.store), db.clone(), all_projections(), bulk_options());
    let other = runner(&log, &db, all_projections(), 250);
    let mut progress = bulk.watch_position();
    let (rebuilt, caught_up) = tokio::join!(bulk.rebuild_bulk(None), async {
        progress.wait_for(|p| *p > 0).await.unwrap();
        other.catch_up().await
    });
    assert_eq!(rebuilt.unwrap(), head);
    assert_eq!(caught_up.unwrap(), head);
    let statuses: Vec<_> = bulk.status().into_iter().chain(other.status()).collect();
    assert!(statuses.iter().all(|s| s.failed.is_none() && s.position == head), "{statuses:?}");
    assert_same(&checksums(&db).await, &want, "bulk rebuild beside another instance");
    assert_eq!(secondary_indexes(&db).await, indexes, "the indexes are back");
    assert_eq!(dropped_indexes(&db).await, 0);

    // 7. a bulk rebuild killed in the middle of a batch leaves the indexes dropped; the next
    //    runner that starts creates them again, and finishes from the checkpoints
    let tripped = Arc::new(Notify::new());
    let mut projections = all_projections();
    let last = projections.pop().unwrap();
    projections.push(Arc::new(Tripwire {
        inner: last,
        calls: Arc::new(AtomicUsize::new(0)),
        trip_at: 3,
        tripped: Arc::clone(&tripped),
    }));
    let killed = ProjectionRunner::new(Arc::clone(&log.store), db.clone(), projections, bulk_options());
    let rebuilding = tokio::spawn(async move { killed.rebuild_bulk(None).await });
    tokio::time::timeout(WAIT, tripped.notified()).await.expect("the tripwire was reached");
    rebuilding.abort();
    assert!(rebuilding.await.is_err(), "killed");
    let mut kept: Vec<String> =
        all_projections().iter().flat_map(|p| p.bulk_kept_indexes().iter().map(|i| i.to_string())).collect();
    kept.sort();
    assert_eq!(kept.len(), 3);
    assert_eq!(secondary_indexes(&db).await, kept.iter().filter(|i| indexes.contains(i)).cloned().collect::<Vec<_>>());
    assert_eq!(dropped_indexes(&db).await, indexes.len() - kept.len(), "the others dropped while it ran");
    let restarted = runner(&log, &db, all_projections(), 500);
    restarted.start().await.unwrap();
    assert_eq!(secondary_indexes(&db).await, indexes, "created again at start");
    assert_eq!(dropped_indexes(&db).await, 0);
    restarted.wait_for(head, WAIT).await.unwrap();
    restarted.stop().await;
    assert_same(&checksums(&db).await, &want, "after a killed bulk rebuild");
}

fn assert_same(got: &BTreeMap<String, TableChecksum>, want: &BTreeMap<String, TableChecksum>, when: &str) {
    let differ: Vec<String> = want
        .iter()
        .filter(|(t, c)| got.get(*t) != Some(*c))
        .map(|(t, c)| format!("{t}: got {:?} rebuilt {c}", got.get(t).map(ToString::to_string)))
        .collect();
    assert!(differ.is_empty(), "{when}: read models differ from a rebuild:\n{}", differ.join("\n"));
}

/// The plain secondary indexes of the read-model tables, by name.
async fn secondary_indexes(db: &ReadDb) -> Vec<String> {
    let tables: Vec<String> = all_tables().iter().map(|t| format!("'{t}'")).collect();
    let sql = if db.is_postgres() {
        format!(
            "SELECT indexname::TEXT FROM pg_indexes WHERE schemaname = current_schema() AND tablename IN ({}) \
             AND indexdef LIKE 'CREATE INDEX %' ORDER BY 1",
            tables.join(", ")
        )
    } else {
        format!(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ({}) AND sql LIKE 'CREATE INDEX %' \
             ORDER BY 1",
            tables.join(", ")
        )
    };
    db.fetch(&sql, &[]).await.unwrap().iter().map(|r| r.str(0).unwrap().to_string()).collect()
}

async fn dropped_indexes(db: &ReadDb) -> usize {
    db.fetch("SELECT index_name FROM projection_dropped_indexes", &[]).await.unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_with_kills_equals_rebuild_sqlite() {
    let options = agentlog_eventlog::StoreOptions::default();
    let log = agentlog_eventlog::testing::sqlite_log(options.clone()).await;
    let fresh = agentlog_eventlog::testing::sqlite_log(options).await;
    live_with_kills_equals_rebuild(log, fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_with_kills_equals_rebuild_postgres() {
    let options = agentlog_eventlog::StoreOptions::default();
    let name = "live_with_kills_equals_rebuild_postgres";
    let Some(log) = agentlog_eventlog::testing::postgres_log(name, options.clone()).await else { return };
    let Some(fresh) = agentlog_eventlog::testing::postgres_log(name, options).await else { return };
    live_with_kills_equals_rebuild(log, fresh).await;
}
