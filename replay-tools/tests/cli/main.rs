//! The real `agentlog-replay` binary, every command, against a generated realistic log
//! (`Workload`) on SQLite and on PostgreSQL. PostgreSQL tests need `AGENTLOG_TEST_PG_URL`
//! (skipped with a message without it, failing under `CI=true`).

mod budget;
mod conversation_parse;
mod generate;
mod inspect;
mod schema;
mod support;
mod transfer;
mod verify;
