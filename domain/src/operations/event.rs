//! What an operation records, and the upcast of `operation.step_recorded` v1 → v2.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::command::CreateOperation;
use super::hitl::{CardAnswer, HitlCard, OnTimeout};
use super::model::{Artifact, CompletionReason, OperationError, Phase, Plan, Todo, ToolCall};
use crate::error::DecodeError;
use crate::event_codec::no_idempotency_key;
use crate::values::ReviewScore;
use crate::values::Usage;

/// `operation.created`: the operation exists (status idle).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationCreated {
    /// What was asked for.
    #[serde(flatten)]
    pub spec: CreateOperation,
    /// The owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.claimed`: a worker took (or re-took) the lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseClaimed {
    /// The worker.
    pub worker_id: String,
    /// When the lease runs out.
    pub lease_expires_at: DateTime<Utc>,
    /// The SHA-256 of the lease token the claim answered (absent before tokens existed).
    #[serde(default)]
    pub token_hash: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.started`: idle → running, phase thinking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationStarted {
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.lease_renewed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRenewed {
    /// The worker.
    pub worker_id: String,
    /// The new expiry.
    pub lease_expires_at: DateTime<Utc>,
}

/// `operation.lease_expired`: nobody renewed; an `operation.interrupted` follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseExpired {
    /// The worker that held it.
    pub worker_id: String,
    /// When it ran out.
    pub expired_at: DateTime<Utc>,
    /// When the expiry was noticed.
    pub at: DateTime<Utc>,
}

/// `operation.phase_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseChanged {
    /// The new phase.
    pub phase: Phase,
}

/// `operation.step_recorded` (schema v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecorded {
    /// 1-based index of the step in the run.
    pub step_index: u32,
    /// Its phase.
    pub phase: Phase,
    /// Tool calls made in it.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// What it used (absent fields: not measured).
    #[serde(default)]
    pub usage: Usage,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.plan_updated`: the plan, replaced whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanUpdated {
    /// The new plan.
    pub plan: Plan,
}

/// `operation.todos_updated`: the todo list, replaced whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TodosUpdated {
    /// The new list.
    pub todos: Vec<Todo>,
}

/// `operation.artifact_recorded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRecorded {
    /// The artifact.
    #[serde(flatten)]
    pub artifact: Artifact,
}

/// `operation.score_recorded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreRecorded {
    /// The score.
    #[serde(flatten)]
    pub score: ReviewScore,
}

