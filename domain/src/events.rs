//! Every event type of every aggregate, and decoding a stored event of any type — what the
//! projections and replay tools use.
//!
//! ```
//! use agentlog_domain::events::{all_event_types, decode_any, AnyEvent};
//! assert!(all_event_types().iter().any(|(t, _)| *t == "operation.started"));
//! let e = decode_any("brief.read", 1, &serde_json::json!({"at": "2026-01-01T00:00:00Z"})).unwrap();
//! assert!(matches!(e, AnyEvent::Brief(_)));
//! ```

use serde_json::Value;

use crate::agents::AgentEvent;
use crate::aggregate::DomainEvent;
use crate::briefs::BriefEvent;
use crate::budgets::BudgetEvent;
use crate::conversations::ConversationEvent;
use crate::cron_jobs::CronEvent;
use crate::error::DecodeError;
use crate::groups::GroupEvent;
use crate::notifications::NotificationEvent;
use crate::operations::OperationEvent;
use crate::refusals::RefusalEvent;
use crate::signal::SourceEvent;
use crate::streams::StreamKind;
use crate::tasks::TaskEvent;

/// An event of any aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyEvent {
    /// `operation.*`
    Operation(OperationEvent),
    /// `task.*`
    Task(TaskEvent),
    /// `conversation.*`
    Conversation(ConversationEvent),
    /// `brief.*`
    Brief(BriefEvent),
    /// `notification.*`
    Notification(NotificationEvent),
    /// `cron.*`
    Cron(CronEvent),
    /// `group.*`
    Group(GroupEvent),
    /// `agent.*`
    Agent(AgentEvent),
    /// `signal.*`
    Source(SourceEvent),
    /// `reactor.*`
    Refusal(RefusalEvent),
    /// `budget.*`
    Budget(BudgetEvent),
}

/// The stream kind whose events have this event-type prefix.
pub fn stream_kind_of(event_type: &str) -> Option<StreamKind> {
    let prefix = event_type.split('.').next()?;
    Some(match prefix {
        "operation" => StreamKind::Operation,
        "task" => StreamKind::Task,
        "conversation" => StreamKind::Conversation,
        "brief" => StreamKind::Brief,
        "notification" => StreamKind::Notification,
        "cron" => StreamKind::Cron,
        "group" => StreamKind::Group,
        "agent" => StreamKind::Agent,
        "signal" => StreamKind::Source,
        "reactor" => StreamKind::Refusal,
        "budget" => StreamKind::Budget,
        _ => return None,
    })
}

/// The [`AnyEvent`] of `event_type`, decoded by its aggregate's `DomainEvent::$decode`.
macro_rules! decode_by_kind {
    ($decode:ident, $event_type:expr, $schema_version:expr, $payload:expr) => {{
        let (event_type, schema_version) = ($event_type, $schema_version);
        let kind = stream_kind_of(event_type)
            .ok_or_else(|| DecodeError::UnknownEventType { event_type: event_type.to_string() })?;
        Ok(match kind {
            StreamKind::Operation => {
                AnyEvent::Operation(OperationEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Task => {
                AnyEvent::Task(TaskEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Conversation => AnyEvent::Conversation(ConversationEvent::$decode(
                event_type,
                schema_version,
                $payload,
            )?),
            StreamKind::Brief => {
                AnyEvent::Brief(BriefEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Notification => AnyEvent::Notification(NotificationEvent::$decode(
                event_type,
                schema_version,
                $payload,
            )?),
            StreamKind::Cron => {
                AnyEvent::Cron(CronEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Group => {
                AnyEvent::Group(GroupEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Agent => {
                AnyEvent::Agent(AgentEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Source => {
                AnyEvent::Source(SourceEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Refusal => {
                AnyEvent::Refusal(RefusalEvent::$decode(event_type, schema_version, $payload)?)
            }
            StreamKind::Budget => {
                AnyEvent::Budget(BudgetEvent::$decode(event_type, schema_version, $payload)?)
            }
        })
    }};
}

/// Decode a stored event of any type (upcasting old schema versions).
pub fn decode_any(
    event_type: &str,
    schema_version: i32,
    payload: &Value,
) -> Result<AnyEvent, DecodeError> {
    decode_by_kind!(decode, event_type, schema_version, payload)
}

/// [`decode_any`] from the payload's stored JSON text (no `serde_json::Value` between for a
/// current schema version).
pub fn decode_any_str(
    event_type: &str,
    schema_version: i32,
    text: &str,
) -> Result<AnyEvent, DecodeError> {
    decode_by_kind!(decode_str, event_type, schema_version, text)
}

/// Every event type with its current schema version, grouped by aggregate.
pub fn all_event_types() -> Vec<(&'static str, i32)> {
    [
        OperationEvent::event_types(),
        TaskEvent::event_types(),
        ConversationEvent::event_types(),
        BriefEvent::event_types(),
        NotificationEvent::event_types(),
        CronEvent::event_types(),
        GroupEvent::event_types(),
        AgentEvent::event_types(),
        SourceEvent::event_types(),
        RefusalEvent::event_types(),
        BudgetEvent::event_types(),
    ]
    .concat()
}

#[cfg(test)]
mod tests;
