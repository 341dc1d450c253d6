//! A signal source and what it caused (stream `source-<sourceId>`): source → signal (a policy
//! found it worth attention) → action (a handler does something) → the action's result.
//!
//! - The source event's id is derived from its `sourceId`, so the same sourceId twice is one
//!   source (the second receive decides nothing; a racing duplicate is a no-op in the log).
//! - Node ids follow upstream: `signal:<uuid>`, `action:<uuid>`, derived from the command.
//! - The chain: a receive is a source (its event is the root); a reactor emitting a signal or
//!   an action passes the causing event as its [`Cause`](crate::context::Cause), so every node
//!   carries the source's `rootSourceId` and its parent's id.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::source_types::is_source_type;
use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::no_upcasts;
use crate::scope::{Scope, ScopeInput};
use crate::streams::StreamKind;

/// An action's outcome (upstream executor result status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Dispatched, no result yet.
    Pending,
    /// Done.
    Applied,
    /// Deliberately not done.
    Skipped,
    /// Failed (may be retried with a higher attempt).
    Failed,
}

/// A failed action's error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionError {
    /// Code.
    pub code: String,
    /// Message.
    pub message: String,
    /// Worth retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriable: Option<bool>,
    /// Retry after, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// A command to a source stream.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceCommand {
    /// Receive a source event.
    Receive {
        /// The producer's id (idempotency key).
        source_id: String,
        /// One of [`super::AGENT_SIGNAL_SOURCE_TYPES`].
        source_type: String,
        /// Its payload (a JSON object).
        payload: Value,
        /// Given scope key; derived from the payload when `None`.
        scope_key: Option<String>,
        /// Producer timestamp, ms.
        timestamp_ms: i64,
    },
    /// A policy emits a signal.
    EmitSignal {
        /// Signal type (`signal.tool.outcome`, …).
        signal_type: String,
        /// The policy.
        policy_id: String,
        /// Payload.
        payload: Value,
    },
    /// A handler dispatches an action for a signal.
    DispatchAction {
        /// The signal.
        signal_id: String,
        /// Action type (`action.user-memory.handle`, …).
        action_type: String,
        /// Payload.
        payload: Value,
    },
    /// The action's executor reports.
    RecordActionResult {
        /// The action.
        action_id: String,
        /// Applied, skipped or failed.
        status: ActionStatus,
        /// Attempt number, from 1.
        attempt: u32,
        /// Detail.
        detail: Option<String>,
        /// Error (required iff failed).
        error: Option<ActionError>,
    },
}

/// `signal.source_received`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceReceived {
    /// The producer's id.
    pub source_id: String,
    /// Type.
    pub source_type: String,
    /// Payload.
    pub payload: Value,
    /// Lane.
    pub scope_key: String,
    /// Producer timestamp, ms.
    pub timestamp: i64,
}

/// `signal.emitted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalEmitted {
    /// `signal:<uuid>`.
    pub signal_id: String,
    /// Type.
    pub signal_type: String,
    /// The policy that emitted it.
    pub policy_id: String,
    /// Payload.
    pub payload: Value,
    /// When.
    pub at: DateTime<Utc>,
}

/// `signal.action_dispatched`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionDispatched {
    /// `action:<uuid>`.
    pub action_id: String,
    /// Type.
    pub action_type: String,
    /// The signal it handles.
    pub signal_id: String,
    /// Payload.
    pub payload: Value,
    /// When.
    pub at: DateTime<Utc>,
}

/// `signal.action_completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionCompleted {
    /// The action.
    pub action_id: String,
    /// Outcome.
    pub status: ActionStatus,
    /// Attempt number.
    pub attempt: u32,
    /// Detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ActionError>,
    /// When.
    pub at: DateTime<Utc>,
}

fn source_idempotency_key(event: &SourceEvent) -> Option<String> {
    match event {
        SourceEvent::Received(e) => Some(e.source_id.clone()),
        _ => None,
    }
}

crate::domain_events! {
    /// Everything a source stream records.
    pub enum SourceEvent (upcast = no_upcasts, key = source_idempotency_key) {
        /// A source arrived.
        Received(SourceReceived) = "signal.source_received" v 1,
        /// A signal was emitted.
        SignalEmitted(SignalEmitted) = "signal.emitted" v 1,
        /// An action was dispatched.
        ActionDispatched(ActionDispatched) = "signal.action_dispatched" v 1,
        /// An action reported.
        ActionCompleted(ActionCompleted) = "signal.action_completed" v 1,
    }
}

/// The state of a source stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The source id (empty before it was received).
    pub source_id: String,
    /// Type.
    pub source_type: String,
    /// Lane.
    pub scope_key: String,
    /// Signals emitted.
    pub signals: BTreeSet<String>,
    /// Action → (status, last attempt).
    pub actions: BTreeMap<String, (ActionStatus, u32)>,
}

/// The scope key a producer's payload implies (`fromProducerInput`).
pub fn scope_key_of_payload(payload: &Value) -> String {
    let s = |k: &str| payload.get(k).and_then(Value::as_str);
    ScopeInput {
        topic_id: s("topicId"),
        task_id: s("taskId"),
        platform: s("platform"),
        application_id: s("applicationId"),
        platform_thread_id: s("platformThreadId"),
        agent_id: s("agentId"),
        user_id: s("userId"),
    }
    .scope_key()
}

