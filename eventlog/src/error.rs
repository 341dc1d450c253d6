//! The errors of the event log.

use uuid::Uuid;

use crate::append::ExpectedVersion;

/// Everything that can go wrong when appending to or reading from the log.
#[derive(Debug, thiserror::Error)]
pub enum EventLogError {
    /// The stream is not at the version the append expected; nothing was written.
    #[error("concurrency conflict on stream `{stream_id}`: expected {expected}, actual {actual}")]
    Conflict {
        /// The stream.
        stream_id: String,
        /// What the caller expected.
        expected: ExpectedVersion,
        /// What the stream is at (0 = the stream does not exist).
        actual: i64,
    },
    /// An event id is already in the log with other content; nothing was written.
    #[error("event {event_id} is already in the log with different content ({detail})")]
    IdempotencyConflict {
        /// The event id.
        event_id: Uuid,
        /// What differs.
        detail: String,
    },
    /// The input was refused before anything was written.
    #[error("invalid append: {0}")]
    Validation(#[from] ValidationError),
    /// A stored event could not be decoded.
    #[error("stored event at position {position} is corrupt: {reason}")]
    Corrupt {
        /// Its position.
        position: i64,
        /// What is wrong.
        reason: String,
    },
    /// The database refused or failed. When this answers an append, the outcome is unknown only
    /// if the failure hit the commit itself; re-appending the same event ids is always safe.
    #[error("database error while {context}: {source}")]
    Database {
        /// What the log was doing.
        context: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A statement on the SQLite log's own writer or import connection failed; as with
    /// [`Database`](Self::Database), re-appending the same event ids is always safe.
    #[error("database error while {context}: {source}")]
    Sqlite {
        /// What the log was doing.
        context: &'static str,
        /// SQLite's code and message.
        #[source]
        source: agentlog_sqlite::SqliteFailure,
    },
    /// Applying the schema migrations failed.
    #[error("migrating the database failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database URL is not one the log understands.
    #[error("unsupported database URL `{0}`: expected sqlite:… or postgres://…")]
    UnsupportedUrl(String),
    /// The database cannot be reached right now; nothing was written. Safe to retry.
    #[error("the event log's database is unavailable: {reason}")]
    Unavailable {
        /// What failed.
        reason: String,
    },
    /// The log has been closed.
    #[error("the event log is closed")]
    Closed,
}

impl EventLogError {
    /// Wrap a driver error with what the log was doing.
    pub(crate) fn db(context: &'static str) -> impl FnOnce(sqlx::Error) -> Self {
        move |source| Self::Database { context, source }
    }

    /// True when the database could not be reached (down, restarting, connection lost, no
    /// connection free in time) rather than refusing the statement: worth a retry later.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Database { source, .. } => is_connection_error(source),
            _ => false,
        }
    }

    /// True when the database refused the write for lack of space (SQLite `SQLITE_FULL`,
    /// PostgreSQL `53100 disk_full`, `ENOSPC`): nothing was written; worth a retry once space is
    /// freed.
    pub fn is_storage_full(&self) -> bool {
        match self {
            Self::Database { source, .. } => is_storage_full(source),
            Self::Sqlite { source, .. } => source.is_storage_full(),
            _ => false,
        }
    }

    /// True when the database cancelled the statement (see [`is_statement_timeout`]): nothing
    /// of it was written.
    pub fn is_statement_timeout(&self) -> bool {
        match self {
            Self::Database { source, .. } => is_statement_timeout(source),
            _ => false,
        }
    }

    /// True for a database failure that passes (see [`is_transient`]).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Database { source, .. } => is_transient(source),
            Self::Sqlite { source, .. } => source.is_transient(),
            _ => false,
        }
    }

    /// True for a concurrency conflict (worth a retry after re-reading the stream).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }
}

