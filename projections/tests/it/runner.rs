//! The projector runner on both backends: catch-up, live follow, read-your-writes, rebuild,
//! version bumps (and an older runner meeting a newer version), restart from checkpoints, and a
//! failing projection isolated from the rest.

use std::{
    sync::{
        Arc,
        atomic::{AtomicI32, Ordering},
    },
    time::Duration,
};

use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
use agentlog_eventlog::{ExpectedVersion, testing::TestLog};
use agentlog_projections::{
    DecodedEvent, Projection, ProjectionError, ProjectionRunner, ReadDb, ReadTx, RunnerOptions, SqlValue,
};
use async_trait::async_trait;
use serde_json::json;
use uuid::Uuid;

fn event(ty: &str) -> NewEvent {
    let id = Uuid::now_v7();
    NewEvent::new(id, ty, json!({"k": 1}), EventMetadata::source(id, Actor::user("u"), "u", "user:u"))
}

/// Counts events per type in a table of its own; refuses `test.poison`.
struct Counter {
    version: AtomicI32,
}

#[async_trait]
impl Projection for Counter {
    fn name(&self) -> &'static str {
        "test_counter"
    }
    fn version(&self) -> i32 {
        self.version.load(Ordering::SeqCst)
    }
    fn tables(&self) -> &'static [&'static str] {
        &["test_counter"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        for e in events {
            if e.event_type == "test.poison" {
                return Err(ProjectionError::Invalid("poisoned".into()));
            }
            tx.execute(
                "INSERT INTO test_counter (event_type, n) VALUES ($1, 1) ON CONFLICT (event_type) DO UPDATE SET n = test_counter.n + 1",
                &[e.event_type.as_str().into()],
            )
            .await?;
        }
        Ok(())
    }
}

/// One row per event, keyed by its id: a batch written with one upsert.
struct Recorded;

#[async_trait]
impl Projection for Recorded {
    fn name(&self) -> &'static str {
        "test_recorded"
    }
    fn version(&self) -> i32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["test_recorded"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let rows: Vec<Vec<SqlValue>> =
            events.iter().map(|e| vec![e.event_id.to_string().into(), e.position.into()]).collect();
        tx.upsert("test_recorded", &["event_id", "position"], &["event_id"], &rows).await
    }
}

async fn setup(log: &TestLog) -> (ReadDb, Arc<Counter>) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE test_counter (event_type TEXT PRIMARY KEY, n BIGINT NOT NULL)", &[]).await.unwrap();
    db.execute("CREATE TABLE test_recorded (event_id TEXT PRIMARY KEY, position BIGINT NOT NULL)", &[]).await.unwrap();
    (db, Arc::new(Counter { version: AtomicI32::new(1) }))
}

fn runner(log: &TestLog, db: &ReadDb, counter: &Arc<Counter>) -> ProjectionRunner {
    ProjectionRunner::new(
        Arc::clone(&log.store),
        db.clone(),
        vec![Arc::new(Recorded), Arc::clone(counter) as Arc<dyn Projection>],
        RunnerOptions { batch_size: 64, retry_delay: Duration::from_millis(50), ..RunnerOptions::default() },
    )
}

async fn count(db: &ReadDb, ty: &str) -> i64 {
    db.fetch("SELECT n FROM test_counter WHERE event_type = $1", &[ty.into()])
        .await
        .unwrap()
        .first()
        .and_then(|r| r.i64(0))
        .unwrap_or(0)
}

async fn recorded(db: &ReadDb) -> i64 {
    db.fetch("SELECT COUNT(*) FROM test_recorded", &[]).await.unwrap()[0].i64(0).unwrap()
}

