//! The projector runner: tails the log from the projections' checkpoints, applies each batch to
//! every projection together with its checkpoint in one transaction, then follows the log live.
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn agentlog_eventlog::EventStore>, db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::{ProjectionRunner, RunnerOptions, all_projections};
//! let runner = ProjectionRunner::new(store, db, all_projections(), RunnerOptions::default());
//! runner.start().await?;
//! runner.wait_for(42, std::time::Duration::from_secs(5)).await?; // read your writes
//! # Ok(()) }
//! ```
//!
//! One task reads the log once for all projections (a rebuild of everything reads it once, not
//! once per projection) and decodes each payload once for all of them (`DecodedEvent`). Each
//! projection's writes sit in a savepoint: a projection whose `apply` fails is rolled back
//! alone, marked failed (visible in [`ProjectionRunner::status`]) and skipped, while the others
//! carry on. A database failure rolls the whole batch back; the runner
//! waits and resumes from the committed checkpoints, so a crash never applies an event twice or
//! skips one.
//!
//! Several processes may run a runner on one database (server instances). The committed
//! checkpoint, not the one in memory, decides what a batch applies: each batch's transaction
//! first locks the checkpoint rows (PostgreSQL `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` holds the
//! write lock already), then applies to each projection only the events after its committed
//! position, and moves it. Whoever commits first applies an event; the others find it applied
//! and only move their in-memory position, which therefore never runs ahead of the database:
//! a wait on it (read-your-writes) ends only once the read models hold the position, whoever
//! applied it.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use agentlog_eventlog::{EventFilter, EventStore};
use futures_util::{FutureExt, StreamExt};
use tokio::sync::{mpsc, watch};

use crate::runner_state::{
    AbortOnDrop, CHECKPOINT_COLUMNS, Inner, ProjectionStatus, RunnerOptions, RunnerTimings, lock_checkpoints,
    micros_since, newer_version, now_micros, publish, write_checkpoint,
};
use crate::{
    db::{ReadDb, ReadTx, SqlValue},
    decoding::DecodedEvent,
    error::ProjectionError,
    projection::Projection,
};

/// SQLite's WAL auto-checkpoint during a bulk load, in pages (400 MB of 4 KiB pages).
pub const BULK_WAL_AUTOCHECKPOINT: u32 = 100_000;

/// Runs projections; cheap to clone.
#[derive(Clone)]
pub struct ProjectionRunner {
    inner: Arc<Inner>,
}