/// Why an append was refused before touching the database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The stream id is empty.
    #[error("stream id must not be empty")]
    EmptyStreamId,
    /// The stream id is too long or has characters it may not have.
    #[error("stream id `{stream_id}` is invalid: {reason}")]
    InvalidStreamId {
        /// The offending id (truncated).
        stream_id: String,
        /// Why.
        reason: &'static str,
    },
    /// An append with no events.
    #[error("an append must carry at least one event")]
    NoEvents,
    /// Too many events in one append.
    #[error("an append may carry at most {max} events, got {got}")]
    TooManyEvents {
        /// The limit.
        max: usize,
        /// What was given.
        got: usize,
    },
    /// The event type is not dotted lower-case (`operation.started`).
    #[error("event type `{0}` is invalid: expected dotted lower-case like `operation.started`")]
    InvalidEventType(String),
    /// The schema version is below 1.
    #[error("event {event_id}: schema version must be 1 or more, got {got}")]
    InvalidSchemaVersion {
        /// The event.
        event_id: Uuid,
        /// What was given.
        got: i32,
    },
    /// The payload is not a JSON object.
    #[error("event {event_id}: payload must be a JSON object, got {got}")]
    PayloadNotObject {
        /// The event.
        event_id: Uuid,
        /// The JSON kind that was given.
        got: &'static str,
    },
    /// The payload is bigger than the configured limit.
    #[error("event {event_id}: payload is {size} bytes, over the limit of {limit} bytes")]
    PayloadTooLarge {
        /// The event.
        event_id: Uuid,
        /// Its serialized size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A string in the payload or metadata contains U+0000, which PostgreSQL's JSONB cannot hold.
    #[error("event {event_id}: strings in payload and metadata must not contain U+0000 (NUL)")]
    NulInJson {
        /// The event.
        event_id: Uuid,
    },
    /// A client's `requestId` already named a different request (another mutation, or the same
    /// with other arguments).
    #[error("requestId was already used for a different request (another mutation or other arguments)")]
    RequestReused,
    /// The nil UUID is not an event id.
    #[error("event id must not be the nil UUID")]
    NilEventId,
    /// The same event id twice in one append.
    #[error("event id {0} appears twice in one append")]
    DuplicateEventId(Uuid),
    /// The same stream twice in one multi-stream append.
    #[error("stream `{0}` appears twice in one multi-stream append")]
    DuplicateStream(String),
    /// The owner is missing.
    #[error("event {event_id}: metadata.userId must not be empty")]
    EmptyUserId {
        /// The event.
        event_id: Uuid,
    },
}

/// True when a driver error says the database cannot be reached — connection refused, reset or
/// closed, the pool timed out waiting for one, or the server is shutting down or starting up —
/// rather than that it refused the statement.
pub fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        // PostgreSQL: class 08 (connection exception), 57P01-57P03 (admin / crash shutdown,
        // cannot connect now).
        sqlx::Error::Database(db) => {
            db.code().is_some_and(|c| c.starts_with("08") || matches!(c.as_ref(), "57P01" | "57P02" | "57P03"))
        }
        _ => false,
    }
}

/// True when a driver error passes rather than says something of the data: the database
/// unreachable ([`is_connection_error`]), the statement cancelled ([`is_statement_timeout`]),
/// the disk full ([`is_storage_full`]); PostgreSQL's class 40 (serialization failure,
/// deadlock), class 53 (insufficient resources), `55P03` (lock not available) and class 58
/// (system error, I/O); SQLite busy, locked, out of memory or an I/O error. Worth the same
/// statement again later.
pub fn is_transient(e: &sqlx::Error) -> bool {
    if is_connection_error(e) || is_statement_timeout(e) || is_storage_full(e) {
        return true;
    }
    match e {
        sqlx::Error::Database(db) if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() => {
            // SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_IOERR (any extended code).
            db.code().and_then(|c| c.parse::<i64>().ok()).is_some_and(|n| matches!(n & 0xff, 5 | 6 | 7 | 10))
        }
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            c.starts_with("40") || c.starts_with("53") || c.starts_with("58") || c.as_ref() == "55P03"
        }),
        _ => false,
    }
}

/// True when a driver error says the database cancelled the statement: PostgreSQL's `57014`
/// (query_canceled), which `statement_timeout` raises.
pub fn is_statement_timeout(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.as_ref() == "57014"))
}

/// True when a driver error says the database ran out of space: SQLite's `SQLITE_FULL` (13,
/// with any extended code), PostgreSQL's `53100` (disk_full), or an I/O error `ENOSPC`.
pub fn is_storage_full(e: &sqlx::Error) -> bool {
    const ENOSPC: i32 = 28;
    match e {
        sqlx::Error::Io(io) => io.raw_os_error() == Some(ENOSPC) || io.kind() == std::io::ErrorKind::StorageFull,
        sqlx::Error::Database(db) if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() => {
            db.code().and_then(|c| c.parse::<i64>().ok()).is_some_and(|n| n & 0xff == 13)
        }
        sqlx::Error::Database(db) => db.code().is_some_and(|c| c.as_ref() == "53100"),
        _ => false,
    }
}
