//! agentlog event log