async fn follows_the_log_and_reads_its_writes(log: TestLog) {
    let (db, counter) = setup(&log).await;
    for i in 0..300 {
        log.store.append(&format!("s-{}", i % 7), ExpectedVersion::Any, vec![event("test.a")]).await.unwrap();
    }
    let r = runner(&log, &db, &counter);
    r.start().await.unwrap();
    let appended = log.store.append("s-x", ExpectedVersion::Any, vec![event("test.b"), event("test.a")]).await.unwrap();
    r.wait_for(appended.last_position(), Duration::from_secs(10)).await.unwrap();
    assert_eq!(count(&db, "test.a").await, 301);
    assert_eq!(count(&db, "test.b").await, 1);
    assert_eq!(recorded(&db).await, 302);
    assert!(r.status().iter().all(|s| s.position == appended.last_position() && s.failed.is_none()));
    let err = r.wait_for(appended.last_position() + 10, Duration::from_millis(100)).await.unwrap_err();
    assert!(matches!(err, ProjectionError::Timeout { .. }), "{err}");
    // waiting for named projections only
    r.wait_for_projections(&["test_recorded"], appended.last_position(), Duration::from_secs(10)).await.unwrap();
    let err = r
        .wait_for_projections(&["test_recorded"], appended.last_position() + 10, Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(matches!(err, ProjectionError::Timeout { reached, .. } if reached == appended.last_position()), "{err}");
    let err = r.wait_for_projections(&["nope"], 1, Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(err, ProjectionError::UnknownProjection(_)), "{err}");
    let waiter = {
        let r = r.clone();
        let target = appended.last_position() + 1;
        tokio::spawn(async move { r.wait_for_projections(&["test_recorded"], target, Duration::from_secs(10)).await })
    };
    let next = log.store.append("s-z", ExpectedVersion::Any, vec![event("test.a")]).await.unwrap();
    waiter.await.unwrap().unwrap();
    assert_eq!(count(&db, "test.a").await, 302);
    assert_eq!(next.last_position(), appended.last_position() + 1);

    // stop, append more, restart: resumes from the committed checkpoint, applies nothing twice
    assert!(r.stop().await);
    let more = log.store.append("s-y", ExpectedVersion::Any, (0..50).map(|_| event("test.a")).collect()).await.unwrap();
    let r2 = runner(&log, &db, &counter);
    r2.start().await.unwrap();
    r2.wait_for(more.last_position(), Duration::from_secs(10)).await.unwrap();
    assert_eq!(count(&db, "test.a").await, 352);
    assert_eq!(recorded(&db).await, 353);

    // a rebuild from 0 gives the same tables
    r2.rebuild(None).await.unwrap();
    r2.wait_for(more.last_position(), Duration::from_secs(10)).await.unwrap();
    assert_eq!(count(&db, "test.a").await, 352);
    assert_eq!(recorded(&db).await, 353);
    let unknown = r2.rebuild(Some("nope")).await.unwrap_err();
    assert!(matches!(unknown, ProjectionError::UnknownProjection(_)));
    r2.stop().await;
}

async fn a_changed_version_rebuilds_at_start(log: TestLog) {
    let (db, counter) = setup(&log).await;
    log.store.append("s-1", ExpectedVersion::Any, (0..10).map(|_| event("test.a")).collect()).await.unwrap();
    let r = runner(&log, &db, &counter);
    assert_eq!(r.catch_up().await.unwrap(), log.store.head_position().await.unwrap());
    assert_eq!(count(&db, "test.a").await, 10);
    // tamper with the read model; a restart at the same version keeps it, a new version rebuilds
    db.execute("UPDATE test_counter SET n = 999", &[]).await.unwrap();
    runner(&log, &db, &counter).catch_up().await.unwrap();
    assert_eq!(count(&db, "test.a").await, 999);
    counter.version.store(2, Ordering::SeqCst);
    runner(&log, &db, &counter).catch_up().await.unwrap();
    assert_eq!(count(&db, "test.a").await, 10);
}

/// A runner of an older build (a lower version) on a database a newer one migrated: it marks the
/// read model failed and writes nothing to it, so the newer runner's rows stand.
async fn an_older_runner_leaves_a_newer_read_model_alone(log: TestLog) {
    let (db, newer) = setup(&log).await;
    newer.version.store(2, Ordering::SeqCst);
    log.store.append("s-1", ExpectedVersion::Any, (0..10).map(|_| event("test.a")).collect()).await.unwrap();
    runner(&log, &db, &newer).catch_up().await.unwrap();
    assert_eq!(count(&db, "test.a").await, 10);

    let older = Arc::new(Counter { version: AtomicI32::new(1) });
    log.store.append("s-1", ExpectedVersion::Any, vec![event("test.a")]).await.unwrap();
    let r = runner(&log, &db, &older);
    r.catch_up().await.unwrap();
    let status = r.status();
    let counter = status.iter().find(|s| s.name == "test_counter").unwrap();
    assert!(counter.failed.as_deref().is_some_and(|f| f.contains("newer server")), "{status:?}");
    assert_eq!(count(&db, "test.a").await, 10, "the older runner wrote nothing");
    assert_eq!(recorded(&db).await, 11, "the other read model went on");

    runner(&log, &db, &newer).catch_up().await.unwrap();
    assert_eq!(count(&db, "test.a").await, 11);
}

async fn a_failing_projection_stops_alone(log: TestLog) {
    let (db, counter) = setup(&log).await;
    log.store
        .append("s-1", ExpectedVersion::Any, vec![event("test.a"), event("test.poison"), event("test.a")])
        .await
        .unwrap();
    let r = runner(&log, &db, &counter);
    r.start().await.unwrap();
    let head = log.store.head_position().await.unwrap();
    // test_recorded carries on; the counter is marked failed and its writes of that batch rolled back
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if recorded(&db).await == 3 && r.status().iter().any(|s| s.failed.is_some()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("test_recorded applied and counter failed");
    let status = r.status();
    let failed = status.iter().find(|s| s.name == "test_counter").unwrap();
    assert!(failed.failed.as_deref().is_some_and(|f| f.contains("poisoned")));
    assert_eq!(failed.position, 0);
    assert_eq!(count(&db, "test.a").await, 0);
    // read-your-writes waits only on healthy projections
    r.wait_for(head, Duration::from_secs(5)).await.unwrap();
    r.wait_for_projections(&["test_recorded"], head, Duration::from_secs(5)).await.unwrap();
    // waiting on the failed one by name fails at once, with its reason
    let err =
        r.wait_for_projections(&["test_recorded", "test_counter"], head, Duration::from_secs(30)).await.unwrap_err();
    assert!(err.to_string().contains("poisoned"), "{err}");
    r.stop().await;
}

/// In a bulk load (on SQLite every projection of a batch applies at once in one transaction;
/// on PostgreSQL each in its own) a projection that fails stops alone: the batches before it
/// are kept, the other projection applies the whole log.
async fn a_failing_projection_stops_alone_in_a_bulk_load(log: TestLog) {
    let (db, counter) = setup(&log).await;
    for i in 0..150 {
        log.store.append(&format!("s-{}", i % 5), ExpectedVersion::Any, vec![event("test.a")]).await.unwrap();
    }
    let poison = log.store.append("s-p", ExpectedVersion::Any, vec![event("test.poison")]).await.unwrap();
    log.store.append("s-1", ExpectedVersion::Any, (0..10).map(|_| event("test.a")).collect()).await.unwrap();
    let head = log.store.head_position().await.unwrap();
    let options = RunnerOptions { batch_size: 64, retry_delay: Duration::from_millis(50), ..RunnerOptions::bulk() };
    let r = ProjectionRunner::new(
        Arc::clone(&log.store),
        db.clone(),
        vec![Arc::new(Recorded), Arc::clone(&counter) as Arc<dyn Projection>],
        options,
    );
    assert_eq!(r.catch_up().await.unwrap(), head);
    assert_eq!(recorded(&db).await, 161, "the healthy projection applied every batch");
    let status = r.status();
    let failed = status.iter().find(|s| s.name == "test_counter").unwrap();
    assert!(failed.failed.as_deref().is_some_and(|f| f.contains("poisoned")), "{status:?}");
    // the two whole batches before the poisoned one, committed; nothing of the poisoned one
    assert_eq!(failed.position, 128);
    assert!(poison.last_position() > 128);
    assert_eq!(count(&db, "test.a").await, 128);
    assert!(status.iter().any(|s| s.name == "test_recorded" && s.position == head && s.failed.is_none()));
}

/// Records, each time it applies a batch, the checkpoint of `test_recorded` that other
/// connections see (what is committed).
struct Watcher {
    db: ReadDb,
    seen: std::sync::Mutex<Vec<i64>>,
}

#[async_trait]
impl Projection for Watcher {
    fn name(&self) -> &'static str {
        "test_watcher"
    }
    fn version(&self) -> i32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    async fn apply(&self, _tx: &mut ReadTx, _events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let rows =
            self.db.fetch("SELECT position FROM projection_checkpoints WHERE name = 'test_recorded'", &[]).await?;
        self.seen.lock().unwrap().push(rows.first().and_then(|r| r.i64(0)).unwrap_or(0));
        Ok(())
    }
}

/// A SQLite bulk load commits once per `commit_every` events, several batches in one
/// transaction, and once at the end; every row and checkpoint is there afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_bulk_load_commits_every_n_events_sqlite() {
    let log = agentlog_eventlog::testing::sqlite_log(agentlog_eventlog::StoreOptions::default()).await;
    let (db, _) = setup(&log).await;
    for i in 0..500 {
        log.store.append(&format!("s-{}", i % 9), ExpectedVersion::Any, vec![event("test.a")]).await.unwrap();
    }
    let head = log.store.head_position().await.unwrap();
    assert_eq!(head, 500);
    for (commit_every, want) in [
        // pages of 64: the first transaction holds four (256 events), the second the rest
        (200, vec![0, 0, 0, 0, 256, 256, 256, 256]),
        // every page commits
        (0, vec![0, 64, 128, 192, 256, 320, 384, 448]),
    ] {
        db.execute("DELETE FROM test_recorded", &[]).await.unwrap();
        db.execute("DELETE FROM projection_checkpoints", &[]).await.unwrap();
        let watcher = Arc::new(Watcher { db: db.clone(), seen: std::sync::Mutex::new(Vec::new()) });
        let options = RunnerOptions { batch_size: 64, commit_every, ..RunnerOptions::bulk() };
        let r = ProjectionRunner::new(
            Arc::clone(&log.store),
            db.clone(),
            vec![Arc::new(Recorded), Arc::clone(&watcher) as Arc<dyn Projection>],
            options,
        );
        assert_eq!(r.catch_up().await.unwrap(), head);
        assert_eq!(*watcher.seen.lock().unwrap(), want, "commit_every {commit_every}");
        assert_eq!(recorded(&db).await, 500);
        assert!(r.status().iter().all(|s| s.position == head && s.failed.is_none()), "{:?}", r.status());
    }
}

