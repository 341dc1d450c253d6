//! The value types of an operation: status, phase, kind, completion reason, usage, lease,
//! plan and todos, artifacts, review scores, errors.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where an operation is in its life (upstream's 7 statuses plus `cancelled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationStatus {
    /// Created, not yet claimed by a worker.
    #[default]
    Idle,
    /// A worker is on it (or it was resumed and waits to be claimed again).
    Running,
    /// Paused on a human-in-the-loop card.
    WaitingForHuman,
    /// Paused until async tools or dispatched sub-agents report (a barrier).
    WaitingForAsyncTool,
    /// Finished normally (completion reason done, max_steps or cost_limit).
    Done,
    /// Finished with an error.
    Error,
    /// Stopped from outside or because its worker vanished (lease expiry).
    Interrupted,
    /// Cancelled by a user or by a cancel cascade.
    Cancelled,
}

impl OperationStatus {
    /// Every status.
    pub const ALL: [OperationStatus; 8] = [
        Self::Idle,
        Self::Running,
        Self::WaitingForHuman,
        Self::WaitingForAsyncTool,
        Self::Done,
        Self::Error,
        Self::Interrupted,
        Self::Cancelled,
    ];

    /// Terminal: nothing but a resume (of an interrupted run that may resume) changes it again.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Error | Self::Interrupted | Self::Cancelled)
    }

    /// Paused on a human or on async work.
    pub fn is_waiting(self) -> bool {
        matches!(self, Self::WaitingForHuman | Self::WaitingForAsyncTool)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::WaitingForHuman => "waiting_for_human",
            Self::WaitingForAsyncTool => "waiting_for_async_tool",
            Self::Done => "done",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
            Self::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for OperationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the agent is doing inside a running operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Calling the model.
    Thinking,
    /// Running tools.
    Acting,
    /// Writing the answer.
    Responding,
    /// Wrapping up (composing the final reply, settling).
    Finalizing,
    /// Finished.
    Done,
}

/// What kind of run it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    /// The main run of a conversation (one unfinished per conversation).
    #[default]
    Conversation,
    /// A sub-agent spawned by another operation.
    Subagent,
    /// A long-running tool.
    Tool,
    /// A group chat's supervisor run.
    Group,
    /// A group member's task that runs on the client (`executeAgentTask` with `runInClient`):
    /// claimed by a client worker, which asks `workAvailable` for this kind.
    ClientTask,
    /// A task's topic run.
    Task,
}

impl OperationKind {
    /// Every kind.
    pub const ALL: [OperationKind; 6] =
        [Self::Conversation, Self::Subagent, Self::Tool, Self::Group, Self::ClientTask, Self::Task];
}

/// Why an operation stopped (upstream's 7 plus `cancelled`). The two `waiting_*` reasons mark
/// pauses, not ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionReason {
    /// Finished normally.
    Done,
    /// Failed.
    Error,
    /// Interrupted.
    Interrupted,
    /// Stopped by its step limit.
    MaxSteps,
    /// Stopped by its cost limit.
    CostLimit,
    /// Paused on a human (not an end).
    WaitingForHuman,
    /// Paused on async work (not an end).
    WaitingForAsyncTool,
    /// Cancelled.
    Cancelled,
}

impl CompletionReason {
    /// A pause reported with the completion vocabulary; the run is not finished.
    pub fn is_pause(self) -> bool {
        matches!(self, Self::WaitingForHuman | Self::WaitingForAsyncTool)
    }
}

/// A tool call made in a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// Tool name (`identifier/apiName` or a plain name).
    pub name: String,
    /// Outcome, when known (`succeeded`, `failed`, `pending`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The call's arguments, when the worker reports them (a group supervisor's decisions
    /// arrive this way: `broadcast {agentIds, instruction}`, `delegate {agentId}`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
}

/// A worker's lease on an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The worker holding it.
    pub worker_id: String,
    /// When it runs out unless renewed.
    pub expires_at: DateTime<Utc>,
    /// The SHA-256 of its token (empty for a lease claimed before tokens: no token matches).
    #[serde(default)]
    pub token_hash: String,
}

/// The status of a plan step or a todo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One step of an agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// What the step is.
    pub text: String,
    /// Its status.
    pub status: ItemStatus,
}

/// An agent's plan, replaced whole by every update.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Optional explanation of the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps.
    pub steps: Vec<PlanStep>,
}

/// One todo of an agent, replaced whole (as a list) by every update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    /// Its id within the list.
    pub id: String,
    /// What to do.
    pub text: String,
    /// Its status.
    pub status: ItemStatus,
}

/// An artifact a run produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id.
    pub artifact_id: String,
    /// Title.
    pub title: String,
    /// Kind (`document`, `image`, `code`, …).
    pub kind: String,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Where the content lives (a document id, an object-store key, a URL).
    pub content_ref: String,
}

/// What went wrong, for a failed operation (upstream `error` jsonb).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationError {
    /// Human-readable message.
    pub message: String,
    /// Error class (`provider_error`, `tool_error`, …).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Machine code (`insufficient_budget`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// How an operation was interrupted (upstream `interruption` jsonb).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interruption {
    /// Why.
    pub reason: String,
    /// Whether it could be resumed by a new run.
    pub can_resume: bool,
    /// When.
    pub interrupted_at: DateTime<Utc>,
}

/// The largest child result (in characters) passed to a parent.
pub const CHILD_RESULT_MAX_CHARS: usize = 32_000;

/// Cap `text` at [`CHILD_RESULT_MAX_CHARS`] characters (never splitting a character); returns
/// the kept text and whether anything was cut.
pub fn cap_child_result(text: &str) -> (String, bool) {
    match text.char_indices().nth(CHILD_RESULT_MAX_CHARS) {
        Some((byte_index, _)) => (text[..byte_index].to_string(), true),
        None => (text.to_string(), false),
    }
}
