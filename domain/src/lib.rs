//! agentlog's pure model: the event envelope and causal chain, scope keys, deterministic ids,
//! and the aggregates that decide what happens (`decide`) and record it (`evolve`).
//!
//! Nothing here does I/O, reads a clock or makes a random id: time and ids are passed in, so a
//! test, a replay and production run the same code with the same result.

#[macro_use]
pub mod event_codec;

pub mod aggregate;
pub mod context;
pub mod envelope;
pub mod error;
pub mod ids;
pub mod operation;
pub mod scope;
