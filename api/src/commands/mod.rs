//! The application's use cases: turn a caller's request into domain commands, run them through
//! the [`CommandHandler`](agentlog_eventlog::CommandHandler), and settle the read models.
//! GraphQL resolvers only parse arguments and call these.

pub mod aggregates;
pub mod batch;
pub mod briefs;
pub mod budgets;
pub mod builtins;
mod caller;
mod checks;
pub mod groups;
pub mod notifications;
pub mod operations;
pub mod sources;
pub mod tasks;

pub use caller::Commands;
pub use checks::{check_id, check_replay, check_time_zone, is_replay};