impl ProjectionRunner {
    /// A runner for `projections` over `store`, writing read models to `db`.
    pub fn new(
        store: Arc<dyn EventStore>,
        db: ReadDb,
        projections: Vec<Arc<dyn Projection>>,
        options: RunnerOptions,
    ) -> Self {
        let state = projections
            .iter()
            .map(|p| ProjectionStatus {
                name: p.name(),
                version: p.version(),
                position: 0,
                failed: None,
                applied_events: 0,
                apply_micros: 0,
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                store,
                db,
                projections,
                options,
                state: Mutex::new(state),
                timings: Mutex::new(RunnerTimings::default()),
                progress: watch::Sender::new(0),
                changes: watch::Sender::new(0),
                task: Mutex::new(None),
            }),
        }
    }

    /// The read-model database.
    pub fn db(&self) -> &ReadDb {
        &self.inner.db
    }

    /// The projections this runner keeps.
    pub fn projections(&self) -> &[Arc<dyn Projection>] {
        &self.inner.projections
    }

    /// Load checkpoints (rebuilding any projection whose version changed) and start following.
    pub async fn start(&self) -> Result<(), ProjectionError> {
        self.load_checkpoints().await?;
        self.spawn();
        Ok(())
    }

    /// Load checkpoints and apply everything up to the log's current head, without following.
    /// Returns the head reached.
    pub async fn catch_up(&self) -> Result<i64, ProjectionError> {
        self.load_checkpoints().await?;
        let head = self.inner.store.head_position().await?;
        run_until(&self.inner, Some(head)).await?;
        Ok(head)
    }

    /// Empty the named projection (all when `None`) and apply the log again from position 0.
    /// A running follower is stopped first and restarted after the reset.
    pub async fn rebuild(&self, name: Option<&str>) -> Result<(), ProjectionError> {
        if let Some(n) = name
            && !self.inner.projections.iter().any(|p| p.name() == n)
        {
            return Err(ProjectionError::UnknownProjection(n.to_string()));
        }
        let was_running = self.stop().await;
        for p in &self.inner.projections {
            if name.is_none_or(|n| n == p.name()) {
                reset(&self.inner.db, p.as_ref()).await?;
                let mut state = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(s) = state.iter_mut().find(|s| s.name == p.name()) {
                    s.failed = None;
                }
            }
        }
        self.load_checkpoints().await?;
        if was_running {
            self.spawn();
        }
        Ok(())
    }

    /// Empty the named projection (all when `None`) and apply the log from position 0 up to its
    /// current head as a bulk load: the emptied tables' secondary indexes are dropped first and
    /// created again at the end (also when applying fails; a process that dies meanwhile leaves
    /// them to the next runner that starts, see [`crate::bulk`]). For a rebuild no server waits
    /// on (`agentlog-replay rebuild`): until it ends, the tables' queries have no indexes.
    /// Returns the head reached.
    pub async fn rebuild_bulk(&self, name: Option<&str>) -> Result<i64, ProjectionError> {
        self.rebuild(name).await?;
        let was_running = self.stop().await;
        let tables: Vec<&str> = self
            .inner
            .projections
            .iter()
            .filter(|p| name.is_none_or(|n| n == p.name()))
            .flat_map(|p| p.tables().iter().copied())
            .collect();
        let kept: Vec<&str> =
            self.inner.projections.iter().flat_map(|p| p.bulk_kept_indexes().iter().copied()).collect();
        let result = self.load_without_indexes(&tables, &kept).await;
        if was_running {
            self.spawn();
        }
        result
    }

    /// The body of [`rebuild_bulk`](Self::rebuild_bulk) once the tables are empty: drop the
    /// indexes, apply up to the head, create them again (also when applying failed).
    async fn load_without_indexes(&self, tables: &[&str], kept: &[&str]) -> Result<i64, ProjectionError> {
        let db = &self.inner.db;
        let dropped = crate::bulk::drop_indexes(db, tables, kept).await?;
        let applied = match self.inner.store.head_position().await {
            Ok(head) => run_until(&self.inner, Some(head)).await.map(|()| head),
            Err(e) => Err(e.into()),
        };
        let finishing = Instant::now();
        let restored = crate::bulk::restore(db).await;
        let checkpointed = if db.is_postgres() {
            Ok(0)
        } else {
            // The WAL holds up to a checkpoint's worth of pages: copy them into the database
            // now rather than in a reader's way later.
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)", &[]).await
        };
        add_micros(&self.inner.timings, finishing, |t| &mut t.finish_micros);
        tracing::debug!(dropped, "bulk rebuild: secondary indexes dropped and created again");
        let head = applied?;
        restored?;
        checkpointed?;
        Ok(head)
    }

    /// Stop following. Returns whether it was running. A batch in flight is rolled back.
    pub async fn stop(&self) -> bool {
        let task = self.inner.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        match task {
            Some(t) => {
                t.abort();
                let _ = t.await;
                true
            }
            None => false,
        }
    }

    /// Wait (at most `timeout`) until every healthy projection has applied `position`.
    pub async fn wait_for(&self, position: i64, timeout: Duration) -> Result<(), ProjectionError> {
        let mut rx = self.inner.progress.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|p| *p >= position)).await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(ProjectionError::Stopped),
            Err(_) => Err(ProjectionError::Timeout {
                position,
                reached: *self.inner.progress.borrow(),
                waited_ms: timeout.as_millis() as u64,
            }),
        }
    }

    /// Wait (at most `timeout`) until each of the named projections has applied `position`; the
    /// others may lag. Fails at once for an unknown name, and when a named projection fails.
    pub async fn wait_for_projections(
        &self,
        names: &[&str],
        position: i64,
        timeout: Duration,
    ) -> Result<(), ProjectionError> {
        if let Some(unknown) = names.iter().find(|n| !self.inner.projections.iter().any(|p| p.name() == **n)) {
            return Err(ProjectionError::UnknownProjection(unknown.to_string()));
        }
        let mut changes = self.inner.changes.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let reached = {
                let state = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
                let named = state.iter().filter(|s| names.contains(&s.name));
                let mut lowest = i64::MAX;
                for s in named {
                    if let Some(reason) = &s.failed {
                        return Err(ProjectionError::Invalid(format!("projection `{}` has failed: {reason}", s.name)));
                    }
                    lowest = lowest.min(s.position);
                }
                lowest
            };
            if reached >= position {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(ProjectionError::Stopped),
                Err(_) => {
                    return Err(ProjectionError::Timeout { position, reached, waited_ms: timeout.as_millis() as u64 });
                }
            }
        }
    }

    /// The lowest position every healthy projection has applied.
    pub fn position(&self) -> i64 {
        *self.inner.progress.borrow()
    }

    /// A watch of [`position`](Self::position).
    pub fn watch_position(&self) -> watch::Receiver<i64> {
        self.inner.progress.subscribe()
    }

    /// Where each projection stands.
    pub fn status(&self) -> Vec<ProjectionStatus> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Where the runner's time went.
    pub fn timings(&self) -> RunnerTimings {
        *self.inner.timings.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn spawn(&self) {
        let inner = Arc::clone(&self.inner);
        let task = tokio::spawn(async move {
            loop {
                match run_until(&inner, None).await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "projection runner failed; resuming from checkpoints");
                        tokio::time::sleep(inner.options.retry_delay).await;
                        if let Err(e) = reload(&inner).await {
                            tracing::warn!(error = %e, "reloading checkpoints failed");
                        }
                    }
                }
            }
        });
        *self.inner.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
    }

    /// Make sure every projection has a checkpoint at its code version, rebuilding one whose
    /// stored version is older (or that has none). Each decision is taken with the checkpoint
    /// row locked, so two processes starting at once reset a projection once. A stored version
    /// newer than the code's (a newer server on the same database) is never rolled back: the
    /// projection is marked failed here instead.
    async fn load_checkpoints(&self) -> Result<(), ProjectionError> {
        let db = &self.inner.db;
        crate::bulk::restore(db).await?;
        for p in &self.inner.projections {
            let mut tx = db.begin().await?;
            let created = tx
                .execute(
                    "INSERT INTO projection_checkpoints (name, version, position, updated_at) VALUES ($1, $2, 0, $3) \
                     ON CONFLICT (name) DO NOTHING",
                    &[p.name().into(), p.version().into(), now_micros()],
                )
                .await?
                > 0;
            let stored = lock_checkpoints(&mut tx, Some(p.name())).await?.first().map_or(0, |c| c.version);
            let code = i64::from(p.version());
            if created {
                clear_tables(&mut tx, p.as_ref()).await?;
            } else if stored < code {
                tracing::info!(
                    projection = p.name(),
                    from = stored,
                    to = code,
                    "projection version changed; rebuilding"
                );
                clear_tables(&mut tx, p.as_ref()).await?;
                write_checkpoint(&mut tx, p.as_ref(), 0).await?;
            } else if stored > code {
                let reason = newer_version(stored, code);
                tracing::error!(projection = p.name(), %reason, "projection not applied");
                let mut state = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(s) = state.iter_mut().find(|s| s.name == p.name()) {
                    s.failed = Some(reason);
                }
            }
            tx.commit().await?;
        }
        reload(&self.inner).await
    }
}

