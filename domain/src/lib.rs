//! agentlog's pure model: the event envelope and causal chain, scope keys, deterministic ids,
//! and the aggregates that decide what happens (`decide`) and record it (`evolve`).
//!
//! Nothing here does I/O, reads a clock or makes a random id: time and ids are passed in
//! ([`context::Context`]), so a test, a replay and production run the same code with the same
//! result.
//!
//! - core: [`aggregate`] (traits, stream names), [`context`] (time, ids, chain, stamping),
//!   [`error`], [`event_codec`] (payloads and upcasts), [`events`] (decode any event);
//! - aggregates: [`operations`], [`agents`], [`conversations`], [`tasks`], [`briefs`], [`budgets`],
//!   [`notifications`], [`cron_jobs`], [`groups`], [`signal::source`], [`refusals`] (a reactor's
//!   refused command);
//! - pure processes: [`rules`] (cross-aggregate decisions), [`supervisor`] (group
//!   orchestration), [`tasks::graph`] (cycles, subtask layers), [`tasks::tick`] (scheduler ticks),
//!   [`signal::policy`] (fact → commands).

#![warn(missing_docs)]

#[macro_use]
pub mod event_codec;

pub mod agents;
pub mod aggregate;
pub mod briefs;
pub mod budgets;
pub mod context;
pub mod conversations;
pub mod cron_jobs;
pub mod deadline;
pub mod envelope;
pub mod error;
pub mod events;
pub mod groups;
pub mod ids;
pub mod known_keys;
pub mod notifications;
pub mod operations;
pub mod refusals;
pub mod rules;
pub mod scope;
pub mod signal;
pub mod stamp;
pub mod streams;
pub mod supervisor;
pub mod tasks;
pub mod values;

#[cfg(test)]
mod testing;
