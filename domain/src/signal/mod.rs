//! The agent-signal bus's pure parts: source types, the source stream (source → signals →
//! actions, all events on `source-<sourceId>`), and the policies that turn events into commands.
//!
//! The registries ([`registry`]) and the built-in source and signal processors ([`processors`])
//! are pure; the action handlers, which do I/O, live in the api crate's source reactor.

pub mod policy;
pub mod processors;
pub mod registry;
pub mod source;
pub mod source_types;

pub use source::{ActionStatus, Source, SourceCommand, SourceEvent};
pub use source_types::{
    AGENT_SIGNAL_SOURCE_TYPES, AGENTLOG_SOURCE_TYPES, CLIENT_SOURCE_TYPES, is_agentlog_source_type,
    is_client_source_type, is_source_type,
};

#[cfg(test)]
mod tests;