/// Empty a projection's tables and set its checkpoint to 0 at its current version.
async fn reset(db: &ReadDb, p: &dyn Projection) -> Result<(), ProjectionError> {
    let mut tx = db.begin().await?;
    if tx.is_postgres() {
        // Emptying a large table may take longer than the server's per-statement bound, and a
        // reset is not a request: it must finish.
        tx.execute("SET LOCAL statement_timeout = 0", &[]).await?;
    }
    lock_checkpoints(&mut tx, Some(p.name())).await?;
    clear_tables(&mut tx, p).await?;
    write_checkpoint(&mut tx, p, 0).await?;
    tx.commit().await
}

async fn clear_tables(tx: &mut ReadTx, p: &dyn Projection) -> Result<(), ProjectionError> {
    for table in p.tables() {
        tx.execute(&format!("DELETE FROM {table}"), &[]).await?;
    }
    Ok(())
}

/// Re-read committed checkpoints into memory (after a start, a reset or a failed batch).
async fn reload(inner: &Inner) -> Result<(), ProjectionError> {
    let rows = inner.db.fetch("SELECT name, position FROM projection_checkpoints", &[]).await?;
    let mut state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    for s in state.iter_mut() {
        if let Some(r) = rows.iter().find(|r| r.str(0) == Some(s.name)) {
            s.position = r.i64(1).unwrap_or(0);
        }
    }
    publish(inner, &state);
    Ok(())
}

