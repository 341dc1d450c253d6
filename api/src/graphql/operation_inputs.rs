//! What operation mutations take: the start input, the filter, phases, usage, tool calls and
//! a task run's hand-off.

use agentlog_domain::operations::{CreateOperation, OperationKind};
use agentlog_domain::values::AgentRef;
use async_graphql::{Enum, InputObject, Json};
use chrono::{DateTime, Utc};

use crate::error::ApiError;

/// Which operations.
#[derive(InputObject, Default)]
pub struct OperationFilterInput {
    /// Only this status (`running`, `waiting_for_human`, …).
    pub status: Option<String>,
    /// Only this kind.
    pub kind: Option<OperationKindInput>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only runs on this model (the one used, overrides included).
    pub model: Option<String>,
    /// Only this conversation's.
    pub topic_id: Option<String>,
    /// Only this task's.
    pub task_id: Option<String>,
    /// Only this group's.
    pub group_id: Option<String>,
    /// Only children of this operation.
    pub parent_operation_id: Option<String>,
    /// Created at or after.
    pub created_from: Option<DateTime<Utc>>,
    /// Created before.
    pub created_to: Option<DateTime<Utc>>,
}

/// Kinds of operation.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::operations::OperationKind")]
pub enum OperationKindInput {
    /// Main run of a conversation.
    Conversation,
    /// Sub-agent.
    Subagent,
    /// Long-running tool.
    Tool,
    /// Group supervisor.
    Group,
    /// A group member's task run by a client worker.
    ClientTask,
    /// Task topic run.
    Task,
}

/// Phases.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::operations::Phase")]
pub enum PhaseInput {
    /// Calling the model.
    Thinking,
    /// Running tools.
    Acting,
    /// Writing the answer.
    Responding,
    /// Wrapping up.
    Finalizing,
    /// Finished.
    Done,
}

/// Start an operation.
#[derive(InputObject)]
pub struct StartOperationInput {
    /// Its id (client-chosen, unique among its owner's).
    pub operation_id: String,
    /// Kind.
    pub kind: OperationKindInput,
    /// The agent: a registered one (yours or a built-in), NOT_FOUND otherwise. The run
    /// records its current config version, model and provider from the roster.
    pub agent_id: String,
    /// The config version the caller expects (default: the current one); another version is
    /// refused with CONFLICT.
    pub agent_config_version: Option<i64>,
    /// Run on this model instead of the agent's (recorded as an override).
    pub model: Option<String>,
    /// Run on this provider instead of the agent's (recorded as an override).
    pub provider: Option<String>,
    /// Conversation.
    pub topic_id: Option<String>,
    /// Thread within the conversation.
    pub thread_id: Option<String>,
    /// Task.
    pub task_id: Option<String>,
    /// Chat group.
    pub group_id: Option<String>,
    /// Parent operation (sub-agents).
    pub parent_operation_id: Option<String>,
    /// Background sub-agent.
    #[graphql(default)]
    pub background: bool,
    /// Step limit.
    pub max_steps: Option<i32>,
    /// Cost limit in micro-units.
    pub cost_limit_micros: Option<i64>,
    /// What started it.
    pub trigger: Option<String>,
    /// Instruction (sub-agents, task runs).
    pub instruction: Option<String>,
}

impl StartOperationInput {
    pub(crate) fn into_create(self) -> Result<CreateOperation, ApiError> {
        let non_negative = |field: &str, v: Option<i64>| -> Result<Option<u64>, ApiError> {
            match v {
                Some(x) if x < 0 => Err(ApiError::validation(field, "must not be negative")),
                other => Ok(other.map(|x| x as u64)),
            }
        };
        let mut c = CreateOperation::new(
            self.operation_id,
            OperationKind::from(self.kind),
            AgentRef {
                agent_id: self.agent_id,
                // 0: whatever the roster's current version is (resolved by the start).
                config_version: non_negative("agentConfigVersion", self.agent_config_version)?.unwrap_or(0),
                model: self.model,
                provider: self.provider,
            },
        );
        c.topic_id = self.topic_id;
        c.thread_id = self.thread_id;
        c.task_id = self.task_id;
        c.group_id = self.group_id;
        c.parent_operation_id = self.parent_operation_id;
        c.background = self.background;
        c.max_steps = match self.max_steps {
            Some(n) if n < 1 => return Err(ApiError::validation("maxSteps", "must be at least 1")),
            other => other.map(|n| n as u32),
        };
        c.cost_limit_micros = non_negative("costLimitMicros", self.cost_limit_micros)?;
        c.trigger = self.trigger;
        c.instruction = self.instruction;
        Ok(c)
    }
}

pub(crate) fn non_negative(field: &str, v: Option<i64>) -> Result<Option<u64>, ApiError> {
    match v {
        Some(x) if x < 0 => Err(ApiError::validation(field, "must not be negative")),
        other => Ok(other.map(|x| x as u64)),
    }
}

/// Usage measured in a step; leave a field out when it was not measured.
#[derive(InputObject, Default)]
pub struct UsageInput {
    /// Prompt tokens.
    pub input_tokens: Option<i64>,
    /// Completion tokens.
    pub output_tokens: Option<i64>,
    /// All tokens.
    pub total_tokens: Option<i64>,
    /// Cost in micro-units.
    pub cost_micros: Option<i64>,
}

/// A tool call made in a step.
#[derive(InputObject)]
pub struct ToolCallInput {
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Outcome.
    pub status: Option<String>,
    /// Arguments (a group supervisor's decision parameters).
    pub arguments: Option<Json<serde_json::Value>>,
}

/// A task run's hand-off, written by the worker as it completes the run.
#[derive(Debug, async_graphql::InputObject)]
pub struct HandoffInput {
    /// Title of what was done.
    pub title: Option<String>,
    /// Summary.
    pub summary: Option<String>,
    /// Key findings.
    #[graphql(default)]
    pub key_findings: Vec<String>,
    /// What the next run should do.
    pub next_action: Option<String>,
}

impl HandoffInput {
    pub(crate) fn into_domain(self) -> agentlog_domain::values::Handoff {
        agentlog_domain::values::Handoff {
            title: self.title,
            summary: self.summary,
            key_findings: self.key_findings,
            next_action: self.next_action,
            ..Default::default()
        }
    }
}
