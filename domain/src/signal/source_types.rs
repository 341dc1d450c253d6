//! Upstream's signal source types (`AGENT_SIGNAL_SOURCE_TYPES` at the pinned commit: 17; the
//! 18th, `quick_note.analyze.requested`, only exists later upstream and is not accepted here).

/// Every accepted source type.
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

/// The types a browser may send (`AGENT_SIGNAL_CLIENT_SOURCE_TYPES`).
pub const CLIENT_SOURCE_TYPES: [&str; 6] = [
    "client.gateway.error",
    "client.gateway.runtime_end",
    "client.gateway.step_complete",
    "client.gateway.stream_start",
    "client.runtime.complete",
    "client.runtime.start",
];

/// Is this a known source type?
pub fn is_source_type(source_type: &str) -> bool {
    AGENT_SIGNAL_SOURCE_TYPES.contains(&source_type)
}

/// May a browser send this source type?
pub fn is_client_source_type(source_type: &str) -> bool {
    CLIENT_SOURCE_TYPES.contains(&source_type)
}
