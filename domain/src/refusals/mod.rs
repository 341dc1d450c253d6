//! A reactor's refused command (stream `refusal-<refusalId>`): when a command that one of
//! agentlog's reactors issues in answer to a fact (an orchestration step, a topic's end, a
//! child's result, a cascade start, a policy's brief, …) is refused by the domain, the refusal is
//! a fact of its own, never only a log line. It names the reactor, what it asked, of which
//! stream, the refusal's code and message, the fact it answered and the run or task it concerns,
//! and it sits in that fact's chain.
//!
//! The owner hears of it once: [`refusal_notification`] is the notification that goes with it
//! (dedupeKey `refused:<refusalId>`). The refusal id is derived from the refused command's id
//! ([`refusal_id`]), so a reactor that meets the same refusal twice — after a restart, or in
//! a second server — records one refusal and notifies once.
//!
//! ```
//! use agentlog_domain::refusals::refusal_id;
//! let command = uuid::Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001);
//! assert_eq!(refusal_id(command), refusal_id(command));
//! assert!(refusal_id(command).starts_with('~'));
//! ```

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::ids::{derived_id, server_id};
use crate::notifications::CreateNotification;
use crate::scope::Scope;
use crate::streams::StreamKind;

/// The fact a reactor was answering when its command was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusedFact {
    /// Its event id.
    pub event_id: String,
    /// Its type.
    pub event_type: String,
    /// Its stream.
    pub stream_id: String,
    /// Its position in the log.
    pub position: i64,
}

/// What was refused: everything a `reactor.command_refused` records but the time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordRefusal {
    /// Derived from the refused command's id ([`refusal_id`]).
    pub refusal_id: String,
    /// The reactor that issued the command (`orchestration`, `task-lifecycle`, …).
    pub reactor: String,
    /// What it asked, as `<aggregate>.<command>` (`group.advance_orchestration`, …).
    pub command: String,
    /// The stream that refused it.
    pub target_stream_id: String,
    /// The refusal's code (`CONFLICT`, `VALIDATION`, `LIMIT`, `NOT_FOUND`, …).
    pub code: String,
    /// The refusal's message.
    pub message: String,
    /// The fact answered.
    pub fact: RefusedFact,
    /// The run it concerns, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// The task it concerns, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Whom it concerns: the owner of the run or task, who is notified.
    pub user_id: String,
}

/// `reactor.command_refused`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandRefused {
    /// What was refused.
    #[serde(flatten)]
    pub refusal: RecordRefusal,
    /// When (the fact's time: the reactor decides as of its fact).
    pub at: DateTime<Utc>,
}

/// A command to a refusal stream.
#[derive(Debug, Clone, PartialEq)]
pub enum RefusalCommand {
    /// Record a refused command.
    Record(RecordRefusal),
}

crate::domain_events! {
    /// Everything a refusal stream records.
    pub enum RefusalEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// A reactor's command was refused.
        CommandRefused(CommandRefused) = "reactor.command_refused" v 1,
    }
}

/// The state of a refusal stream: the refusal, once recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    /// `None` until recorded.
    pub refused: Option<CommandRefused>,
}

/// The refusal id for the refused command `command_id`: agentlog's own namespace
/// ([`server_id`]), derived, so the same refused command is one refusal.
pub fn refusal_id(command_id: Uuid) -> String {
    server_id(derived_id("refusal", &command_id.to_string(), 0))
}

