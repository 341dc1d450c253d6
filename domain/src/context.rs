//! What the outside world hands a decision ([`Context`]: time, command id, cause, actor, owner).
//! How decided events become stored events with this context is [`crate::stamp`].
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

use crate::envelope::{Actor, EventMetadata, RecordedEvent};
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
    /// A digest of the client request (its field and arguments) that carried a `requestId`,
    /// recorded on its events ([`EventMetadata::request_digest`](crate::envelope::EventMetadata)).
    pub request_digest: Option<String>,
    /// The database's secret mixed into lease tokens (the server's fact; never recorded).
    pub lease_key: Option<LeaseKey>,
}

/// A secret mixed into lease tokens so none can be derived from the log; shown as `LeaseKey(..)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LeaseKey(pub [u8; 32]);

impl std::fmt::Debug for LeaseKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeaseKey(..)")
    }
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
            request_digest: None,
            lease_key: None,
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
            request_digest: None,
            lease_key: None,
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

    /// The same context for the client request with `digest` (see [`Context::request_digest`]).
    pub fn with_request_digest(mut self, digest: Option<String>) -> Self {
        self.request_digest = digest;
        self
    }

    /// The same context with the database's lease key (see [`Context::lease_key`]).
    pub fn with_lease_key(mut self, key: Option<LeaseKey>) -> Self {
        self.lease_key = key;
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
}