impl Aggregate for Source {
    type Command = SourceCommand;
    type Event = SourceEvent;
    const KIND: StreamKind = StreamKind::Source;

    fn decide(
        &self,
        command: &SourceCommand,
        ctx: &Context,
    ) -> Result<Vec<SourceEvent>, DomainError> {
        use SourceCommand as C;
        use SourceEvent as E;
        match command {
            C::Receive { source_id, source_type, payload, scope_key, timestamp_ms } => {
                if !self.source_id.is_empty() {
                    // The same sourceId twice is one source.
                    return Ok(Vec::new());
                }
                if source_id.trim().is_empty() {
                    return Err(DomainError::validation("sourceId", "must not be empty"));
                }
                if !is_source_type(source_type) {
                    return Err(DomainError::validation(
                        "sourceType",
                        format!("'{source_type}' is not a signal source type"),
                    ));
                }
                if !payload.is_object() {
                    return Err(DomainError::validation("payload", "must be a JSON object"));
                }
                let scope_key = scope_key
                    .clone()
                    .filter(|k| !k.is_empty())
                    .unwrap_or_else(|| scope_key_of_payload(payload));
                Ok(vec![E::Received(SourceReceived {
                    source_id: source_id.clone(),
                    source_type: source_type.clone(),
                    payload: payload.clone(),
                    scope_key,
                    timestamp: *timestamp_ms,
                })])
            }
            _ if self.source_id.is_empty() => Err(DomainError::not_found("source", "")),
            C::EmitSignal { signal_type, policy_id, payload } => {
                if signal_type.trim().is_empty() || policy_id.trim().is_empty() {
                    return Err(DomainError::validation(
                        "signalType",
                        "a signal needs a type and a policy",
                    ));
                }
                Ok(vec![E::SignalEmitted(SignalEmitted {
                    signal_id: format!("signal:{}", ctx.derived_id("signal", 0)),
                    signal_type: signal_type.clone(),
                    policy_id: policy_id.clone(),
                    payload: payload.clone(),
                    at: ctx.now,
                })])
            }
            C::DispatchAction { signal_id, action_type, payload } => {
                if !self.signals.contains(signal_id) {
                    return Err(DomainError::not_found("signal", signal_id.clone()));
                }
                if action_type.trim().is_empty() {
                    return Err(DomainError::validation("actionType", "must not be empty"));
                }
                Ok(vec![E::ActionDispatched(ActionDispatched {
                    action_id: format!("action:{}", ctx.derived_id("action", 0)),
                    action_type: action_type.clone(),
                    signal_id: signal_id.clone(),
                    payload: payload.clone(),
                    at: ctx.now,
                })])
            }
            C::RecordActionResult { action_id, status, attempt, detail, error } => {
                let (current, last_attempt) = *self
                    .actions
                    .get(action_id)
                    .ok_or_else(|| DomainError::not_found("action", action_id.clone()))?;
                if matches!(current, ActionStatus::Applied | ActionStatus::Skipped) {
                    return Err(DomainError::AlreadyFinished {
                        aggregate: "action",
                        id: action_id.clone(),
                        status: format!("{current:?}").to_lowercase(),
                    });
                }
                if *status == ActionStatus::Pending {
                    return Err(DomainError::validation(
                        "status",
                        "a result is applied, skipped or failed",
                    ));
                }
                if (*status == ActionStatus::Failed) != error.is_some() {
                    return Err(DomainError::validation(
                        "error",
                        "an error is given exactly when the action failed",
                    ));
                }
                if *attempt == 0 || *attempt <= last_attempt {
                    return Err(DomainError::validation(
                        "attempt",
                        format!("must be more than {last_attempt}"),
                    ));
                }
                Ok(vec![E::ActionCompleted(ActionCompleted {
                    action_id: action_id.clone(),
                    status: *status,
                    attempt: *attempt,
                    detail: detail.clone(),
                    error: error.clone(),
                    at: ctx.now,
                })])
            }
        }
    }

    fn evolve(mut self, event: &SourceEvent) -> Self {
        match event {
            SourceEvent::Received(e) => {
                self.source_id = e.source_id.clone();
                self.source_type = e.source_type.clone();
                self.scope_key = e.scope_key.clone();
            }
            SourceEvent::SignalEmitted(e) => {
                self.signals.insert(e.signal_id.clone());
            }
            SourceEvent::ActionDispatched(e) => {
                self.actions.insert(e.action_id.clone(), (ActionStatus::Pending, 0));
            }
            SourceEvent::ActionCompleted(e) => {
                self.actions.insert(e.action_id.clone(), (e.status, e.attempt));
            }
        }
        self
    }

    fn scope_key(&self, owner: &str) -> String {
        if self.scope_key.is_empty() {
            Scope { user_id: Some(owner.to_string()), ..Scope::default() }.scope_key()
        } else {
            self.scope_key.clone()
        }
    }
}
