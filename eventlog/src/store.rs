//! The [`EventStore`] trait — the log's whole contract — and the machinery both backends share.

use std::{fmt, sync::Arc, time::Duration};

use agentlog_domain::envelope::{NewEvent, RecordedEvent};
use async_trait::async_trait;
use tokio::{
    sync::{Mutex, mpsc, oneshot, watch},
    task::JoinHandle,
};

use crate::{
    append::{AppendResult, ExpectedVersion, StreamAppend},
    backend::Backend,
    error::EventLogError,
    filter::EventFilter,
    import::{ImportResult, prepare_import},
    queued::QueuedAppends,
    subscription::{EventSubscription, subscribe},
    tail::{Tail, run_tailer},
    validate::{Limits, prepare_all},
    writer::{WriteRequest, run_writer},
};

/// Which database carries a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// An embedded SQLite file (WAL).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        })
    }
}

/// The append-only log.
///
/// ```no_run
/// # async fn demo(store: &dyn agentlog_eventlog::EventStore, event: agentlog_domain::envelope::NewEvent) -> Result<(), agentlog_eventlog::EventLogError> {
/// use agentlog_eventlog::{EventFilter, ExpectedVersion};
/// use futures_util::StreamExt;
///
/// let appended = store.append("operation-42", ExpectedVersion::NoStream, vec![event]).await?;
/// let mut live = store.subscribe(0, EventFilter::types(["operation.started"]));
/// while let Some(event) = live.next().await {
///     println!("{} at {}", event?.event_type, appended.last_position());
/// }
/// # Ok(()) }
/// ```
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Append `events` to one stream if it is at `expected`; atomic. Re-appending event ids that
    /// are already stored with the same content writes nothing and answers their positions.
    async fn append(
        &self,
        stream_id: &str,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendResult, EventLogError> {
        let mut results = self.append_multi(vec![StreamAppend::new(stream_id, expected, events)]).await?;
        results.pop().ok_or(EventLogError::Closed)
    }

    /// Append to several streams at once: every part's expectation must hold, or nothing at all
    /// is written.
    async fn append_multi(&self, appends: Vec<StreamAppend>) -> Result<Vec<AppendResult>, EventLogError>;

    /// Several [`append_multi`](Self::append_multi)s in the order given, each judged and atomic
    /// on its own; answers in the same order. The log commits them in that order, and may put
    /// several into one transaction (a bulk load pays a few commits, not one per append).
    async fn append_in_order(&self, appends: Vec<Vec<StreamAppend>>) -> Vec<Result<Vec<AppendResult>, EventLogError>> {
        self.queue_in_order(appends).await.answers().await
    }

    /// [`append_in_order`](Self::append_in_order) without waiting for the answers: returns once
    /// the appends are queued, so a bulk load can prepare and queue its next appends while these
    /// commit. Appends queued later are committed after these.
    async fn queue_in_order(&self, appends: Vec<Vec<StreamAppend>>) -> QueuedAppends {
        let mut answers = Vec::with_capacity(appends.len());
        for append in appends {
            answers.push(self.append_multi(append).await);
        }
        QueuedAppends::answered(answers)
    }

    /// Up to `limit` events of one stream from `from_version` (1-based, inclusive).
    async fn read_stream(
        &self,
        stream_id: &str,
        from_version: i64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError>;

    /// Up to `limit` events after position `after` (exclusive) that pass `filter`.
    async fn read_all(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError>;

    /// [`read_all`](Self::read_all) with each payload as its stored JSON text, for a reader
    /// that decodes payloads itself (a rebuild): no `serde_json::Value` is built for it.
    async fn read_all_unparsed(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<crate::unparsed::UnparsedEvent>, EventLogError>;

    /// The last `limit` events with `after < position < before` that pass `filter`, newest
    /// first (a page read backward).
    async fn read_all_back(
        &self,
        after: i64,
        before: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, EventLogError>;

    /// The stream's current version (0 when it does not exist).
    async fn stream_version(&self, stream_id: &str) -> Result<i64, EventLogError>;

    /// The highest committed position in the database right now (0 when empty).
    async fn head_position(&self) -> Result<i64, EventLogError>;

    /// Where those of the events `ids` that are stored are, in no particular order (a command's
    /// earlier attempt is found this way: [`crate::applied_command`]).
    async fn locate(&self, ids: &[uuid::Uuid]) -> Result<Vec<crate::append::LocatedEvent>, EventLogError>;

    /// Store events recorded by another log, keeping their ids, stream versions and recording
    /// times (and positions where possible); idempotent. The `import` module has the rules.
    async fn import(&self, events: Vec<RecordedEvent>) -> Result<ImportResult, EventLogError>;

    /// Every event after `after` that passes `filter`: the history first, then live.
    fn subscribe(&self, after: i64, filter: EventFilter) -> EventSubscription;

    /// A watch of the highest position this store has seen committed (its tail).
    fn watch_head(&self) -> watch::Receiver<i64>;

    /// Which database this is.
    fn backend_kind(&self) -> BackendKind;

    /// A pool on the log's database, for read models kept beside the log.
    fn database(&self) -> DatabasePool;

    /// What the SQLite log's background WAL checkpointer has done; `None` on PostgreSQL and
    /// when commits checkpoint (`StoreOptions::sqlite_background_checkpoint`).
    fn wal_checkpoints(&self) -> Option<std::sync::Arc<crate::checkpoints::CheckpointStats>>;

    /// Stop taking appends, finish the queued ones and stop the background tasks.
    async fn close(&self);
}

/// A connection pool on the log's database.
#[derive(Debug, Clone)]
pub enum DatabasePool {
    /// The SQLite file's reader pool (writes must `BEGIN IMMEDIATE`).
    Sqlite(sqlx::SqlitePool),
    /// The PostgreSQL pool.
    Postgres(sqlx::PgPool),
}

/// Tunables shared by both stores.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Input limits.
    pub limits: Limits,
    /// Apply the migrations when opening (default true).
    pub migrate: bool,
    /// How often the tailer looks for appends it was not told about (default 500 ms).
    pub poll_interval: Duration,
    /// Most recent events kept in memory for live subscribers (default 16,384).
    pub ring_capacity: usize,
    /// Most events one group commit takes (default 5,000).
    pub max_batch_events: usize,
    /// Appends that may wait for the writer before callers wait to enqueue (default 4,096).
    pub queue_depth: usize,
    /// Reader connections (default 8).
    pub read_connections: u32,
    /// PostgreSQL: LISTEN/NOTIFY between instances (default true; polling always runs too).
    pub listen_notify: bool,
    /// SQLite: `synchronous=FULL` (default, durable across power loss) or NORMAL when false.
    pub sqlite_synchronous_full: bool,
    /// SQLite: how much of the database file each connection reads through a memory map, MiB
    /// (`PRAGMA mmap_size`; default 0, off). In WAL mode every commit empties the other
    /// connections' page caches, so a read after a write reads its pages again: through the
    /// map that is a memory access, not a `pread` copy. The mapped pages count in the process's
    /// resident memory as file pages the kernel may reclaim.
    pub sqlite_mmap_mib: u64,
    /// SQLite: the WAL pages after which a commit of the writer copies the WAL back into the
    /// database file (`PRAGMA wal_autocheckpoint`; default 1,000, SQLite's own). A bulk load
    /// raises it: index pages changed by many commits are then copied back once.
    pub sqlite_wal_autocheckpoint: u32,
    /// SQLite: checkpoint the WAL on a thread of the log's own every interval (`PASSIVE`: it
    /// never takes the write lock) and never inside a commit (`wal_autocheckpoint = 0` on every
    /// connection, the read models' included), so no append waits for pages copied back into
    /// the database file. `None` (default): commits checkpoint after `sqlite_wal_autocheckpoint`
    /// pages, SQLite's own way. The server uses 100 ms.
    pub sqlite_background_checkpoint: Option<Duration>,
    /// PostgreSQL: the `statement_timeout` of every pooled connection (default none). A
    /// statement running longer is cancelled by the database, so its connection comes back to
    /// the pool; an append cut off this way rolls back and is not acknowledged. Migrations run
    /// on a connection of their own without it.
    pub statement_timeout: Option<Duration>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            migrate: true,
            poll_interval: Duration::from_millis(500),
            ring_capacity: 16_384,
            max_batch_events: 5_000,
            queue_depth: 4_096,
            read_connections: 8,
            listen_notify: true,
            sqlite_synchronous_full: true,
            sqlite_mmap_mib: 0,
            sqlite_wal_autocheckpoint: 1_000,
            sqlite_background_checkpoint: None,
            statement_timeout: None,
        }
    }
}

/// Writer, tailer and subscriptions over one backend.
pub(crate) struct LogCore<B: Backend> {
    pub backend: Arc<B>,
    queue: Mutex<Option<mpsc::Sender<WriteRequest>>>,
    tail: Arc<Tail>,
    limits: Limits,
    writer_task: Mutex<Option<JoinHandle<()>>>,
    background: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl<B: Backend> LogCore<B> {
    /// Start the writer, the tailer and the backend's fan-out.
    pub(crate) async fn start(backend: B, options: &StoreOptions) -> Result<Self, EventLogError> {
        let backend = Arc::new(backend);
        let head = backend.head().await?;
        let tail = Arc::new(Tail::new(head, options.ring_capacity));
        let (committed_tx, committed_rx) = watch::channel(head);
        let (queue_tx, queue_rx) = mpsc::channel(options.queue_depth.max(1));
        let writer_task =
            tokio::spawn(run_writer(Arc::clone(&backend), queue_rx, committed_tx, options.max_batch_events.max(1)));
        let mut background = backend.spawn_fan_out(committed_rx.clone(), Arc::clone(&tail.wake));
        background.push(tokio::spawn(run_tailer(
            Arc::clone(&backend),
            Arc::clone(&tail),
            committed_rx,
            options.poll_interval,
        )));
        Ok(Self {
            backend,
            queue: Mutex::new(Some(queue_tx)),
            tail,
            limits: options.limits,
            writer_task: Mutex::new(Some(writer_task)),
            background: std::sync::Mutex::new(background),
        })
    }

    pub(crate) async fn append_multi(&self, appends: Vec<StreamAppend>) -> Result<Vec<AppendResult>, EventLogError> {
        let append = prepare_all(appends, &self.limits)?;
        let (reply, answer) = oneshot::channel();
        let sender = self.queue.lock().await.clone().ok_or(EventLogError::Closed)?;
        sender.send(WriteRequest { append: Arc::new(append), reply }).await.map_err(|_| EventLogError::Closed)?;
        answer.await.map_err(|_| EventLogError::Closed)?
    }

    /// Queue every append, in order, without waiting for an answer: the writer commits them in
    /// that order, as many per transaction as its batch takes.
    pub(crate) async fn queue_in_order(&self, appends: Vec<Vec<StreamAppend>>) -> QueuedAppends {
        let mut queued = QueuedAppends::with_capacity(appends.len());
        let Some(sender) = self.queue.lock().await.clone() else {
            for _ in &appends {
                queued.push_answered(Err(EventLogError::Closed));
            }
            return queued;
        };
        for appends in appends {
            let append = match prepare_all(appends, &self.limits) {
                Ok(append) => append,
                Err(e) => {
                    queued.push_answered(Err(EventLogError::from(e)));
                    continue;
                }
            };
            let (reply, answer) = oneshot::channel();
            // One sender, one task: the queue receives these in this order.
            match sender.send(WriteRequest { append: Arc::new(append), reply }).await {
                Ok(()) => queued.push_waiting(answer),
                Err(_) => queued.push_answered(Err(EventLogError::Closed)),
            }
        }
        queued
    }

    pub(crate) async fn import(&self, events: Vec<RecordedEvent>) -> Result<ImportResult, EventLogError> {
        if events.is_empty() {
            return Ok(ImportResult::default());
        }
        let prepared = prepare_import(events, &self.limits)?;
        let result = self.backend.import_batch(prepared).await?;
        if result.imported > 0 {
            // The import bypassed the writer: tell the tailer to look now rather than at its poll.
            self.tail.wake.notify_one();
        }
        Ok(result)
    }

    pub(crate) fn subscribe(&self, after: i64, filter: EventFilter) -> EventSubscription {
        subscribe(Arc::clone(&self.backend), Arc::clone(&self.tail), after, filter)
    }

    pub(crate) fn watch_head(&self) -> watch::Receiver<i64> {
        let head = self.tail.head.subscribe();
        // The tailer rests while no one listens: this watcher is someone.
        self.tail.wake.notify_one();
        head
    }

    pub(crate) async fn close(&self) {
        self.queue.lock().await.take();
        if let Some(task) = self.writer_task.lock().await.take() {
            let _ = task.await;
        }
        let tasks = std::mem::take(&mut *self.background.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            t.abort();
        }
    }
}

impl<B: Backend> Drop for LogCore<B> {
    fn drop(&mut self) {
        for t in self.background.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            t.abort();
        }
    }
}

/// Implement [`EventStore`] for a store type that wraps a `LogCore` in a field named `core`.
macro_rules! impl_event_store {
    ($store:ty, $kind:expr) => {
        #[async_trait::async_trait]
        impl $crate::store::EventStore for $store {
            async fn append_multi(
                &self,
                appends: Vec<$crate::append::StreamAppend>,
            ) -> Result<Vec<$crate::append::AppendResult>, $crate::error::EventLogError> {
                self.core.append_multi(appends).await
            }
            async fn queue_in_order(
                &self,
                appends: Vec<Vec<$crate::append::StreamAppend>>,
            ) -> $crate::queued::QueuedAppends {
                self.core.queue_in_order(appends).await
            }
            async fn read_stream(
                &self,
                stream_id: &str,
                from_version: i64,
                limit: usize,
            ) -> Result<Vec<agentlog_domain::envelope::RecordedEvent>, $crate::error::EventLogError> {
                $crate::backend::Backend::read_stream(&*self.core.backend, stream_id, from_version, limit).await
            }
            async fn read_all(
                &self,
                after: i64,
                filter: &$crate::filter::EventFilter,
                limit: usize,
            ) -> Result<Vec<agentlog_domain::envelope::RecordedEvent>, $crate::error::EventLogError> {
                $crate::backend::Backend::read_all(&*self.core.backend, after, None, filter, limit).await
            }
            async fn read_all_unparsed(
                &self,
                after: i64,
                filter: &$crate::filter::EventFilter,
                limit: usize,
            ) -> Result<Vec<$crate::unparsed::UnparsedEvent>, $crate::error::EventLogError> {
                $crate::backend::Backend::read_all_unparsed(&*self.core.backend, after, None, filter, limit).await
            }
            async fn read_all_back(
                &self,
                after: i64,
                before: i64,
                filter: &$crate::filter::EventFilter,
                limit: usize,
            ) -> Result<Vec<agentlog_domain::envelope::RecordedEvent>, $crate::error::EventLogError> {
                $crate::backend::Backend::read_all_back(&*self.core.backend, after, before, filter, limit).await
            }
            async fn import(
                &self,
                events: Vec<agentlog_domain::envelope::RecordedEvent>,
            ) -> Result<$crate::import::ImportResult, $crate::error::EventLogError> {
                self.core.import(events).await
            }
            async fn stream_version(&self, stream_id: &str) -> Result<i64, $crate::error::EventLogError> {
                $crate::backend::Backend::stream_version(&*self.core.backend, stream_id).await
            }
            async fn head_position(&self) -> Result<i64, $crate::error::EventLogError> {
                $crate::backend::Backend::head(&*self.core.backend).await
            }
            async fn locate(
                &self,
                ids: &[uuid::Uuid],
            ) -> Result<Vec<$crate::append::LocatedEvent>, $crate::error::EventLogError> {
                $crate::backend::Backend::locate(&*self.core.backend, ids).await
            }
            fn subscribe(
                &self,
                after: i64,
                filter: $crate::filter::EventFilter,
            ) -> $crate::subscription::EventSubscription {
                self.core.subscribe(after, filter)
            }
            fn watch_head(&self) -> tokio::sync::watch::Receiver<i64> {
                self.core.watch_head()
            }
            fn backend_kind(&self) -> $crate::store::BackendKind {
                $kind
            }
            fn database(&self) -> $crate::store::DatabasePool {
                self.database_pool()
            }
            fn wal_checkpoints(&self) -> Option<std::sync::Arc<$crate::checkpoints::CheckpointStats>> {
                self.checkpoint_stats()
            }
            async fn close(&self) {
                self.core.close().await
            }
        }
    };
}
pub(crate) use impl_event_store;
