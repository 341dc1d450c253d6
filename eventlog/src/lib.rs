//! agentlog's append-only event log, on SQLite (the embedded default) or PostgreSQL.
//!
//! One [`EventStore`] trait; [`SqliteEventStore`] and [`PostgresEventStore`] implement it over
//! shared machinery: input validation, a group-commit writer, a tailer with an in-memory ring of
//! recent events, and subscriptions that read history and then follow live.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentlog_eventlog::EventLogError> {
//! use agentlog_eventlog::{open_store, StoreOptions};
//! let store = open_store("sqlite:agentlog.db", StoreOptions::default()).await?;
//! println!("head at {}", store.head_position().await?);
//! # Ok(()) }
//! ```

mod append;
mod applied;
mod backend;
mod batch;
mod cached_command;
mod checkpoints;
mod command;
mod command_counts;
mod error;
mod filter;
mod import;
pub mod migrate;
mod open;
pub mod postgres;
mod queued;
mod reactor_checkpoints;
pub mod sqlite;
mod state_cache;
mod store;
mod subscription;
mod tail;
#[cfg(feature = "test-support")]
pub mod testing;
mod unparsed;
mod url;
mod validate;
mod writer;

pub use append::{AppendResult, ExpectedVersion, LocatedEvent, StreamAppend};
pub use applied::applied_command;
pub use checkpoints::CheckpointStats;
pub use command::{
    CommandError, CommandHandler, CommandOutcome, Loaded, SNAPSHOT_EVERY, decode, fold_recorded, fold_stream,
};
pub use command_counts::CommandCounts;
pub use error::{
    EventLogError, ValidationError, is_connection_error, is_statement_timeout, is_storage_full, is_transient,
};
pub use filter::EventFilter;
pub use import::ImportResult;
pub use open::{open_store, schema_refusal};
pub use postgres::PostgresEventStore;
pub use queued::QueuedAppends;
pub use reactor_checkpoints::{REACTIONS_FLOOR, REACTOR_CHECKPOINT_UPSERT, reactions_floor, set_reactions_floor};
pub use sqlite::SqliteEventStore;
pub use store::{BackendKind, DatabasePool, EventStore, StoreOptions};
pub use subscription::EventSubscription;
pub use unparsed::UnparsedEvent;
pub use url::{missing_sqlite_file, redact};
pub use validate::{Limits, is_valid_event_type};