/// Apply the log from the lowest checkpoint, until `until` (inclusive) or for ever.
///
/// History is read in pages by a reader task that runs one page ahead of the writer, so
/// reading the log and writing read models overlap; once the head seen at the start is reached,
/// the runner follows the log live through a subscription.
async fn run_until(inner: &Inner, until: Option<i64>) -> Result<(), ProjectionError> {
    let from = {
        let state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
        state.iter().filter(|s| s.failed.is_none()).map(|s| s.position).min()
    };
    let Some(from) = from else { return Ok(()) };
    let target = match until {
        Some(u) => u,
        None => inner.store.head_position().await?,
    };
    let reached = if target > from { catch_up(inner, from, target).await? } else { from };
    if until.is_some() {
        return Ok(());
    }
    follow(inner, reached).await
}

/// Apply every committed event in `(from, target]`, page by page. Returns the last position read.
async fn catch_up(inner: &Inner, from: i64, target: i64) -> Result<i64, ProjectionError> {
    let (pages, mut next_page) = mpsc::channel(2);
    let reader = AbortOnDrop(tokio::spawn(read_pages(
        Arc::clone(&inner.store),
        inner.projections.clone(),
        from,
        target,
        inner.options.batch_size,
        pages,
    )));
    let mut reached = from;
    loop {
        let waited = Instant::now();
        let Some(page) = next_page.recv().await else { break };
        add_micros(&inner.timings, waited, |t| &mut t.read_wait_micros);
        let page = page?;
        apply_batch(inner, &page).await?;
        reached = page.last().map_or(reached, |e| e.position);
    }
    drop(reader);
    Ok(reached)
}

/// Read `(from, target]` in pages of `page_size` into `pages`, each event decoded here for the
/// `projections` that handle it; stops at the end, at the first error (sent on) or when the
/// receiver is gone.
async fn read_pages(
    store: Arc<dyn EventStore>,
    projections: Vec<Arc<dyn Projection>>,
    from: i64,
    target: i64,
    page_size: usize,
    pages: mpsc::Sender<Result<Vec<Arc<DecodedEvent>>, ProjectionError>>,
) {
    let filter = EventFilter::all();
    let mut after = from;
    while after < target {
        let page = match store.read_all(after, &filter, page_size).await {
            Ok(events) => events,
            Err(e) => {
                let _ = pages.send(Err(e.into())).await;
                return;
            }
        };
        // Decoded on this side, once for all projections: they apply one after the other on the
        // other side, which bounds a catch-up.
        let page: Vec<Arc<DecodedEvent>> = page
            .into_iter()
            .take_while(|e| e.position <= target)
            .map(|e| Arc::new(DecodedEvent::owned_if(e, |t| handled(&projections, t))))
            .collect();
        let Some(last) = page.last().map(|e| e.position) else { return };
        after = last;
        if pages.send(Ok(page)).await.is_err() {
            return;
        }
    }
}

