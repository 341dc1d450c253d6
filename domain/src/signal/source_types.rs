//! Signal source types: upstream's (`AGENT_SIGNAL_SOURCE_TYPES` at the pinned commit: 17; the
//! 18th, `quick_note.analyze.requested`, only exists later upstream and is not accepted here)
//! and agentlog's own (`agentlog.*`): facts of agentlog's that enter the bus as sources, so
//! they run through the same processors and leave the same source → signal → action trail.

/// Upstream's source types.
pub const AGENT_SIGNAL_SOURCE_TYPES: [&str; 17] = [
    "agent.execution.completed",
    "agent.execution.failed",
    "agent.nightly_review.requested",
    "agent.self_feedback_intent.declared",
    "agent.self_reflection.requested",
    "agent.user.message",
    "bot.message.merged",
    "client.gateway.error",
    "client.gateway.runtime_end",
    "client.gateway.step_complete",
    "client.gateway.stream_start",
    "client.runtime.complete",
    "client.runtime.start",
    "runtime.after_step",
    "runtime.before_step",
    "tool.outcome.completed",
    "tool.outcome.failed",
];

/// agentlog's own source types. agentlog produces them from its facts (the signal bus bridges
/// them in); a caller cannot send them.
pub const AGENTLOG_SOURCE_TYPES: [&str; 3] = [
    // `operation.lease_expired`: a worker stopped renewing its lease; the run was interrupted.
    "agentlog.operation.lease_expired",
    // `cron.fired`: a cron job's slot fired.
    "agentlog.cron.fired",
    // `cron.auto_disabled`: a cron job used its last execution and was switched off.
    "agentlog.cron.exhausted",
];

/// The types a browser may send (`AGENT_SIGNAL_CLIENT_SOURCE_TYPES`).
pub const CLIENT_SOURCE_TYPES: [&str; 6] = [
    "client.gateway.error",
    "client.gateway.runtime_end",
    "client.gateway.step_complete",
    "client.gateway.stream_start",
    "client.runtime.complete",
    "client.runtime.start",
];

/// Is this a known source type (upstream's or agentlog's own)?
pub fn is_source_type(source_type: &str) -> bool {
    AGENT_SIGNAL_SOURCE_TYPES.contains(&source_type) || is_agentlog_source_type(source_type)
}

/// Is this one of agentlog's own source types (produced by agentlog, never by a caller)?
pub fn is_agentlog_source_type(source_type: &str) -> bool {
    AGENTLOG_SOURCE_TYPES.contains(&source_type)
}

/// May a browser send this source type?
pub fn is_client_source_type(source_type: &str) -> bool {
    CLIENT_SOURCE_TYPES.contains(&source_type)
}
