//! The crate's integration tests, in one binary: each `tests/*.rs` file would be a separately
//! linked executable, and linking dominated CI. The parser's tests need no database; the rest
//! need the `db` feature (real SQLite, and PostgreSQL from `AGENTLOG_TEST_PG_URL`).

// First: the `both!` macro must be defined before the modules that use it.
#[cfg(feature = "db")]
#[macro_use]
mod support;

mod conversation_fixtures;
mod conversation_robustness;

#[cfg(feature = "db")]
mod determinism;
#[cfg(feature = "db")]
mod read_db;
#[cfg(feature = "db")]
mod read_model_conversations;
#[cfg(feature = "db")]
mod read_model_inbox;
#[cfg(feature = "db")]
mod read_model_tasks;
#[cfg(feature = "db")]
mod runner;
#[cfg(feature = "db")]
mod tasks_mirror_domain;
#[cfg(feature = "db")]
mod workload;