/// The notification telling the owner about `refusal`, keyed on the refusal.
pub fn refusal_notification(refusal: &RecordRefusal) -> CreateNotification {
    let about = match (&refusal.operation_id, &refusal.task_id) {
        (Some(op), _) => format!("run {op}"),
        (None, Some(task)) => format!("task {task}"),
        (None, None) => format!("stream {}", refusal.target_stream_id),
    };
    CreateNotification {
        user_id: refusal.user_id.clone(),
        category: "system".into(),
        notification_type: "reactor_refused".into(),
        title: format!("agentlog could not carry out a step of {about}"),
        body: format!(
            "In answer to {} (position {}), {} asked {} of {} and was refused ({}): {}",
            refusal.fact.event_type,
            refusal.fact.position,
            refusal.reactor,
            refusal.command,
            refusal.target_stream_id,
            refusal.code,
            refusal.message,
        ),
        dedupe_key: Some(format!("refused:{}", refusal.refusal_id)),
        action_url: refusal.operation_id.as_ref().map(|op| format!("/operations/{op}")),
        metadata: Some(json!({
            "refusalId": refusal.refusal_id,
            "reactor": refusal.reactor,
            "command": refusal.command,
            "code": refusal.code,
            "operationId": refusal.operation_id,
            "taskId": refusal.task_id,
        })),
    }
}

impl Aggregate for Refusal {
    type Command = RefusalCommand;
    type Event = RefusalEvent;
    const KIND: StreamKind = StreamKind::Refusal;

    fn decide(
        &self,
        command: &RefusalCommand,
        ctx: &Context,
    ) -> Result<Vec<RefusalEvent>, DomainError> {
        let RefusalCommand::Record(record) = command;
        if self.refused.is_some() {
            // The same refusal again (a reactor re-reacting): recorded once.
            return Ok(Vec::new());
        }
        for (field, value) in [
            ("refusalId", &record.refusal_id),
            ("reactor", &record.reactor),
            ("command", &record.command),
            ("code", &record.code),
            ("userId", &record.user_id),
        ] {
            if value.trim().is_empty() {
                return Err(DomainError::validation(field, "must not be empty"));
            }
        }
        Ok(vec![RefusalEvent::CommandRefused(CommandRefused {
            refusal: record.clone(),
            at: ctx.now,
        })])
    }

    fn evolve(self, event: &RefusalEvent) -> Self {
        let RefusalEvent::CommandRefused(refused) = event;
        Self { refused: Some(refused.clone()) }
    }

    fn scope(&self) -> Scope {
        let r = self.refused.as_ref().map(|r| &r.refusal);
        Scope {
            task_id: r.and_then(|r| r.task_id.clone()),
            user_id: r.map(|r| r.user_id.clone()),
            ..Scope::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{apply, system_ctx};

    fn record() -> RecordRefusal {
        RecordRefusal {
            refusal_id: refusal_id(Uuid::from_u128(7)),
            reactor: "orchestration".into(),
            command: "group.advance_orchestration".into(),
            target_stream_id: "group-g1".into(),
            code: "CONFLICT".into(),
            message: "no".into(),
            fact: RefusedFact {
                event_id: "e1".into(),
                event_type: "operation.step_recorded".into(),
                stream_id: "operation-o1".into(),
                position: 9,
            },
            operation_id: Some("o1".into()),
            task_id: None,
            user_id: "u1".into(),
        }
    }

    #[test]
    fn a_refusal_is_recorded_once() {
        let (state, events) =
            apply(Refusal::default(), &RefusalCommand::Record(record()), &system_ctx(1));
        assert_eq!(events.len(), 1);
        assert_eq!(state.decide(&RefusalCommand::Record(record()), &system_ctx(2)), Ok(Vec::new()));
    }

    #[test]
    fn a_refusal_without_its_owner_is_refused() {
        let mut r = record();
        r.user_id = " ".into();
        assert!(matches!(
            Refusal::default().decide(&RefusalCommand::Record(r), &system_ctx(1)),
            Err(DomainError::Validation { .. })
        ));
    }

    #[test]
    fn the_owner_is_told_once_per_refusal() {
        let n = refusal_notification(&record());
        assert_eq!(n.user_id, "u1");
        assert_eq!(n.dedupe_key, Some(format!("refused:{}", record().refusal_id)));
        assert!(n.body.contains("CONFLICT") && n.title.contains("run o1"), "{n:?}");
    }
}