/// Fails its first `left` batches with a real database failure that passes — PostgreSQL
/// cancels a statement (`statement_timeout`), SQLite finds the disk full (`max_page_count` held
/// at the file's size) — then records every event like [`Recorded`].
struct Flaky {
    left: AtomicI32,
}

#[async_trait]
impl Projection for Flaky {
    fn name(&self) -> &'static str {
        "test_flaky"
    }
    fn version(&self) -> i32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["test_flaky"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        if self.left.fetch_sub(1, Ordering::SeqCst) > 0 {
            if tx.is_postgres() {
                tx.execute("SET LOCAL statement_timeout = 1", &[]).await?;
                tx.execute("SELECT pg_sleep(0.2)", &[]).await?;
            } else {
                // Lowered to the file's page count: the next page the file needs is refused.
                tx.execute("PRAGMA max_page_count = 1", &[]).await?;
                tx.execute("INSERT INTO test_flaky (event_id, position) VALUES ('filler', zeroblob(4000000))", &[])
                    .await?;
            }
            return Err(ProjectionError::Invalid("the database did not fail as the test asked".into()));
        }
        if !tx.is_postgres() {
            tx.execute("PRAGMA max_page_count = 1073741823", &[]).await?;
        }
        let rows: Vec<Vec<SqlValue>> =
            events.iter().map(|e| vec![e.event_id.to_string().into(), e.position.into()]).collect();
        tx.upsert("test_flaky", &["event_id", "position"], &["event_id"], &rows).await
    }
}

