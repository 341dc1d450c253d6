//! The group-orchestration supervisor's decision table (upstream
//! `GroupOrchestrationSupervisor.decide`, lobehub-spec §2.3): executor result in, instruction
//! out.
//!
//! Upstream keeps `round` and `skipCallSupervisor` as private fields of the supervisor object;
//! here they are an explicit, serialisable [`SupervisorState`] (recorded on the group stream
//! after every step), so a crash loses nothing and a replay shows them. Rounds count finished
//! actions, not LLM calls; `skipCallSupervisor` is one-shot per decision (overwritten by the
//! next `supervisor_decided`, reset by `init`, never cleared by an action result); broadcasts
//! always disable tools; the action flags `completed` / `success` are never read.
//!
//! ```
//! use agentlog_domain::supervisor::{decide, ExecutorResult, InitPayload, SupervisorInstruction, SupervisorState};
//! let state = SupervisorState::new(10, "sup");
//! let (state, instruction) = decide(&state, &ExecutorResult::Init { payload: InitPayload { group_id: Some("g1".into()) } });
//! assert!(matches!(instruction, SupervisorInstruction::CallSupervisor { .. }));
//! assert_eq!(state.round, 0);
//! ```

use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use serde_json::{Map, Value};

/// Upstream's hard-coded default when a group does not say.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;

/// The supervisor's own state: config plus round and one-shot skip flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupervisorState {
    /// Rounds allowed (read from the group's config).
    pub max_rounds: u32,
    /// The supervisor agent.
    pub supervisor_agent_id: String,
    /// Finished actions so far.
    pub round: u32,
    /// The last decision asked not to call the supervisor after its action.
    pub skip_call_supervisor: bool,
}

impl SupervisorState {
    /// A fresh supervisor.
    pub fn new(max_rounds: u32, supervisor_agent_id: impl Into<String>) -> Self {
        Self {
            max_rounds,
            supervisor_agent_id: supervisor_agent_id.into(),
            round: 0,
            skip_call_supervisor: false,
        }
    }
}

/// `init` payload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitPayload {
    /// The group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// `supervisor_decided` payload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecidedPayload {
    /// `speak`, `broadcast`, `delegate`, `execute_task`, `execute_tasks`, `finish` (or anything).
    pub decision: String,
    /// Its parameters, cast rather than validated, as upstream.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Finish after this decision's action instead of calling the supervisor again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_call_supervisor: Option<bool>,
}

/// A member's (or members') action finished; the flags are carried but never read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionPayload {
    /// The agent (agent_spoke, task_completed, delegated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The agents (agents_broadcasted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_ids: Option<Vec<String>>,
    /// `completed` flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<bool>,
    /// `success` flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Result text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Per-task results (tasks_completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<Value>>,
}

/// What the executor reports (upstream `ExecutorResult`, `{type, payload}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExecutorResult {
    /// Start.
    Init {
        /// Payload.
        #[serde(default)]
        payload: InitPayload,
    },
    /// The supervisor decided.
    SupervisorDecided {
        /// Payload.
        payload: DecidedPayload,
    },
    /// One member spoke.
    AgentSpoke {
        /// Payload.
        payload: ActionPayload,
    },
    /// Members answered a broadcast.
    AgentsBroadcasted {
        /// Payload.
        payload: ActionPayload,
    },
    /// An async task finished.
    TaskCompleted {
        /// Payload.
        payload: ActionPayload,
    },
    /// A batch of async tasks finished.
    TasksCompleted {
        /// Payload.
        payload: ActionPayload,
    },
    /// The conversation was handed to a member.
    Delegated {
        /// Payload.
        payload: ActionPayload,
    },
    /// Any other type.
    #[serde(other)]
    Unknown,
}

