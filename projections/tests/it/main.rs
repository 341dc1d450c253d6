//! The crate's integration tests, in one binary: each `tests/*.rs` file would be a separately
//! linked executable, and linking dominated CI. They run on real SQLite, and PostgreSQL from
//! `AGENTLOG_TEST_PG_URL`.

// First: the `both!` macro must be defined before the modules that use it.
#[macro_use]
mod support;

mod analytics_rollups;
mod determinism;
mod read_db;
mod read_model_conversations;
mod read_model_inbox;
mod read_model_tasks;
mod runner;
mod tasks_mirror_domain;