/// Does one of `projections` handle events of this type? (Only those are decoded.)
fn handled(projections: &[Arc<dyn Projection>], event_type: &str) -> bool {
    projections.iter().any(|p| p.handles(event_type))
}

fn add_micros(timings: &Mutex<RunnerTimings>, start: Instant, field: impl FnOnce(&mut RunnerTimings) -> &mut u64) {
    let mut t = timings.lock().unwrap_or_else(|p| p.into_inner());
    *field(&mut t) += micros_since(start);
}

/// Follow the log live after `from`, applying what has arrived in batches of at most
/// `batch_size`.
async fn follow(inner: &Inner, from: i64) -> Result<(), ProjectionError> {
    let mut events = inner.store.subscribe(from, EventFilter::all());
    loop {
        let first = match events.next().await {
            Some(e) => e?,
            None => return Err(ProjectionError::Stopped),
        };
        let mut batch = vec![first];
        while batch.len() < inner.options.batch_size {
            match events.next().now_or_never() {
                Some(Some(Ok(e))) => batch.push(e),
                Some(Some(Err(e))) => return Err(e.into()),
                _ => break,
            }
        }
        let batch: Vec<Arc<DecodedEvent>> = batch
            .into_iter()
            .map(|e| Arc::new(DecodedEvent::shared_if(e, |t| handled(&inner.projections, t))))
            .collect();
        apply_batch(inner, &batch).await?;
    }
}

/// Apply `batch` to every healthy projection from its committed checkpoint (see the module
/// doc), in one transaction with the checkpoints.
///
/// The batch is first applied with no savepoints (each is a round trip on PostgreSQL, two per
/// projection). If a projection fails (a bug, data it cannot read: rare), that transaction is
/// rolled back and the batch applied again with a savepoint around each projection, so the
/// failing one alone stops and the others advance, as they would have. A SQLite bulk load
/// applies the projections of the first attempt all at once ([`crate::together`]).
async fn apply_batch(inner: &Inner, batch: &[Arc<DecodedEvent>]) -> Result<(), ProjectionError> {
    if inner.options.bulk && inner.db.is_postgres() {
        return crate::parallel::apply_batch(inner, batch).await;
    }
    let Some(last) = batch.last().map(|e| e.position) else { return Ok(()) };
    let positions: Vec<(i64, bool)> = {
        let state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
        state.iter().map(|s| (s.position, s.failed.is_some())).collect()
    };
    if !apply_in_tx(inner, batch, last, &positions, false).await? {
        // Isolated, every outcome is committed: the answer is always `true`.
        apply_in_tx(inner, batch, last, &positions, true).await?;
    }
    Ok(())
}