/// `exec_async_task` / `exec_client_async_task` payload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AsyncTaskPayload {
    /// The member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The tool message the reply hangs from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_message_id: Option<String>,
    /// Timeout, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Value>,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// What the supervisor tells the executor to do next (upstream `SupervisorInstruction`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SupervisorInstruction {
    /// Ask the supervisor agent.
    CallSupervisor {
        /// Payload.
        payload: CallSupervisorPayload,
    },
    /// One member speaks.
    CallAgent {
        /// Payload.
        payload: CallAgentPayload,
    },
    /// Several members answer in parallel.
    ParallelCallAgents {
        /// Payload.
        payload: ParallelCallPayload,
    },
    /// Run a member as a server-side async task.
    ExecAsyncTask {
        /// Payload.
        payload: AsyncTaskPayload,
    },
    /// Run a member as a client-side (desktop) async task.
    ExecClientAsyncTask {
        /// Payload.
        payload: AsyncTaskPayload,
    },
    /// Run several async tasks.
    BatchExecAsyncTasks {
        /// Payload.
        payload: BatchPayload,
    },
    /// Hand the conversation to a member.
    Delegate {
        /// Payload.
        payload: DelegatePayload,
    },
    /// Stop (no payload, as upstream).
    Finish {
        /// Why.
        reason: String,
    },
}

/// `call_supervisor` payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSupervisorPayload {
    /// The round.
    pub round: u32,
    /// The supervisor.
    pub supervisor_agent_id: String,
    /// The group (only on init).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

/// `call_agent` payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallAgentPayload {
    /// The member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
}

/// `parallel_call_agents` payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParallelCallPayload {
    /// The members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_ids: Option<Vec<String>>,
    /// The tool message the replies hang from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_message_id: Option<String>,
    /// Always true for broadcasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_tools: Option<bool>,
    /// What to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
}

/// `batch_exec_async_tasks` payload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchPayload {
    /// `[{agentId, instruction, timeout?, title?}]`, passed through as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// The tool message the replies hang from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_message_id: Option<String>,
}

/// `delegate` payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegatePayload {
    /// The member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl SupervisorInstruction {
    /// The upstream instruction type.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::CallSupervisor { .. } => "call_supervisor",
            Self::CallAgent { .. } => "call_agent",
            Self::ParallelCallAgents { .. } => "parallel_call_agents",
            Self::ExecAsyncTask { .. } => "exec_async_task",
            Self::ExecClientAsyncTask { .. } => "exec_client_async_task",
            Self::BatchExecAsyncTasks { .. } => "batch_exec_async_tasks",
            Self::Delegate { .. } => "delegate",
            Self::Finish { .. } => "finish",
        }
    }

    fn finish(reason: impl Into<String>) -> Self {
        Self::Finish { reason: reason.into() }
    }
}

fn text(params: &Map<String, Value>, key: &str) -> Option<String> {
    params.get(key).and_then(Value::as_str).map(str::to_string)
}

/// JavaScript truthiness, as upstream tests `params.runInClient`.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

fn decided(
    state: &SupervisorState,
    payload: &DecidedPayload,
) -> (SupervisorState, SupervisorInstruction) {
    let mut next = state.clone();
    next.skip_call_supervisor = payload.skip_call_supervisor.unwrap_or(false);
    let p = &payload.params;
    let instruction = match payload.decision.as_str() {
        "speak" => SupervisorInstruction::CallAgent {
            payload: CallAgentPayload {
                agent_id: text(p, "agentId"),
                instruction: text(p, "instruction"),
            },
        },
        "broadcast" => SupervisorInstruction::ParallelCallAgents {
            payload: ParallelCallPayload {
                agent_ids: p.get("agentIds").and_then(|v| serde_json::from_value(v.clone()).ok()),
                tool_message_id: text(p, "toolMessageId"),
                disable_tools: Some(true),
                instruction: text(p, "instruction"),
            },
        },
        "delegate" => SupervisorInstruction::Delegate {
            payload: DelegatePayload { agent_id: text(p, "agentId"), reason: text(p, "reason") },
        },
        "execute_task" => {
            let task = AsyncTaskPayload {
                agent_id: text(p, "agentId"),
                instruction: text(p, "instruction"),
                tool_message_id: text(p, "toolMessageId"),
                timeout: p.get("timeout").cloned(),
                title: text(p, "title"),
            };
            if truthy(p.get("runInClient")) {
                SupervisorInstruction::ExecClientAsyncTask { payload: task }
            } else {
                SupervisorInstruction::ExecAsyncTask { payload: task }
            }
        }
        "execute_tasks" => SupervisorInstruction::BatchExecAsyncTasks {
            payload: BatchPayload {
                tasks: p.get("tasks").cloned(),
                tool_message_id: text(p, "toolMessageId"),
            },
        },
        "finish" => SupervisorInstruction::finish(
            text(p, "reason")
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "supervisor_finished".into()),
        ),
        other => SupervisorInstruction::finish(format!("unknown_decision: {other}")),
    };
    (next, instruction)
}

