//! The decider core: typed events ([`DomainEvent`]), aggregates ([`Aggregate`]: `decide` and
//! `evolve`); each names its stream kind ([`StreamKind`]).
//!
//! Command handling, in the api crate, is always the same loop:
//!
//! ```
//! use agentlog_domain::aggregate::Aggregate;
//! use agentlog_domain::briefs::{Brief, BriefCommand, BriefType, CreateBrief};
//! use agentlog_domain::context::Context;
//! use agentlog_domain::stamp::stamp;
//! use agentlog_domain::envelope::Actor;
//! use chrono::{TimeZone, Utc};
//! use uuid::Uuid;
//!
//! let ctx = Context::new(
//!     Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap(),
//!     Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001),
//!     Actor::user("u1"),
//!     "u1",
//! );
//! // 1. load the stream (or a snapshot plus the events after it) and fold it
//! let state = Brief::default();
//! // 2. decide
//! let cmd = BriefCommand::Create(CreateBrief::new("b1", BriefType::Insight, "Title", "Summary"));
//! let events = state.decide(&cmd, &ctx).unwrap();
//! // 3. stamp ids, chain and scope, then append with the expected version
//! let new_events = stamp(&state, &events, &ctx);
//! assert_eq!(new_events[0].event_type, "brief.created");
//! assert_eq!(Brief::KIND.owned_stream_id("u1", "b1"), "brief@u1/b1");
//! ```

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::Context;
use crate::error::{DecodeError, DomainError};
use crate::scope::Scope;
use crate::streams::StreamKind;

/// A typed event: what one aggregate records.
pub trait DomainEvent: Sized + Clone + Debug + PartialEq {
    /// Dotted, lower-case, past tense: `operation.started`, `task.topic_completed`.
    fn event_type(&self) -> &'static str;
    /// The payload schema version this code writes for this event type.
    fn schema_version(&self) -> i32;
    /// The payload as a JSON object with camelCase fields.
    fn to_payload(&self) -> Value;
    /// Read a stored event back, upcasting old schema versions (see [`crate::event_codec`]).
    fn decode(event_type: &str, schema_version: i32, payload: &Value) -> Result<Self, DecodeError>;
    /// [`decode`](Self::decode) from the payload's stored JSON text (a current version with no
    /// `Value` between).
    fn decode_str(event_type: &str, schema_version: i32, text: &str) -> Result<Self, DecodeError>;
    /// When `Some`, the event id is derived from this key alone (not from the command), so
    /// recording the same key twice is one event: dedupe becomes a property of the log.
    fn idempotency_key(&self) -> Option<String> {
        None
    }
    /// Every event type of this enum with its current schema version.
    fn event_types() -> &'static [(&'static str, i32)];
}

/// An aggregate: state folded from its stream, plus the rules for what may happen next.
///
/// The state must serialise, because the command handler keeps snapshots of long streams, and
/// be plain data (`Send + Sync + 'static`), because it keeps recent states in memory.
pub trait Aggregate:
    Default + Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// What may be asked of it.
    type Command: Debug;
    /// What it records.
    type Event: DomainEvent;
    /// Its stream kind; streams are named `<KIND>-<id>`.
    const KIND: StreamKind;

    /// The stream of the instance `id` (`notification-<id>`, `refusal-<id>`, …); a kind whose ids are
    /// per owner has no global instance `id` (see [`StreamKind::per_owner`]).
    fn stream_id(id: &str) -> String {
        debug_assert!(
            !Self::KIND.per_owner() || Self::shared_id(id),
            "{:?} ids are per owner: name the owner",
            Self::KIND
        );
        Self::KIND.stream_id(id)
    }

    /// Is `id` one every owner shares (a built-in agent), kept in its global stream even for
    /// a kind whose ids are per owner?
    fn shared_id(_id: &str) -> bool {
        false
    }

    /// May this command happen now? If so, what happened (possibly nothing: an idempotent
    /// repeat decides no events).
    fn decide(
        &self,
        command: &Self::Command,
        ctx: &Context,
    ) -> Result<Vec<Self::Event>, DomainError>;

    /// The state after one event. Never fails: events are facts.
    fn evolve(self, event: &Self::Event) -> Self;

    /// The ids this instance knows, from which an event's scope key is derived.
    fn scope(&self) -> Scope {
        Scope::default()
    }

    /// The scope key of an event that leaves the aggregate in this state: by default derived
    /// from [`Aggregate::scope`], with `owner` as the user when the state knows none.
    fn scope_key(&self, owner: &str) -> String {
        let mut scope = self.scope();
        if scope.user_id.is_none() && !owner.is_empty() {
            scope.user_id = Some(owner.to_string());
        }
        scope.scope_key()
    }

    /// Checks the invariants of the state; `Err` names the broken one. Used by property tests
    /// after every step and available to the handler as a debug check on snapshots.
    fn check_invariants(&self) -> Result<(), String> {
        Ok(())
    }

    /// Fold events over the empty state.
    fn fold<'a, I>(events: I) -> Self
    where
        I: IntoIterator<Item = &'a Self::Event>,
        Self::Event: 'a,
    {
        events.into_iter().fold(Self::default(), |state, event| state.evolve(event))
    }
}

/// Typed events for one stream, as a cross-aggregate decision returns them.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvents<E> {
    /// The stream they go to.
    pub stream_id: String,
    /// The events, in order.
    pub events: Vec<E>,
}

impl<E> StreamEvents<E> {
    /// Events for `stream_id`.
    pub fn new(stream_id: impl Into<String>, events: Vec<E>) -> Self {
        Self { stream_id: stream_id.into(), events }
    }
}
