//! agentlog projections
pub mod conversation;
