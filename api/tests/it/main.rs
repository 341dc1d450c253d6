//! The server's integration tests, in one binary (each `tests/*.rs` file would be a separately
//! linked executable, and linking dominated CI). Every test starts the real server on a free
//! port, against SQLite and against PostgreSQL (`AGENTLOG_TEST_PG_URL`), and drives it over
//! real HTTP and websocket.

// First: `both!` must be defined before the modules that use it.
#[macro_use]
mod support;

#[path = "../../examples/worker.rs"]
mod worker;

mod batch;
mod bounds;
mod budget_history;
mod budget_refusals;
mod budgets;
// The fuzz target's entry point, for its regression inputs (`fuzz_regressions`).
#[path = "../../../fuzz/server/src/graphql_request.rs"]
mod fuzz_graphql_request;

mod card_timeouts;
mod clients;
mod clock;
mod concurrency;
mod console;
mod conversation_tree;
mod db_faults;
mod disk_full;
mod documented_mutations;
mod example_worker;
mod faults;
mod feed;
mod fuzz_regressions;
mod genai_metrics;
mod global_ids;
mod hostile;
mod idempotency;
mod idle_ticks;
mod instances;
mod isolation;
mod leases;
mod links;
mod message_groups;
mod migrations;
mod mutations;
mod namespaces;
mod next_fire;
mod orchestration;
mod otlp;
mod paging;
mod reactions_floor;
mod reactors;
mod read_models;
mod refusals;
mod request_durations;
mod retention;
mod roster;
mod scheduler_due;
mod scheduling;
mod schema_drift;
mod server;
mod shutdown;
mod slow_db;
mod snapshots;
mod stored_json;
mod subagents;
mod subscription_cap;
mod subscription_fan_out;
mod tasks_flow;
mod token_cli;
mod units;
mod unwritable_log;
mod wal_checkpoints;
mod write_load;
