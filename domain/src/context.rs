//! What the outside world hands a decision ([`Context`]: time, command id, cause, actor, owner)
//! and how decided events become [`NewEvent`]s ([`Stamper`]).
//!
//! # The chain rule as implemented
//!
//! - [`Cause::Source`]: the command is itself a source (a user's API call, a worker's report, a
//!   cron fire). The **first** event it produces is the source node: `rootSourceId` = its own
//!   event id, no `parentNodeId`, `chainId` = `chain:<id>` unless the producer gave one. Every
//!   later event of the same decision (in any stream) gets `parentNodeId` = that first event.
//! - [`Cause::Event`]: the command was issued because of a recorded event E (a reactor, a
//!   policy). Every event it produces keeps E's `rootSourceId` and `chainId` and gets
//!   `parentNodeId` = E's id (and `causationId` = E's id).
//!
//! # Deterministic ids
//!
//! The n-th event of a decision gets the id `nth_child_id(command_id, "event", n, t)` where `t`
//! is the command id's own timestamp (not `now`), so retrying a command with the same command
//! id yields the same event ids and the log's idempotency turns the retry into a no-op. An event
//! with an [`idempotency_key`](crate::aggregate::DomainEvent::idempotency_key) instead gets
//! `derived_id(event_type, key, 0)`: the same key is the same event whatever command made it.
//!
//! ```
//! use agentlog_domain::context::{Cause, Context};
//! use agentlog_domain::envelope::Actor;
//! use chrono::{TimeZone, Utc};
//! use uuid::Uuid;
//! let ctx = Context::new(
//!     Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
//!     Uuid::from_u128(7),
//!     Actor::user("u1"),
//!     "u1",
//! );
//! assert!(matches!(ctx.cause, Cause::Source { .. }));
//! assert_eq!(ctx.derived_id("brief", 0), ctx.derived_id("brief", 0));
//! ```

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::aggregate::{Aggregate, DomainEvent, StreamEvents};
use crate::envelope::{Actor, Chain, EventMetadata, NewEvent, RecordedEvent};
use crate::ids::{derived_id, id_timestamp_ms, nth_child_id};

/// Why a command is being decided: it is a source itself, or a recorded event caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The command starts a chain; its first event becomes the source node.
    Source {
        /// A chain id given by the producer; `chain:<rootSourceId>` when `None`.
        chain_id: Option<String>,
    },
    /// The command was issued because of the recorded event `event_id`.
    Event {
        /// The causing event.
        event_id: Uuid,
        /// The causing event's chain root.
        root_source_id: Uuid,
        /// The causing event's chain id.
        chain_id: String,
    },
}

impl Cause {
    /// Caused by `event`.
    pub fn from_event(event: &RecordedEvent) -> Self {
        Self::from_metadata(event.event_id, &event.metadata)
    }

    /// Caused by the event `event_id` whose metadata is `metadata`.
    pub fn from_metadata(event_id: Uuid, metadata: &EventMetadata) -> Self {
        Self::Event {
            event_id,
            root_source_id: metadata.chain.root_source_id,
            chain_id: metadata.chain.chain_id.clone(),
        }
    }
}

/// Everything a decision may know about the world besides the aggregate's own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The current time, as the caller read it. A retry must reuse it.
    pub now: DateTime<Utc>,
    /// The command's id; event ids are derived from it. A retry must reuse it.
    pub command_id: Uuid,
    /// Source or caused-by.
    pub cause: Cause,
    /// Who issues the command.
    pub actor: Actor,
    /// The owner of the data (for authorization), written to every event.
    pub user_id: String,
    /// Ties together everything one client request caused.
    pub correlation_id: Option<String>,
    /// The lease token the caller presented (a worker reporting on a claimed run); never
    /// recorded.
    pub lease_token: Option<String>,
}

impl Context {
    /// A context for a command that is itself a source.
    pub fn new(
        now: DateTime<Utc>,
        command_id: Uuid,
        actor: Actor,
        user_id: impl Into<String>,
    ) -> Self {
        Self {
            now,
            command_id,
            cause: Cause::Source { chain_id: None },
            actor,
            user_id: user_id.into(),
            correlation_id: None,
            lease_token: None,
        }
    }

    /// A context for a reactor or policy acting on `trigger`: the command id is derived from
    /// the trigger and the reactor's name, and `now` is the trigger's recorded time, so running
    /// the reactor twice decides the same events with the same ids.
    pub fn reacting_to(trigger: &RecordedEvent, reactor: &str, actor: Actor) -> Self {
        let at_ms = id_timestamp_ms(trigger.event_id);
        Self {
            now: trigger.recorded_at,
            command_id: derived_id(reactor, &trigger.event_id.to_string(), at_ms),
            cause: Cause::from_event(trigger),
            actor,
            user_id: trigger.metadata.user_id.clone(),
            correlation_id: trigger.metadata.correlation_id.clone(),
            lease_token: None,
        }
    }

    /// The same context, caused by `event`.
    pub fn caused_by(mut self, event: &RecordedEvent) -> Self {
        self.cause = Cause::from_event(event);
        self
    }

