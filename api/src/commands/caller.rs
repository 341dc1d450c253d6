//! [`Commands`]: the use cases for one caller, and what every use case needs from it (the
//! command's context, the owner of new data, the acting user).

use agentlog_domain::{context::Context, envelope::Actor, ids::request_command_id};
use chrono::Utc;
use uuid::Uuid;

use crate::{auth::Caller, error::ApiError, state::App};

/// Use cases for one caller.
pub struct Commands<'a> {
    /// The application.
    pub state: &'a App,
    /// Who asks.
    pub caller: &'a Caller,
    /// Whose ids the caller names (an admin's `ownerId`); `None`: the caller's own.
    owner: Option<String>,
    /// The client request's digest (its field and arguments), recorded with a `requestId`.
    request_digest: Option<String>,
}

impl<'a> Commands<'a> {
    /// Use cases for `caller`.
    pub fn new(state: &'a App, caller: &'a Caller) -> Self {
        Self { state, caller, owner: None, request_digest: None }
    }

    /// The same use cases for the client request with `digest` (its field and arguments): a
    /// `requestId` it carries names that request alone, and the same id sent again with another
    /// digest is refused (VALIDATION) instead of answered with the first request's result.
    pub fn with_request_digest(mut self, digest: Option<String>) -> Self {
        self.request_digest = digest;
        self
    }

    /// The same use cases naming ids of `owner` (an admin's `ownerId`; `None`: the caller's
    /// own). A user naming someone else finds nothing there it may see: NOT_FOUND.
    pub fn owned_by(mut self, owner: Option<&str>) -> Self {
        self.owner = owner.map(str::to_string);
        self
    }

    /// Whose ids the caller names: the owner given to [`Self::owned_by`], else the caller.
    pub fn namespace(&self) -> &str {
        self.owner.as_deref().unwrap_or(&self.caller.user_id)
    }

    /// The context of a command on data owned by `owner`. A client `request_id` makes the
    /// command id (and so the event ids) deterministic: retrying the same request is a no-op.
    pub fn context(&self, owner: &str, actor: Actor, request_id: Option<&str>) -> Result<Context, ApiError> {
        let command_id = match request_id {
            Some(r) if r.is_empty() || r.len() > 200 => {
                return Err(ApiError::validation("requestId", "must be 1 to 200 characters"));
            }
            Some(r) => request_command_id(&self.caller.user_id, r),
            None => Uuid::now_v7(),
        };
        let mut ctx = Context::new(Utc::now(), command_id, actor, owner).with_lease_key(Some(self.state.lease_key));
        if let Some(r) = request_id {
            ctx = ctx.with_correlation(r).with_request_digest(self.request_digest.clone());
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
