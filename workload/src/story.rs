//! What a story is — one actor's thread of decisions (a chat session, a task's life, a cron
//! job …) advanced one decision per round — and the deterministic clock, ids and contexts
//! every decision gets.

use agentlog_domain::{
    context::{Cause, Context},
    envelope::{Actor, NewEvent},
    error::DomainError,
    ids::derived_id,
};
use agentlog_eventlog::StreamAppend;
use chrono::{DateTime, Duration, Utc};

use super::{rng::Rng, world::Decision, world::World};

/// What a story wants this round.
// Built once per round and matched at once; boxing the decision buys nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Poll {
    /// Append this decision.
    Decide(Decision),
    /// Nothing yet (waiting for time to pass or another story to act).
    Wait,
    /// The story is over.
    Done,
}

/// One thread of decisions. `poll` reads the world and proposes the next decision; it may move
/// the story past steps that need no decision, but a proposal itself changes nothing until
/// `applied` is told it was appended (a proposal that collides with another story's stream in
/// the same round is dropped and proposed again next round).
pub(crate) trait Story: Send {
    /// The next decision.
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError>;
    /// The decision of the last poll was applied; `appends` hold its stamped events per
    /// stream. Stories it starts go into `spawned`.
    fn applied(&mut self, appends: &[StreamAppend], world: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>);
    /// The story is over: stop tracking the instances only it wrote to (keeps memory flat).
    fn forget(&self, _world: &mut World) {}
}

/// The generator's deterministic sources: randomness, the simulated clock, and fresh ids.
#[derive(Debug)]
pub(crate) struct Gen {
    /// Seeded randomness.
    pub rng: Rng,
    seed: u64,
    round_start: DateTime<Utc>,
    round: u64,
    in_round: i64,
    commands: u64,
    ids: u64,
}

impl Gen {
    /// A generator whose clock starts at `start`.
    pub(crate) fn new(seed: u64, start: DateTime<Utc>) -> Self {
        Self { rng: Rng::new(seed), seed, round_start: start, round: 0, in_round: 0, commands: 0, ids: 0 }
    }

    /// Move the clock to the next round.
    pub(crate) fn next_round(&mut self, round_secs: i64) {
        self.round += 1;
        self.round_start += Duration::seconds(round_secs);
        self.in_round = 0;
    }

    /// The current round number.
    pub(crate) fn round(&self) -> u64 {
        self.round
    }

    /// The time of the next decision (one millisecond apart within a round, so times are
    /// strictly increasing).
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.round_start + Duration::milliseconds(self.in_round)
    }

    /// A context for a new decision by `actor` on `user`'s data, caused by `cause` (a source
    /// when `None`).
    pub(crate) fn ctx(&mut self, actor: Actor, user: &str, cause: Option<Cause>) -> Context {
        let now = self.now();
        self.in_round += 1;
        self.commands += 1;
        let command_id =
            derived_id("workload-command", &format!("{}:{}", self.seed, self.commands), now.timestamp_millis());
        let mut ctx = Context::new(now, command_id, actor, user);
        if let Some(cause) = cause {
            ctx.cause = cause;
        }
        ctx
    }

    /// A fresh id with a readable prefix (`op-…`, `msg-…`), unique for this seed.
    pub(crate) fn id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}-{:x}-{}", self.seed, self.ids)
    }
}

/// The cause a reaction to `event` carries (its chain, with `event` as parent).
pub(crate) fn caused_by(event: &NewEvent) -> Cause {
    Cause::from_metadata(event.event_id, &event.metadata)
}

/// The first event of `event_type` among `events`.
pub(crate) fn find<'a>(events: &'a [NewEvent], event_type: &str) -> Option<&'a NewEvent> {
    events.iter().find(|e| e.event_type == event_type)
}

/// The events one stream got from a decision.
pub(crate) fn stream_events<'a>(appends: &'a [StreamAppend], stream_id: &str) -> &'a [NewEvent] {
    appends.iter().find(|a| a.stream_id == stream_id).map_or(&[], |a| a.events.as_slice())
}
