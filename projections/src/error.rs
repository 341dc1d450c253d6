//! Errors of the projections.

pub use agentlog_sqlite::SqliteFailure;

/// What can go wrong while projecting or reading read models.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// The read-model database failed.
    #[error("database error while {context}: {source}")]
    Database {
        /// What was being done.
        context: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A statement on the read models' own SQLite connections failed (`db::sqlite`).
    #[error("database error while {context}: {source}")]
    Sqlite {
        /// What was being done.
        context: &'static str,
        /// SQLite's code and message.
        #[source]
        source: SqliteFailure,
    },
    /// The log failed.
    #[error(transparent)]
    Log(#[from] agentlog_eventlog::EventLogError),
    /// A stored event could not be decoded into its domain type.
    #[error("event {event_id} ({event_type}) at position {position} cannot be decoded: {reason}")]
    Decode {
        /// The event.
        event_id: uuid::Uuid,
        /// Its type.
        event_type: String,
        /// Its position.
        position: i64,
        /// Why.
        reason: String,
    },
    /// A projection was asked for something inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// A read would exceed the bound on its cost (the request must be narrowed).
    #[error("{0}")]
    Limit(String),
    /// No projection has this name.
    #[error("no projection named `{0}`")]
    UnknownProjection(String),
    /// Waiting for projections to reach a position took too long.
    #[error("projections did not reach position {position} within {waited_ms} ms (at {reached})")]
    Timeout {
        /// The position waited for.
        position: i64,
        /// The lowest position reached.
        reached: i64,
        /// How long we waited.
        waited_ms: u64,
    },
    /// The runner has stopped.
    #[error("the projection runner has stopped")]
    Stopped,
    /// A committed checkpoint is behind what this runner applied: something rebuilt the read
    /// model meanwhile (another process). The runner resumes from the committed checkpoints.
    #[error("the checkpoint of `{name}` moved back from {applied} to {committed} (rebuilt by another process?)")]
    CheckpointMovedBack {
        /// The projection.
        name: &'static str,
        /// The position this runner had applied.
        applied: i64,
        /// The committed position found.
        committed: i64,
    },
}

impl ProjectionError {
    /// Wrap a driver error with what was being done.
    pub(crate) fn db(context: &'static str) -> impl FnOnce(sqlx::Error) -> Self {
        move |source| Self::Database { context, source }
    }

    /// True when the database refused a write for lack of space (see
    /// [`agentlog_eventlog::is_storage_full`]).
    pub fn is_storage_full(&self) -> bool {
        match self {
            Self::Database { source, .. } => agentlog_eventlog::is_storage_full(source),
            Self::Sqlite { source, .. } => source.is_storage_full(),
            Self::Log(e) => e.is_storage_full(),
            _ => false,
        }
    }

    /// True when the database cancelled the statement (see
    /// [`agentlog_eventlog::is_statement_timeout`]).
    pub fn is_statement_timeout(&self) -> bool {
        match self {
            Self::Database { source, .. } => agentlog_eventlog::is_statement_timeout(source),
            Self::Log(e) => e.is_statement_timeout(),
            _ => false,
        }
    }

    /// True for a database failure that passes (see [`agentlog_eventlog::is_transient`]): the
    /// batch is not at fault, and the runner applies it again from the committed checkpoints
    /// rather than marking its projection failed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Database { source, .. } => agentlog_eventlog::is_transient(source),
            Self::Sqlite { source, .. } => source.is_transient(),
            Self::Log(e) => e.is_transient(),
            _ => false,
        }
    }

    /// True when the database could not be reached (see
    /// [`agentlog_eventlog::is_connection_error`]): worth a retry later.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Database { source, .. } => agentlog_eventlog::is_connection_error(source),
            Self::Log(e) => e.is_unavailable(),
            _ => false,
        }
    }
}