fn action_finished(state: &SupervisorState) -> (SupervisorState, SupervisorInstruction) {
    if state.skip_call_supervisor {
        return (state.clone(), SupervisorInstruction::finish("skip_call_supervisor"));
    }
    let mut next = state.clone();
    next.round += 1;
    if next.round >= next.max_rounds {
        return (next, SupervisorInstruction::finish("max_rounds_exceeded"));
    }
    let instruction = SupervisorInstruction::CallSupervisor {
        payload: CallSupervisorPayload {
            round: next.round,
            supervisor_agent_id: next.supervisor_agent_id.clone(),
            group_id: None,
        },
    };
    (next, instruction)
}

/// The decision table: the next state and instruction for an executor result.
pub fn decide(
    state: &SupervisorState,
    result: &ExecutorResult,
) -> (SupervisorState, SupervisorInstruction) {
    match result {
        ExecutorResult::Init { payload } => {
            let next = SupervisorState { round: 0, skip_call_supervisor: false, ..state.clone() };
            let instruction = SupervisorInstruction::CallSupervisor {
                payload: CallSupervisorPayload {
                    round: 0,
                    supervisor_agent_id: next.supervisor_agent_id.clone(),
                    group_id: payload.group_id.clone(),
                },
            };
            (next, instruction)
        }
        ExecutorResult::SupervisorDecided { payload } => decided(state, payload),
        ExecutorResult::AgentSpoke { .. }
        | ExecutorResult::AgentsBroadcasted { .. }
        | ExecutorResult::TaskCompleted { .. }
        | ExecutorResult::TasksCompleted { .. } => action_finished(state),
        ExecutorResult::Delegated { payload } => (
            state.clone(),
            SupervisorInstruction::finish(format!(
                "delegated_to_{}",
                payload.agent_id.as_deref().unwrap_or("undefined")
            )),
        ),
        ExecutorResult::Unknown => {
            (state.clone(), SupervisorInstruction::finish("unknown_result_type"))
        }
    }
}

/// Upstream's group-management tools that the decision table does not carry out (`vote` is
/// offered to upstream's model; the others are written but not offered).
pub const UNSUPPORTED_DECISIONS: [&str; 4] = ["vote", "interrupt", "summarize", "createWorkflow"];

/// The namespace of upstream's group-management tools.
pub const TOOL_NAMESPACE: &str = "lobe-group-management";

/// The decision a supervisor's tool call (`speak`, `lobe-group-management/broadcast`, …) makes.
/// `None` for a tool that is not a group decision (the supervisor's ordinary tools); an
/// unsupported one — `vote`, `interrupt`, `summarize`, `createWorkflow`, or any other tool
/// in the group-management namespace — is refused with [`DomainError::Validation`], never
/// taken as a finish.
pub fn decision_for_tool(
    tool: &str,
    arguments: Option<&Value>,
) -> Option<Result<DecidedPayload, DomainError>> {
    let name = tool.rsplit(['/', '.', '_']).next().unwrap_or(tool);
    let decision = match name {
        "speak" => "speak",
        "broadcast" => "broadcast",
        "executeAgentTask" => "execute_task",
        "executeAgentTasks" => "execute_tasks",
        "delegate" => "delegate",
        "finish" => "finish",
        other if UNSUPPORTED_DECISIONS.contains(&other) || tool.starts_with(TOOL_NAMESPACE) => {
            return Some(Err(DomainError::validation(
                "decision",
                format!(
                    "the supervisor decided `{other}`, which agentlog does not carry out; decide with \
                     speak, broadcast, executeAgentTask, executeAgentTasks, delegate or finish"
                ),
            )));
        }
        _ => return None,
    };
    let params: Map<String, Value> =
        arguments.and_then(Value::as_object).cloned().unwrap_or_default();
    let skip_call_supervisor = params.get("skipCallSupervisor").and_then(Value::as_bool);
    Some(Ok(DecidedPayload { decision: decision.into(), params, skip_call_supervisor }))
}

#[cfg(test)]
mod tests;
