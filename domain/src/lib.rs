//! agentlog's pure model: the event envelope and causal chain, scope keys, deterministic ids,
//! and the aggregates that decide what happens (`decide`) and record it (`evolve`).
//!
//! Nothing here does I/O, reads a clock or makes a random id: time and ids are passed in
//! ([`context::Context`]), so a test, a replay and production run the same code with the same
//! result.
//!
//! - core: [`aggregate`] (traits, stream names), [`context`] (time, ids, chain, stamping),
//!   [`error`], [`event_codec`] (payloads and upcasts), [`events`] (decode any event);
//! - aggregates: [`operation`], [`agent`], [`conversation`], [`task`], [`brief`], [`budget`],
//!   [`notification`], [`cron`], [`group`], [`signal::source`], [`refusal`] (a reactor's
//!   refused command);
//! - pure processes: [`rules`] (cross-aggregate decisions), [`supervisor`] (group
//!   orchestration), [`task_graph`] (cycles, subtask layers), [`task::tick`] (scheduler ticks),
//!   [`signal::policy`] (fact → commands).

#![warn(missing_docs)]

#[macro_use]
pub mod event_codec;

pub mod agent;
pub mod aggregate;
pub mod brief;
pub mod budget;
pub mod context;
pub mod conversation;
pub mod cron;
pub mod deadline;
pub mod envelope;
pub mod error;
pub mod events;
pub mod group;
pub mod ids;
pub mod notification;
pub mod operation;
pub mod refusal;
pub mod rules;
pub mod scope;
pub mod signal;
pub mod supervisor;
pub mod task;
pub mod task_graph;

#[cfg(test)]
mod testing;
