//! Why a command was refused ([`DomainError`]) and why a stored event could not be read
//! ([`DecodeError`]).
//!
//! Every refusal is its own variant so callers can match on it, and its message says what was
//! refused and why in words a user understands. [`DomainError::code`] maps each variant to the
//! API's `extensions.code`.
//!
//! ```
//! use agentlog_domain::error::{DomainError, ErrorCode};
//! let e = DomainError::ConversationBusy { topic_id: "t1".into(), operation_id: "op1".into() };
//! assert_eq!(e.code(), ErrorCode::ConversationBusy);
//! assert_eq!(e.to_string(), "conversation t1 is busy: operation op1 has not finished yet");
//! ```

use chrono::{DateTime, Utc};

/// A command refused by a `decide` function.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// The aggregate (or an item inside it) does not exist. `id` is empty when the refusing
    /// state did not know it (a stream with no events); [`DomainError::with_id`] fills it in.
    #[error("{} does not exist", named(.aggregate, .id))]
    NotFound {
        /// What kind of thing was looked for (`operation`, `task`, `card`, …).
        aggregate: &'static str,
        /// Its id.
        id: String,
    },
    /// Creating something whose id is taken.
    #[error("{aggregate} {id} already exists")]
    AlreadyExists {
        /// What kind of thing.
        aggregate: &'static str,
        /// Its id.
        id: String,
    },
    /// The command is not allowed in the current state.
    #[error("cannot {command} this {aggregate}: it is {from}")]
    InvalidTransition {
        /// What kind of thing.
        aggregate: &'static str,
        /// Its current state (status name).
        from: String,
        /// The refused command, in words (`claim`, `answer a card on`, …).
        command: &'static str,
    },
    /// A second terminal transition: it ends exactly once.
    #[error("{aggregate} {id} has already finished as {status}; it ends exactly once")]
    AlreadyFinished {
        /// What kind of thing.
        aggregate: &'static str,
        /// Its id.
        id: String,
        /// The status it ended with.
        status: String,
    },
    /// A brief is resolved once; a second resolve is refused (upstream overwrites).
    #[error("brief {brief_id} was already resolved with '{action}'")]
    AlreadyResolved {
        /// The brief.
        brief_id: String,
        /// The action it was resolved with.
        action: String,
    },
    /// A conversation already has an unfinished conversation operation.
    #[error("conversation {topic_id} is busy: operation {operation_id} has not finished yet")]
    ConversationBusy {
        /// The conversation (topic).
        topic_id: String,
        /// The unfinished operation holding it.
        operation_id: String,
    },
    /// A task already has a running topic (run).
    #[error("task {task_id} already has a running topic {topic_id}")]
    TopicRunning {
        /// The task.
        task_id: String,
        /// Its running topic.
        topic_id: String,
    },
    /// Bad input.
    #[error("invalid {field}: {reason}")]
    Validation {
        /// The offending field (dotted path for nested input).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A human-in-the-loop answer that does not fit its card.
    #[error("answer to card {card_id} refused: {reason}")]
    InvalidAnswer {
        /// The card.
        card_id: String,
        /// What does not fit.
        reason: String,
    },
    /// A `blocks` dependency that would close a cycle.
    #[error(
        "task {task_id} cannot depend on {depends_on_id}: that closes a cycle ({})",
        .path.join(" → ")
    )]
    DependencyCycle {
        /// The dependent task.
        task_id: String,
        /// The upstream it wanted to depend on.
        depends_on_id: String,
        /// The existing path from `depends_on_id` back to `task_id`, both ends included.
        path: Vec<String>,
    },
    /// A count-based limit is reached.
    #[error("{limit}: at most {max} allowed")]
    LimitExceeded {
        /// Which limit.
        limit: &'static str,
        /// Its maximum.
        max: u64,
    },
    /// A budget's limit is reached: no new run of its scope starts until the period resets.
    #[error("budget {budget_id} on this {scope} is at its limit")]
    BudgetReached {
        /// The budget.
        budget_id: String,
        /// What it limits (`user`, `agent`, `task`, `group`, `global`).
        scope: &'static str,
    },
    /// Another worker holds a valid lease.
    #[error("operation {operation_id} is leased by worker {holder} until {expires_at}")]
    LeaseHeld {
        /// The operation.
        operation_id: String,
        /// The worker holding it.
        holder: String,
        /// When that lease runs out.
        expires_at: DateTime<Utc>,
    },
    /// The lease already ran out; the operation will be interrupted.
    #[error("the lease on operation {operation_id} expired at {expired_at}")]
    LeaseExpired {
        /// The operation.
        operation_id: String,
        /// When it ran out.
        expired_at: DateTime<Utc>,
    },
    /// A worker reported on an operation whose lease it does not hold.
    #[error("worker {worker_id} does not hold the lease on operation {operation_id}")]
    NotLeaseHolder {
        /// The operation.
        operation_id: String,
        /// The worker.
        worker_id: String,
    },
    /// A report on a claimed run without its lease's valid token.
    #[error("only the lease holder reports on operation {operation_id}: {reason}")]
    LeaseToken {
        /// The operation.
        operation_id: String,
        /// What was wrong with the token.
        reason: &'static str,
    },
    /// A deadline-driven command arrived before its deadline.
    #[error("{what} is not due before {due_at}")]
    NotDue {
        /// What was early (`lease of operation op1`, `timeout of card c1`).
        what: String,
        /// When it falls due.
        due_at: DateTime<Utc>,
    },
    /// A cron job may not fire now.
    #[error("cron job {job_id} may not fire now: {reason}")]
    ConditionNotMet {
        /// The job.
        job_id: String,
        /// The condition that failed.
        reason: String,
    },
}