/// One attempt of [`apply_batch`]: with `isolate`, each projection in a savepoint (a failing
/// one is marked failed), one after another; without (at once in a SQLite bulk load), a failing projection rolls the whole transaction back and
/// the answer is `false` (apply again, isolated). `true`: committed and recorded.
async fn apply_in_tx(
    inner: &Inner,
    batch: &[Arc<DecodedEvent>],
    last: i64,
    positions: &[(i64, bool)],
    isolate: bool,
) -> Result<bool, ProjectionError> {
    let mut tx = inner.db.begin().await?;
    if inner.options.bulk {
        tx.execute(&format!("PRAGMA wal_autocheckpoint = {BULK_WAL_AUTOCHECKPOINT}"), &[]).await?;
    }
    if inner.options.sqlite_cache_mib > 0 {
        // Negative: a size in KiB rather than in pages.
        let kib = i64::from(inner.options.sqlite_cache_mib) * 1024;
        tx.execute(&format!("PRAGMA cache_size = -{kib}"), &[]).await?;
    }
    let committed = lock_checkpoints(&mut tx, None).await?;
    let mut failures = Vec::new();
    let mut advanced = Vec::new();
    let mut found_ahead = Vec::new();
    let mut applied = Vec::new();
    // Each projection's events after its committed checkpoint.
    let mut work: Vec<(usize, Vec<Arc<DecodedEvent>>)> = Vec::new();
    for (i, p) in inner.projections.iter().enumerate() {
        let (in_memory, failed) = positions[i];
        if failed || in_memory >= last {
            continue;
        }
        let Some(c) = committed.iter().find(|c| c.name == p.name()) else {
            return Err(ProjectionError::CheckpointMovedBack { name: p.name(), applied: in_memory, committed: 0 });
        };
        if c.version != i64::from(p.version()) {
            failures.push((i, newer_version(c.version, i64::from(p.version()))));
            continue;
        }
        if c.position < in_memory {
            return Err(ProjectionError::CheckpointMovedBack {
                name: p.name(),
                applied: in_memory,
                committed: c.position,
            });
        }
        if c.position >= last {
            // Another process applied this batch already.
            found_ahead.push((i, c.position));
            continue;
        }
        let checkpoint = c.position;
        let events: Vec<Arc<DecodedEvent>> =
            batch.iter().filter(|e| e.position > checkpoint && p.handles(&e.event_type)).cloned().collect();
        if !events.is_empty() {
            work.push((i, events));
        }
        advanced.push(i);
    }
    if inner.options.bulk && !isolate && work.len() > 1 && !tx.is_postgres() {
        let (back, outcome) = crate::together::apply(tx, &inner.projections, work).await?;
        tx = back;
        match outcome {
            Some(done) => applied = done,
            None => {
                // If the rollback fails the connection is gone: fail the batch.
                tx.rollback().await?;
                return Ok(false);
            }
        }
    } else {
        for (i, events) in work {
            let p = &inner.projections[i];
            let events: Vec<&DecodedEvent> = events.iter().map(|e| &**e).collect();
            let started = Instant::now();
            if isolate {
                tx.execute("SAVEPOINT projection", &[]).await?;
            }
            match p.apply(&mut tx, &events).await {
                Ok(()) => {
                    if isolate {
                        tx.execute("RELEASE SAVEPOINT projection", &[]).await?;
                    }
                    applied.push((i, events.len() as u64, micros_since(started)));
                }
                Err(e) if !isolate => {
                    tracing::debug!(projection = p.name(), error = %e, "a projection failed; applying the batch again, isolated");
                    // If the rollback fails the connection is gone: fail the batch.
                    tx.rollback().await?;
                    return Ok(false);
                }
                Err(e) => {
                    // If the savepoint cannot be rolled back the connection is gone: fail the batch.
                    tx.execute("ROLLBACK TO SAVEPOINT projection", &[]).await?;
                    tx.execute("RELEASE SAVEPOINT projection", &[]).await?;
                    tracing::error!(projection = p.name(), error = %e, "projection failed; it stops here until rebuilt");
                    advanced.retain(|&a| a != i);
                    failures.push((i, e.to_string()));
                }
            }
        }
    }
    // Every advanced projection's checkpoint in one statement, in the batch's transaction.
    let committing = Instant::now();
    let now = now_micros();
    let checkpoints: Vec<Vec<SqlValue>> = advanced
        .iter()
        .map(|&i| {
            let p = &inner.projections[i];
            vec![p.name().into(), p.version().into(), last.into(), now.clone()]
        })
        .collect();
    tx.upsert("projection_checkpoints", &CHECKPOINT_COLUMNS, &["name"], &checkpoints).await?;
    tx.commit().await?;
    {
        let mut t = inner.timings.lock().unwrap_or_else(|p| p.into_inner());
        t.batches += 1;
        t.commit_micros += micros_since(committing);
    }
    let mut state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    for i in advanced {
        state[i].position = last;
    }
    for (i, position) in found_ahead {
        state[i].position = position;
    }
    for (i, events, micros) in applied {
        state[i].applied_events += events;
        state[i].apply_micros += micros;
    }
    for (i, reason) in failures {
        state[i].failed = Some(reason);
    }
    publish(inner, &state);
    Ok(true)
}