/// A database failure that passes (a cancelled statement, a full disk) is not the batch's
/// fault: the runner applies the batch again from the committed checkpoints instead of marking
/// the projection failed — following the log live, and in a bulk load (which reports it and
/// goes on at the next call).
async fn a_passing_database_failure_is_applied_again(log: TestLog) {
    let db = ReadDb::from(log.store.database());
    db.execute("CREATE TABLE test_flaky (event_id TEXT PRIMARY KEY, position BIGINT)", &[]).await.unwrap();
    db.execute("CREATE TABLE test_recorded (event_id TEXT PRIMARY KEY, position BIGINT NOT NULL)", &[]).await.unwrap();
    let flaky = Arc::new(Flaky { left: AtomicI32::new(3) });
    let projections = || vec![Arc::clone(&flaky) as Arc<dyn Projection>, Arc::new(Recorded) as Arc<dyn Projection>];
    for i in 0..20 {
        log.store.append(&format!("s-{}", i % 3), ExpectedVersion::Any, vec![event("test.a")]).await.unwrap();
    }
    let head = log.store.head_position().await.unwrap();
    let options = RunnerOptions { batch_size: 8, retry_delay: Duration::from_millis(20), ..RunnerOptions::default() };
    let r = ProjectionRunner::new(Arc::clone(&log.store), db.clone(), projections(), options);
    r.start().await.unwrap();
    r.wait_for(head, Duration::from_secs(20)).await.unwrap();
    assert!(flaky.left.load(Ordering::SeqCst) < 0, "every planned failure happened");
    assert!(r.timings().resumes >= 1, "the runner resumed from its checkpoints: {:?}", r.timings());
    assert!(r.status().iter().all(|s| s.failed.is_none() && s.position == head), "{:?}", r.status());
    let rows = db.fetch("SELECT COUNT(*) FROM test_flaky", &[]).await.unwrap()[0].i64(0).unwrap();
    assert_eq!(rows, 20, "every event once, the failed attempts' writes rolled back");
    assert_eq!(recorded(&db).await, 20);
    r.stop().await;

    db.execute("DELETE FROM test_flaky", &[]).await.unwrap();
    db.execute("DELETE FROM test_recorded", &[]).await.unwrap();
    db.execute("DELETE FROM projection_checkpoints", &[]).await.unwrap();
    // While the database keeps failing, a bulk load reports it (after applying the batch again
    // as SQLite's bulk load does, each projection alone) and marks nothing failed; once the
    // database works, the next call goes on from the committed checkpoints.
    flaky.left.store(100, Ordering::SeqCst);
    let options = RunnerOptions { batch_size: 8, ..RunnerOptions::bulk() };
    let r = ProjectionRunner::new(Arc::clone(&log.store), db.clone(), projections(), options);
    let reported = r.catch_up().await.expect_err("the bulk load reports the failure");
    assert!(reported.is_transient(), "{reported}");
    assert!(r.status().iter().all(|s| s.failed.is_none()), "{:?}", r.status());
    flaky.left.store(0, Ordering::SeqCst);
    assert_eq!(r.catch_up().await.unwrap(), head);
    let rows = db.fetch("SELECT COUNT(*) FROM test_flaky", &[]).await.unwrap()[0].i64(0).unwrap();
    assert_eq!(rows, 20);
    assert_eq!(recorded(&db).await, 20);
}

both!(
    follows_the_log_and_reads_its_writes as runner_follows_log_and_reads_writes,
    a_changed_version_rebuilds_at_start as runner_rebuilds_on_version_change,
    an_older_runner_leaves_a_newer_read_model_alone as runner_older_leaves_newer_read_model,
    a_failing_projection_stops_alone as runner_isolates_failing_projection,
    a_failing_projection_stops_alone_in_a_bulk_load as runner_isolates_failing_projection_in_bulk_load,
    a_passing_database_failure_is_applied_again as runner_applies_again_after_a_passing_failure
);