/// `operation.human_asked`: running → waiting_for_human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanAsked {
    /// The card.
    pub card: HitlCard,
    /// When its timeout fires, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.human_answered`: waiting_for_human → running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanAnswered {
    /// The card.
    pub card_id: String,
    /// The answer.
    pub answer: CardAnswer,
    /// How long the human took, in milliseconds.
    pub waited_ms: u64,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.human_wait_timed_out`: the card's timeout fired. With `use_default` or
/// `continue` the operation resumes; with `fail` or `cancel` the terminal event that follows
/// ends the wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanWaitTimedOut {
    /// The card.
    pub card_id: String,
    /// What the card said to do.
    pub on_timeout: OnTimeout,
    /// How long it waited, in milliseconds.
    pub waited_ms: u64,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.async_wait_started`: running → waiting_for_async_tool until every key reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AsyncWaitStarted {
    /// The awaited keys not yet reported.
    pub keys: Vec<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.child_spawned`: a sub-agent operation was created under this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildSpawned {
    /// The child.
    pub child_operation_id: String,
    /// A background sub-agent.
    pub background: bool,
}

/// `operation.async_result_received`: an async tool or child reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AsyncResultReceived {
    /// The key.
    pub key: String,
    /// Whether it succeeded.
    pub success: bool,
    /// The result, at most 32,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Whether the result was cut to 32,000 characters.
    #[serde(default)]
    pub truncated: bool,
    /// The length before cutting, in characters, when cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_chars: Option<u64>,
    /// This was the last awaited key: the barrier is complete and the operation resumes
    /// (waiting_for_async_tool → running).
    #[serde(default)]
    pub resumes: bool,
}

/// `operation.completed`: status done (reason done, max_steps or cost_limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationCompleted {
    /// done, max_steps or cost_limit.
    pub reason: CompletionReason,
    /// The final result text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// A task run's hand-off, as the worker wrote it (absent in events before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<crate::values::Handoff>,
    /// A task run: the worker's judge's verdict on a result brief (absent = not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief_judgement: Option<bool>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.failed`: status error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationFailed {
    /// What went wrong.
    pub error: OperationError,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.interrupted`: status interrupted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationInterrupted {
    /// Why.
    pub reason: String,
    /// Whether a later run may resume it.
    pub can_resume: bool,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.resumed`: an interrupted run that may resume is back in the queue (status
/// running, no lease: a worker claims it again), its history kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationResumed {
    /// Why it had stopped.
    pub interrupted_reason: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `operation.cancelled`: status cancelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationCancelled {
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The ancestor whose cancellation cascaded here, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade_from: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

crate::domain_events! {
    /// Everything an operation records.
    pub enum OperationEvent (upcast = upcast_operation, key = no_idempotency_key) {
        /// Created.
        Created(OperationCreated) = "operation.created" v 1,
        /// A lease was claimed.
        Claimed(LeaseClaimed) = "operation.claimed" v 1,
        /// Started running.
        Started(OperationStarted) = "operation.started" v 1,
        /// Lease extended.
        LeaseRenewed(LeaseRenewed) = "operation.lease_renewed" v 1,
        /// Lease ran out.
        LeaseExpired(LeaseExpired) = "operation.lease_expired" v 1,
        /// Phase changed.
        PhaseChanged(PhaseChanged) = "operation.phase_changed" v 1,
        /// A step was recorded.
        StepRecorded(StepRecorded) = "operation.step_recorded" v 2,
        /// Plan replaced.
        PlanUpdated(PlanUpdated) = "operation.plan_updated" v 1,
        /// Todos replaced.
        TodosUpdated(TodosUpdated) = "operation.todos_updated" v 1,
        /// Artifact recorded.
        ArtifactRecorded(ArtifactRecorded) = "operation.artifact_recorded" v 1,
        /// Review score recorded.
        ScoreRecorded(ScoreRecorded) = "operation.score_recorded" v 1,
        /// A human was asked.
        HumanAsked(HumanAsked) = "operation.human_asked" v 1,
        /// The human answered.
        HumanAnswered(HumanAnswered) = "operation.human_answered" v 1,
        /// The card timed out.
        HumanWaitTimedOut(HumanWaitTimedOut) = "operation.human_wait_timed_out" v 1,
        /// Waiting on async work.
        AsyncWaitStarted(AsyncWaitStarted) = "operation.async_wait_started" v 1,
        /// A child was spawned.
        ChildSpawned(ChildSpawned) = "operation.child_spawned" v 1,
        /// An async result arrived.
        AsyncResultReceived(AsyncResultReceived) = "operation.async_result_received" v 1,
        /// Finished as done.
        Completed(OperationCompleted) = "operation.completed" v 1,
        /// Finished as error.
        Failed(OperationFailed) = "operation.failed" v 1,
        /// Finished as interrupted.
        Interrupted(OperationInterrupted) = "operation.interrupted" v 1,
        /// Finished as cancelled.
        Cancelled(OperationCancelled) = "operation.cancelled" v 1,
        /// An interrupted run was put back into the queue.
        Resumed(OperationResumed) = "operation.resumed" v 1,
    }
}

impl OperationEvent {
    /// Does this event end the operation?
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Completed(_) | Self::Failed(_) | Self::Interrupted(_) | Self::Cancelled(_)
        )
    }
}

/// Upcast steps of operation events.
///
/// `operation.step_recorded` v1 → v2: v1 carried tool calls as bare names and flat
/// `tokens` / `costMicros` numbers; v2 carries tool call objects `{id, name}` (ids
/// `<stepIndex>-<n>`, since v1 had none) and a nested `usage` with `totalTokens` / `costMicros`.
/// Absent v1 numbers stay absent (unknown is never turned into 0).
pub fn upcast_operation(event_type: &str, from: i32, payload: Value) -> Result<Value, DecodeError> {
    match (event_type, from) {
        ("operation.step_recorded", 1) => step_recorded_v1_to_v2(payload),
        _ => Err(DecodeError::UnsupportedVersion {
            event_type: event_type.to_string(),
            version: from,
            current: from + 1,
        }),
    }
}

fn step_recorded_v1_to_v2(payload: Value) -> Result<Value, DecodeError> {
    let invalid = |reason: &str| DecodeError::InvalidPayload {
        event_type: "operation.step_recorded".into(),
        version: 1,
        reason: reason.into(),
    };
    let Value::Object(mut v1) = payload else {
        return Err(invalid("payload is not an object"));
    };
    let step_index = v1.get("stepIndex").and_then(Value::as_u64).unwrap_or(0);
    let names = match v1.remove("toolCalls") {
        Some(Value::Array(names)) => names,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(invalid("toolCalls is not an array")),
    };
    let mut calls = Vec::with_capacity(names.len());
    for (n, name) in names.into_iter().enumerate() {
        let Value::String(name) = name else {
            return Err(invalid("a v1 tool call is not a string"));
        };
        calls.push(json!({ "id": format!("{step_index}-{n}"), "name": name }));
    }
    let mut usage = Map::new();
    if let Some(tokens) = v1.remove("tokens").filter(|t| !t.is_null()) {
        usage.insert("totalTokens".into(), tokens);
    }
    if let Some(cost) = v1.remove("costMicros").filter(|c| !c.is_null()) {
        usage.insert("costMicros".into(), cost);
    }
    v1.insert("toolCalls".into(), Value::Array(calls));
    v1.insert("usage".into(), Value::Object(usage));
    Ok(Value::Object(v1))
}
