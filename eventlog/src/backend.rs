//! What a database must provide to carry the log. The SQLite and PostgreSQL stores implement it;
//! the group-commit writer, the tailer and subscriptions are written once on top.

use std::{future::Future, sync::Arc};

use agentlog_domain::envelope::RecordedEvent;
use chrono::{DateTime, Utc};
use tokio::{sync::Notify, task::JoinHandle};
use uuid::Uuid;

use crate::{
    append::{AppendResult, LocatedEvent},
    error::EventLogError,
    filter::EventFilter,
    import::{ImportResult, PreparedImport},
    unparsed::UnparsedEvent,
    validate::PreparedAppend,
};

/// Answers for each append of a committed batch, in order.
pub(crate) type BatchAnswers = Vec<Result<Vec<AppendResult>, EventLogError>>;

/// The SQL side of one backend.
pub(crate) trait Backend: Send + Sync + 'static {
    /// The connection the single writer holds between batches.
    type Writer: Send + 'static;

    /// Open (or re-open after a failure) the writer's dedicated connection.
    fn open_writer(&self) -> impl Future<Output = Result<Self::Writer, EventLogError>> + Send;

    /// Judge and insert a batch of appends in one transaction. `Err` means the transaction as a
    /// whole failed and nothing of it is visible (the writer then retries appends one by one).
    fn commit_batch(
        &self,
        writer: &mut Self::Writer,
        batch: &[Arc<PreparedAppend>],
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<BatchAnswers, EventLogError>> + Send;

    /// Import events recorded elsewhere (see [`crate::import`]) in one transaction that holds
    /// the same lock as appends, on a connection of its own.
    fn import_batch(
        &self,
        events: Vec<PreparedImport>,
    ) -> impl Future<Output = Result<ImportResult, EventLogError>> + Send;

    /// Events with `after < position <= up_to` that pass `filter`, in position order.
    fn read_all(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<RecordedEvent>, EventLogError>> + Send;

    /// [`read_all`](Self::read_all) with each payload as its stored JSON text.
    fn read_all_unparsed(
        &self,
        after: i64,
        up_to: Option<i64>,
        filter: &EventFilter,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<UnparsedEvent>, EventLogError>> + Send;

    /// The last `limit` events with `after < position < before` that pass `filter`, newest first.
    fn read_all_back(
        &self,
        after: i64,
        before: i64,
        filter: &EventFilter,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<RecordedEvent>, EventLogError>> + Send;

    /// Events of one stream with `stream_version >= from_version`, in order.
    fn read_stream(
        &self,
        stream_id: &str,
        from_version: i64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<RecordedEvent>, EventLogError>> + Send;

    /// The stream's current version (0 when it does not exist).
    fn stream_version(&self, stream_id: &str) -> impl Future<Output = Result<i64, EventLogError>> + Send;

    /// The highest committed position (0 for an empty log).
    fn head(&self) -> impl Future<Output = Result<i64, EventLogError>> + Send;

    /// Where those of `ids` that are stored are, in no particular order.
    fn locate(&self, ids: &[Uuid]) -> impl Future<Output = Result<Vec<LocatedEvent>, EventLogError>> + Send;

    /// Start whatever tells this process about appends made by other processes (PostgreSQL
    /// LISTEN), and announces this process's appends to them. `committed` carries the head after
    /// each local commit; `wake` is poked when others appended.
    fn spawn_fan_out(
        self: &Arc<Self>,
        committed: tokio::sync::watch::Receiver<i64>,
        wake: Arc<Notify>,
    ) -> Vec<JoinHandle<()>>;
}

/// Current time truncated to the microsecond, the precision both databases store.
pub(crate) fn now_micros() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}
