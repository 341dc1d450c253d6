//! Why a reactor or a clock pass could not finish a reaction. The reactor logs it and resumes
//! from its checkpoint; nothing here reaches a client.

use agentlog_eventlog::EventLogError;
use agentlog_projections::ProjectionError;

use crate::error::ApiError;

/// A reaction that could not be carried out (it is retried from the checkpoint).
#[derive(Debug, thiserror::Error)]
pub enum ReactorError {
    /// A use case the reactor ran (as the owner of what triggered it) failed or was refused.
    #[error(transparent)]
    Command(#[from] ApiError),
    /// The log failed.
    #[error(transparent)]
    Log(#[from] EventLogError),
    /// A read model failed.
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// A fact in the log does not decode as its type says.
    #[error("the event at position {position} cannot be decoded: {reason}")]
    Undecodable {
        /// Its position.
        position: i64,
        /// Why.
        reason: String,
    },
    /// The log subscription ended while the server was running.
    #[error("the log subscription ended")]
    SubscriptionEnded,
}

impl From<agentlog_eventlog::CommandError> for ReactorError {
    fn from(e: agentlog_eventlog::CommandError) -> Self {
        Self::Command(ApiError::from(e))
    }
}

impl From<agentlog_domain::error::DomainError> for ReactorError {
    fn from(e: agentlog_domain::error::DomainError) -> Self {
        Self::Command(ApiError::Domain(e))
    }
}
