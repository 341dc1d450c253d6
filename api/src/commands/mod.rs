//! The application's use cases: turn a caller's request into domain commands, run them through
//! the [`CommandHandler`](agentlog_eventlog::CommandHandler), and settle the read models.
//! GraphQL resolvers only parse arguments and call these.

pub mod aggregates;
pub mod budgets;
pub mod builtins;
pub mod groups;
pub mod inbox;
pub mod operations;
pub mod tasks;

use agentlog_domain::{context::Context, envelope::Actor, ids::derived_id};
use agentlog_eventlog::AppendResult;
use chrono::Utc;
use uuid::Uuid;

use crate::{auth::Caller, error::ApiError, state::AppState};

/// Use cases for one caller.
pub struct Commands<'a> {
    /// The application.
    pub state: &'a AppState,
    /// Who asks.
    pub caller: &'a Caller,
}

impl<'a> Commands<'a> {
    /// Use cases for `caller`.
    pub fn new(state: &'a AppState, caller: &'a Caller) -> Self {
        Self { state, caller }
    }

    /// The context of a command on data owned by `owner`. A client `request_id` makes the
    /// command id (and so the event ids) deterministic: retrying the same request is a no-op.
    pub fn context(&self, owner: &str, actor: Actor, request_id: Option<&str>) -> Result<Context, ApiError> {
        let command_id = match request_id {
            Some(r) if r.is_empty() || r.len() > 200 => {
                return Err(ApiError::validation("requestId", "must be 1 to 200 characters"));
            }
            Some(r) => derived_id("request", &format!("{}\u{0}{r}", self.caller.user_id), 0),
            None => Uuid::now_v7(),
        };
        let mut ctx = Context::new(Utc::now(), command_id, actor, owner);
        if let Some(r) = request_id {
            ctx = ctx.with_correlation(r);
        }
        Ok(ctx)
    }

    /// The owner of new data: the caller, or for an admin the user it names.
    pub fn owner_for_new(&self, owner: Option<&str>) -> Result<String, ApiError> {
        match owner {
            None => Ok(self.caller.user_id.clone()),
            Some(o) if self.caller.admin => Ok(o.to_string()),
            Some(o) if o == self.caller.user_id => Ok(o.to_string()),
            Some(_) => Err(ApiError::Forbidden("only an admin may create data for another user".into())),
        }
    }

    /// The actor for a user acting.
    pub fn user_actor(&self) -> Actor {
        Actor::user(self.caller.user_id.clone())
    }
}

/// A resent request (same `requestId`) is answered with what its first attempt wrote; the
/// answer must be about the same target. A `requestId` reused for a request on another
/// aggregate (`stream_id` not among the earlier writes) is refused rather than answered with
/// the other request's result.
pub fn check_replay(results: &[AppendResult], stream_id: &str) -> Result<(), ApiError> {
    if is_replay(results) && !results.iter().any(|r| r.stream_id == stream_id) {
        return Err(ApiError::validation("requestId", "was already used for a different request"));
    }
    Ok(())
}

/// True when a decision's appends are an earlier attempt's, found in the log (nothing new).
pub fn is_replay(results: &[AppendResult]) -> bool {
    !results.is_empty() && results.iter().all(|r| r.duplicate)
}

/// Check a time zone given by a client: an IANA zone name (`Europe/Berlin`, `UTC`), which the
/// scheduler can match patterns in. (The domain has no zone database; this is the server's
/// fact about the name.)
pub fn check_time_zone(field: &str, zone: &str) -> Result<(), ApiError> {
    match zone.parse::<chrono_tz::Tz>() {
        Ok(_) => Ok(()),
        Err(_) => Err(ApiError::validation(
            field,
            format!("'{}' is not an IANA time zone", zone.chars().take(64).collect::<String>()),
        )),
    }
}

/// Check an id given by a client.
pub fn check_id(field: &str, id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ApiError::validation(field, "must be 1 to 128 characters, no spaces or control characters"));
    }
    Ok(())
}