    /// The same context with a producer-given chain id (only meaningful for sources).
    pub fn with_chain_id(mut self, chain_id: impl Into<String>) -> Self {
        if let Cause::Source { chain_id: slot } = &mut self.cause {
            *slot = Some(chain_id.into());
        }
        self
    }

    /// The same context with a correlation id.
    pub fn with_correlation(mut self, correlation_id: impl Into<String>) -> Self {
        self.correlation_id = Some(correlation_id.into());
        self
    }

    /// The same context presenting a lease token.
    pub fn with_lease_token(mut self, token: Option<String>) -> Self {
        self.lease_token = token;
        self
    }

    /// `now` in epoch milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.now.timestamp_millis()
    }

    /// The timestamp stamped into derived ids: the command id's own time when it is a UUID v7
    /// (so it does not depend on `now`), else `now`.
    fn id_time_ms(&self) -> i64 {
        if self.command_id.get_version_num() == 7 {
            id_timestamp_ms(self.command_id)
        } else {
            self.now_ms()
        }
    }

    /// A deterministic id for the `n`-th new entity of `kind` this command creates (a brief, a
    /// signal, a tick token), as a string.
    pub fn derived_id(&self, kind: &str, n: u32) -> String {
        nth_child_id(self.command_id, kind, n, self.id_time_ms()).to_string()
    }

    /// The event id the first event of this command gets (unless it has an idempotency key):
    /// a handler can look it up to tell that a retried command was already applied.
    pub fn first_event_id(&self) -> Uuid {
        self.nth_event_id(0)
    }

    /// The id the `n`th event of this command gets (counting across all streams it writes),
    /// unless that event has an idempotency key.
    pub fn nth_event_id(&self, n: u32) -> Uuid {
        nth_child_id(self.command_id, "event", n, self.id_time_ms())
    }

    /// A stamper for a decision that may write several streams.
    pub fn stamper(&self) -> Stamper<'_> {
        Stamper { ctx: self, next_index: 0, source_node: None }
    }
}

/// Stamps decided events with ids, chain, scope and owner, across all streams of one decision.
#[derive(Debug)]
pub struct Stamper<'a> {
    ctx: &'a Context,
    next_index: u32,
    source_node: Option<(Uuid, String)>,
}

impl Stamper<'_> {
    /// Stamp `events` decided on `state` (the state before them). Each event's scope key comes
    /// from the state after it, so a creating event already knows its topic or task.
    pub fn stamp<A: Aggregate>(&mut self, state: &A, events: &[A::Event]) -> Vec<NewEvent> {
        let mut current = state.clone();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            current = current.evolve(event);
            let event_id = self.event_id(event);
            let scope_key = current.scope_key(&self.ctx.user_id);
            let chain = self.chain_for(event_id);
            let metadata = EventMetadata {
                causation_id: chain.parent_node_id,
                chain,
                correlation_id: self.ctx.correlation_id.clone(),
                scope_key,
                actor: self.ctx.actor.clone(),
                user_id: self.ctx.user_id.clone(),
            };
            out.push(
                NewEvent::new(event_id, event.event_type(), event.to_payload(), metadata)
                    .with_schema_version(event.schema_version()),
            );
        }
        out
    }

    /// Stamp one stream's part of a multi-stream decision; `state` is that stream's state.
    pub fn write<A: Aggregate>(&mut self, state: &A, part: &StreamEvents<A::Event>) -> StreamWrite {
        StreamWrite { stream_id: part.stream_id.clone(), events: self.stamp(state, &part.events) }
    }

    fn event_id<E: DomainEvent>(&mut self, event: &E) -> Uuid {
        let index = self.next_index;
        self.next_index += 1;
        match event.idempotency_key() {
            Some(key) => derived_id(event.event_type(), &key, 0),
            None => self.ctx.nth_event_id(index),
        }
    }

    fn chain_for(&mut self, event_id: Uuid) -> Chain {
        match &self.ctx.cause {
            Cause::Event { event_id: parent, root_source_id, chain_id } => Chain {
                chain_id: chain_id.clone(),
                root_source_id: *root_source_id,
                parent_node_id: Some(*parent),
            },
            Cause::Source { chain_id } => match &self.source_node {
                Some((source, source_chain)) => Chain {
                    chain_id: source_chain.clone(),
                    root_source_id: *source,
                    parent_node_id: Some(*source),
                },
                None => {
                    let mut chain = Chain::source(event_id);
                    if let Some(given) = chain_id {
                        chain.chain_id = given.clone();
                    }
                    self.source_node = Some((event_id, chain.chain_id.clone()));
                    chain
                }
            },
        }
    }
}

/// Stamped events for one stream; the handler adds the expected version and appends all
/// writes of a decision atomically (`append_multi`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamWrite {
    /// The stream.
    pub stream_id: String,
    /// Its new events.
    pub events: Vec<NewEvent>,
}

/// Stamp the events of a single-stream decision.
pub fn stamp<A: Aggregate>(state: &A, events: &[A::Event], ctx: &Context) -> Vec<NewEvent> {
    ctx.stamper().stamp(state, events)
}

#[cfg(test)]
mod tests;
