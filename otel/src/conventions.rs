//! Attribute names, as the OpenTelemetry semantic conventions name them.

/// The semantic-conventions release whose GenAI names agentlog writes.
pub const VERSION: &str = "1.37.0";
/// Schema URL of that release, written on every scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.37.0";

/// `gen_ai.operation.name`: `invoke_agent`, `chat`, `execute_tool`.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name`.
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// `gen_ai.request.model`.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.usage.input_tokens`.
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`.
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.agent.id`.
pub const AGENT_ID: &str = "gen_ai.agent.id";
/// `gen_ai.agent.name`.
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// `gen_ai.conversation.id`.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// `gen_ai.tool.call.id`.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.tool.name`.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `error.type`.
pub const ERROR_TYPE: &str = "error.type";
/// `service.name` (resource).
pub const SERVICE_NAME: &str = "service.name";

/// agentlog's own attributes (no convention names them).
pub mod agentlog {
    /// The operation's id.
    pub const OPERATION_ID: &str = "agentlog.operation.id";
    /// The chain's root source (`rootSourceId`): the fact that started the causal chain.
    pub const ROOT_SOURCE_ID: &str = "agentlog.root_source_id";
    /// The run's cost in millionths of the currency unit.
    pub const COST_MICROS: &str = "agentlog.cost_micros";
    /// How the run ended (`done`, `max_steps`, `cost_limit`, `error`, `cancelled`, `interrupted`).
    pub const COMPLETION_REASON: &str = "agentlog.completion_reason";
    /// The run's kind (`conversation`, `subagent`, `tool`, `group`, `task`).
    pub const OPERATION_KIND: &str = "agentlog.operation.kind";
    /// The step's index in its run (1-based).
    pub const STEP_INDEX: &str = "agentlog.step.index";
    /// A tool call's outcome as the worker reported it.
    pub const TOOL_STATUS: &str = "agentlog.tool.status";
    /// The log position of the event a span or span event comes from.
    pub const POSITION: &str = "agentlog.position";
}
