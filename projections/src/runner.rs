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
//! once per projection) and decodes each payload once for all of them (`DecodedEvent`). A
//! projection whose `apply` fails is rolled back alone (the batch is applied again with each
//! projection in a savepoint, `batch.rs`), marked failed (visible in
//! [`ProjectionRunner::status`]) and skipped, while the others carry on. A database failure
//! rolls the whole batch back; the runner waits and resumes from the committed checkpoints, so
//! a crash never applies an event twice or skips one.
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

use crate::batch::{self, Spanned, apply_batch};
use crate::runner_state::{
    AbortOnDrop, Inner, ProjectionStatus, RunnerOptions, RunnerTimings, lock_checkpoints, micros_since, newer_version,
    now_micros, reload, write_checkpoint,
};
use crate::{
    db::{ReadDb, ReadTx},
    decoding::DecodedEvent,
    error::ProjectionError,
    projection::Projection,
};

/// The longest wait between the runner's attempts after failures that made no progress.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(10);

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
    /// them to the next runner that starts, see the `bulk` module). For a rebuild no server waits
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
            // Failures one after another without progress wait twice as long each time, up to
            // MAX_RETRY_DELAY: a database that stays down is not asked ever faster.
            let mut delay = inner.options.retry_delay;
            let mut seen = *inner.progress.borrow();
            loop {
                match run_until(&inner, None).await {
                    Ok(()) => return,
                    Err(e) => {
                        inner.timings.lock().unwrap_or_else(|p| p.into_inner()).resumes += 1;
                        let now = *inner.progress.borrow();
                        if now > seen {
                            (seen, delay) = (now, inner.options.retry_delay);
                        }
                        tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "projection runner failed; resuming from checkpoints");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(MAX_RETRY_DELAY.max(inner.options.retry_delay));
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

/// Apply the log from the lowest checkpoint, until `until` (inclusive) or for ever.
///
/// History is read in pages by a reader task that runs one page ahead of the writer, so
/// reading the log and writing read models overlap; once the head seen at the start is reached,
/// the runner follows the log live through a subscription.
async fn run_until(inner: &Inner, until: Option<i64>) -> Result<(), ProjectionError> {
    let Some(from) = lowest_healthy(inner) else { return Ok(()) };
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
    let spanning = inner.options.bulk && !inner.db.is_postgres() && inner.options.commit_every > 0;
    if let Some(reached) = catch_up_pages(inner, from, target, spanning).await? {
        return Ok(reached);
    }
    // A projection failed in a transaction spanning several pages, and everything since its
    // last commit was rolled back: from the committed checkpoints, one page per transaction, so
    // the failing projection stops alone at its batch.
    let Some(from) = lowest_healthy(inner) else { return Ok(target) };
    Ok(catch_up_pages(inner, from, target, false).await?.unwrap_or(from))
}

/// The lowest checkpoint in memory of the projections that have not failed.
fn lowest_healthy(inner: &Inner) -> Option<i64> {
    let state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    state.iter().filter(|s| s.failed.is_none()).map(|s| s.position).min()
}

/// [`catch_up`]'s pages, each in a transaction of its own or, `spanning`, several in one
/// ([`crate::batch`]). `None`: a spanning transaction was rolled back.
async fn catch_up_pages(inner: &Inner, from: i64, target: i64, spanning: bool) -> Result<Option<i64>, ProjectionError> {
    let (pages, mut next_page) = mpsc::channel(2);
    let reader = AbortOnDrop(tokio::spawn(read_pages(
        Arc::clone(&inner.store),
        inner.projections.clone(),
        from,
        target,
        inner.options.catching_up(),
        pages,
    )));
    let mut reached = from;
    let mut open = None;
    // A PostgreSQL bulk load: each projection at its own pace, one batch in flight each.
    let mut lanes = (inner.options.bulk && inner.db.is_postgres()).then(crate::parallel::Lanes::default);
    loop {
        let waited = Instant::now();
        let Some(page) = next_page.recv().await else { break };
        add_micros(&inner.timings, waited, |t| &mut t.read_wait_micros);
        let page = page?;
        if spanning {
            match batch::apply_spanning(inner, open.take(), &page).await? {
                Spanned::Open(still) => open = still,
                Spanned::RolledBack => return Ok(None),
            }
        } else if let Some(lanes) = lanes.as_mut() {
            lanes.push(inner, &page).await?;
        } else {
            apply_batch(inner, &page).await?;
        }
        reached = page.last().map_or(reached, |e| e.position);
    }
    if let Some(mut lanes) = lanes {
        lanes.finish(inner).await?;
    }
    batch::finish(inner, open).await?;
    drop(reader);
    Ok(Some(reached))
}

/// The first page a catch-up reads, in events (a 50,000-event page of a bulk load takes a
/// quarter of a second to read and decode, with the applying side idle).
const FIRST_PAGE: usize = 4_096;

/// Read `(from, target]` in pages of `page_size` into `pages`, each event decoded here for the
/// `projections` that handle it; stops at the end, at the first error (sent on) or when the
/// receiver is gone. The first pages are smaller ([`FIRST_PAGE`], then doubling), so applying
/// starts while the reader is still filling a full page rather than after it.
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
    let mut size = page_size.clamp(1, FIRST_PAGE);
    while after < target {
        let handles = |t: &str| handled(&projections, t);
        // Decoded on this side, once for all projections: they apply one after the other on the
        // other side, which bounds a catch-up. Each payload comes as its stored text and is read
        // straight into its typed event.
        let read: Result<Vec<Arc<DecodedEvent>>, ProjectionError> =
            match store.read_all_unparsed(after, &filter, size).await {
                Ok(events) => events
                    .into_iter()
                    .take_while(|e| e.event.position <= target)
                    .map(|e| DecodedEvent::unparsed_if(e, handles).map(Arc::new))
                    .collect(),
                Err(e) => Err(e.into()),
            };
        size = size.saturating_mul(2).min(page_size.max(1));
        let page = match read {
            Ok(page) => page,
            Err(e) => {
                let _ = pages.send(Err(e)).await;
                return;
            }
        };
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
