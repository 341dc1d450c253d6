//! Commands decided on the handler's cached state with no read of the log first.

use agentlog_domain::{aggregate::Aggregate, context::Context, stamp::stamp};

use crate::{
    append::ExpectedVersion,
    command::{CommandError, CommandHandler, CommandOutcome, Loaded},
    error::EventLogError,
};

impl CommandHandler {
    /// The state this handler keeps for stream `stream_id` (see the `state_cache` module), as
    /// [`Self::execute_cached`] takes it; `None` when it keeps none. The state may trail the
    /// stream: another instance may have appended since.
    pub fn cached<A: Aggregate>(&self, stream_id: &str) -> Option<Loaded<A>> {
        let (state, version) = self.cache.get::<A>(stream_id)?;
        Some(Loaded { state, version, stream_id: stream_id.to_string() })
    }

    /// [`Self::cached`] for `owner`'s instance `id` of `A`, when its stream is the one
    /// [`Self::stream_of`] names without reading the log (the owned stream, or a kind's only one).
    pub fn cached_of<A: Aggregate>(&self, owner: &str, id: &str) -> Option<Loaded<A>> {
        let stream_id = if A::KIND.per_owner() && !A::shared_id(id) {
            A::KIND.owned_stream_id(owner, id)
        } else {
            A::stream_id(id)
        };
        self.cached::<A>(&stream_id)
    }

    /// Run `command` on a state from [`Self::cached`] without reading anything first: the
    /// append's expected version is what proves the state current, and the command's first
    /// event id, stored or not, whether it is new. A run's steps, one request each, need no
    /// read of the log this way. Answers `None`, having written nothing, where that proof is
    /// not to be had: the domain refused or decided nothing (on a state that may be stale), the
    /// stream had moved, the command's ids are already in the log (a resend), or the first
    /// event's id comes from an idempotency key. The caller then loads the stream and runs the
    /// command as usual ([`Self::execute_loaded`]), which answers each of those cases.
    pub async fn execute_cached<A: Aggregate>(
        &self,
        loaded: Loaded<A>,
        command: &A::Command,
        ctx: &Context,
    ) -> Result<Option<CommandOutcome<A>>, CommandError> {
        let Loaded { state, version, stream_id } = loaded;
        let decided = state.decide(command, ctx).ok().filter(|_| version > 0);
        let Some(events) = decided else {
            self.counters.cached(false);
            return Ok(None);
        };
        let stamped = stamp(&state, &events, ctx);
        if stamped.first().is_none_or(|e| e.event_id != ctx.first_event_id()) {
            self.counters.cached(false);
            return Ok(None);
        }
        let outcome = match self.store.append(&stream_id, ExpectedVersion::from_version(version), stamped).await {
            Ok(result) if !result.duplicate => Some(self.landed(&stream_id, state, version, &events, result).await),
            Ok(_) => None,
            Err(e) if e.is_conflict() => {
                self.counters.conflicted();
                None
            }
            Err(EventLogError::IdempotencyConflict { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        self.counters.cached(outcome.is_some());
        Ok(outcome)
    }
}
