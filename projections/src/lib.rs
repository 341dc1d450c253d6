//! agentlog projections
