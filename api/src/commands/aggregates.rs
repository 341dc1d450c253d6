//! Commands on aggregates that need no cross-stream rule: load, check the caller may act on it,
//! run the command, settle the read models. One generic path for tasks, briefs, cron jobs,
//! agents, groups, conversations and operations.

use agentlog_domain::context::Context;
use agentlog_domain::{
    agents::Agent, aggregate::Aggregate, briefs::Brief, conversations::Conversation, cron_jobs::CronJob,
    envelope::Actor, groups::Group, operations::Operation, tasks::Task,
};
use agentlog_eventlog::{Loaded, applied_command};

use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::commands::checks::check_replay;
use crate::error::ApiError;

/// An aggregate whose state names its owner.
pub trait Owned: Aggregate {
    /// What it is called in errors (`task`, `brief`, …).
    const WHAT: &'static str;
    /// The owner, or `None` while it does not exist.
    fn owner(&self) -> Option<&str>;
}

impl Owned for Task {
    const WHAT: &'static str = "task";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

impl Owned for Brief {
    const WHAT: &'static str = "brief";
    fn owner(&self) -> Option<&str> {
        self.brief.is_some().then_some(self.user_id.as_str())
    }
}

impl Owned for CronJob {
    const WHAT: &'static str = "cron job";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

impl Owned for Agent {
    const WHAT: &'static str = "agent";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

impl Owned for Group {
    const WHAT: &'static str = "group";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

impl Owned for Operation {
    const WHAT: &'static str = "operation";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

impl Owned for Conversation {
    const WHAT: &'static str = "conversation";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

/// What a command did.
pub struct Outcome<A> {
    /// The state after it.
    pub state: A,
    /// Position of its last event (0 when it decided nothing).
    pub position: i64,
}

impl Commands<'_> {
    /// Load an aggregate the caller may act on, `id` named in [`Commands::namespace`] for a
    /// kind whose ids are per owner; someone else's, or a missing one, is NOT_FOUND.
    pub async fn load_owned<A: Owned>(&self, id: &str) -> Result<Loaded<A>, ApiError> {
        check_id(A::WHAT, id)?;
        let loaded = self.state.handler.load_of::<A>(self.namespace(), id).await?;
        if self.may_act_on(&loaded.state, id) { Ok(loaded) } else { Err(ApiError::not_found(A::WHAT, id)) }
    }

    /// [`Self::load_owned`] from the handler's cache, without reading the log (for
    /// [`agentlog_eventlog::CommandHandler::execute_cached`]): `None` when nothing is cached or
    /// the cached state is not one the caller may act on (the log then answers). An owner
    /// never changes, so a cached state that may trail its stream still tells whose it is.
    pub fn cached_owned<A: Owned>(&self, id: &str) -> Option<Loaded<A>> {
        check_id(A::WHAT, id).ok()?;
        let loaded = self.state.handler.cached_of::<A>(self.namespace(), id)?;
        self.may_act_on(&loaded.state, id).then_some(loaded)
    }

    /// May the caller act on `state`, instance `id` named in [`Commands::namespace`]?
    fn may_act_on<A: Owned>(&self, state: &A, id: &str) -> bool {
        state.owner().is_some_and(|owner| {
            self.caller.may_see(owner) && (!A::KIND.per_owner() || A::shared_id(id) || owner == self.namespace())
        })
    }

    /// Create aggregate `id` for `owner` (the caller unless an admin names another user). For
    /// a kind whose ids are per owner, another user's `id` is no obstacle: the new one is the
    /// owner's own. An id the owner already holds answers the domain's CONFLICT.
    pub async fn create<A: Owned>(
        &self,
        id: &str,
        command: A::Command,
        owner: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Outcome<A>, ApiError> {
        check_id(A::WHAT, id)?;
        let owner = self.owner_for_new(owner)?;
        let ctx = self.context(&owner, self.user_actor(), request_id)?;
        let stream_id = self.state.handler.stream_of::<A>(&owner, id).await?;
        if request_id.is_some() {
            self.check_request_target(&stream_id, &ctx).await?;
        }
        let outcome = self.state.handler.execute_stream::<A>(&stream_id, &command, &ctx).await?;
        let position = outcome.last_position();
        self.state.settle(position).await;
        Ok(Outcome { state: outcome.state, position })
    }

    /// A resent `requestId` must be about the same aggregate: one whose earlier writes are in
    /// another stream is VALIDATION, before anything is decided (nothing is written).
    pub(crate) async fn check_request_target(&self, stream_id: &str, ctx: &Context) -> Result<(), ApiError> {
        if let Some(earlier) = applied_command(&*self.state.store, ctx).await? {
            check_replay(&earlier, stream_id)?;
        }
        Ok(())
    }

    /// Run `command` on an existing aggregate the caller may act on, as `actor` (the caller by
    /// default).
    pub async fn command<A: Owned>(
        &self,
        id: &str,
        command: A::Command,
        actor: Option<Actor>,
        request_id: Option<&str>,
    ) -> Result<Outcome<A>, ApiError> {
        let loaded = self.load_owned::<A>(id).await?;
        let owner = loaded.state.owner().unwrap_or_default().to_string();
        let ctx = self.context(&owner, actor.unwrap_or_else(|| self.user_actor()), request_id)?;
        if request_id.is_some() {
            self.check_request_target(&loaded.stream_id, &ctx).await?;
        }
        let outcome = self.state.handler.execute_stream::<A>(&loaded.stream_id, &command, &ctx).await?;
        let position = outcome.last_position();
        self.state.settle(position).await;
        Ok(Outcome { state: outcome.state, position })
    }
}