fn named(aggregate: &str, id: &str) -> String {
    if id.is_empty() { aggregate.to_string() } else { format!("{aggregate} {id}") }
}

/// The API's error classes (`extensions.code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `NOT_FOUND`
    NotFound,
    /// `CONFLICT`
    Conflict,
    /// `CONVERSATION_BUSY`
    ConversationBusy,
    /// `VALIDATION`
    Validation,
    /// `LIMIT`
    Limit,
}

impl ErrorCode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "NOT_FOUND",
            Self::Conflict => "CONFLICT",
            Self::ConversationBusy => "CONVERSATION_BUSY",
            Self::Validation => "VALIDATION",
            Self::Limit => "LIMIT",
        }
    }
}

impl DomainError {
    /// The API error class of this refusal.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::NotFound { .. } => ErrorCode::NotFound,
            Self::ConversationBusy { .. } => ErrorCode::ConversationBusy,
            Self::Validation { .. } | Self::InvalidAnswer { .. } | Self::DependencyCycle { .. } => {
                ErrorCode::Validation
            }
            Self::LimitExceeded { .. } | Self::BudgetReached { .. } => ErrorCode::Limit,
            Self::AlreadyExists { .. }
            | Self::InvalidTransition { .. }
            | Self::AlreadyFinished { .. }
            | Self::AlreadyResolved { .. }
            | Self::TopicRunning { .. }
            | Self::LeaseHeld { .. }
            | Self::LeaseExpired { .. }
            | Self::NotLeaseHolder { .. }
            | Self::LeaseToken { .. }
            | Self::NotDue { .. }
            | Self::ConditionNotMet { .. } => ErrorCode::Conflict,
        }
    }

    /// A validation error on `field`.
    pub fn validation(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Validation { field: field.into(), reason: reason.into() }
    }

    /// Refuse `command` on an `aggregate` in state `from`.
    pub fn transition(aggregate: &'static str, from: impl ToString, command: &'static str) -> Self {
        Self::InvalidTransition { aggregate, from: from.to_string(), command }
    }

    /// Fill in the id of a [`DomainError::NotFound`] that did not know it (the handler knows
    /// which stream it loaded).
    pub fn with_id(self, stream_instance_id: &str) -> Self {
        match self {
            Self::NotFound { aggregate, id } if id.is_empty() => {
                Self::NotFound { aggregate, id: stream_instance_id.to_string() }
            }
            other => other,
        }
    }

    /// `aggregate` `id` does not exist.
    pub fn not_found(aggregate: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound { aggregate, id: id.into() }
    }
}

/// A stored event that cannot be turned back into a typed event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// No typed event has this event type.
    #[error("unknown event type '{event_type}'")]
    UnknownEventType {
        /// The stored event type.
        event_type: String,
    },
    /// The schema version is newer than this code, or older than any upcast knows.
    #[error("event type '{event_type}' has no schema version {version} (current is {current})")]
    UnsupportedVersion {
        /// The stored event type.
        event_type: String,
        /// The stored schema version.
        version: i32,
        /// The version this code writes.
        current: i32,
    },
    /// The payload does not match the schema.
    #[error("payload of '{event_type}' v{version} does not match its schema: {reason}")]
    InvalidPayload {
        /// The stored event type.
        event_type: String,
        /// The schema version it was read at (after upcasting).
        version: i32,
        /// What serde said.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_a_code_and_readable_message() {
        let cycle = DomainError::DependencyCycle {
            task_id: "a".into(),
            depends_on_id: "c".into(),
            path: vec!["c".into(), "b".into(), "a".into()],
        };
        assert_eq!(cycle.code(), ErrorCode::Validation);
        assert_eq!(cycle.to_string(), "task a cannot depend on c: that closes a cycle (c → b → a)");
        let limit =
            DomainError::LimitExceeded { limit: "background sub-agents per conversation", max: 3 };
        assert_eq!(limit.code().as_str(), "LIMIT");
        assert_eq!(limit.to_string(), "background sub-agents per conversation: at most 3 allowed");
        let missing = DomainError::not_found("operation", "");
        assert_eq!(missing.to_string(), "operation does not exist");
        assert_eq!(missing.with_id("op1").to_string(), "operation op1 does not exist");
        let t = DomainError::transition("operation", "done", "claim");
        assert_eq!(t.to_string(), "cannot claim this operation: it is done");
    }
}
