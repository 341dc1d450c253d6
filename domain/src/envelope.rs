//! The event envelope (SPEC.md §2): what every fact in the log carries besides its payload.
//!
//! A [`NewEvent`] is what a producer hands to the log; the log answers with a [`RecordedEvent`]
//! that adds the global `position`, the `stream_version` and `recorded_at`.
//!
//! ```
//! use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent};
//! use uuid::Uuid;
//!
//! let id = Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001);
//! let meta = EventMetadata::source(id, Actor::user("u1"), "u1", "user:u1");
//! let event = NewEvent::new(id, "conversation.message_appended", serde_json::json!({"text": "hi"}), meta);
//! assert_eq!(event.metadata.chain.root_source_id, id);
//! assert_eq!(event.metadata.chain.chain_id, format!("chain:{id}"));
//! ```

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// The causal chain of an event: the source it descends from and its direct cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chain {
    /// `chain:<rootSourceId>` unless the source's producer gave another.
    pub chain_id: String,
    /// The event id of the source event this chain started at.
    pub root_source_id: Uuid,
    /// The event id of the event that directly caused this one; `None` on a source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_node_id: Option<Uuid>,
}

impl Chain {
    /// The chain of a source event: it is its own root.
    pub fn source(source_event_id: Uuid) -> Self {
        Self {
            chain_id: format!("chain:{source_event_id}"),
            root_source_id: source_event_id,
            parent_node_id: None,
        }
    }

    /// The chain of an event directly caused by the event `parent` whose chain is `self`.
    pub fn caused_by(&self, parent: Uuid) -> Self {
        Self {
            chain_id: self.chain_id.clone(),
            root_source_id: self.root_source_id,
            parent_node_id: Some(parent),
        }
    }

    /// True when this chain marks its event as a source (no parent).
    pub fn is_source(&self) -> bool {
        self.parent_node_id.is_none()
    }
}

/// Who did it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorKind {
    /// A human through the API.
    User,
    /// An agent (LLM-driven) acting on its own behalf.
    Agent,
    /// An agent runtime process reporting on an operation.
    Worker,
    /// agentlog itself: reactors, scheduler, reaper.
    System,
}

/// The actor of an event: its kind and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// What kind of actor.
    pub kind: ActorKind,
    /// Its id (user id, agent id, worker id, or the reactor's name for `system`).
    pub id: String,
}

impl Actor {
    /// A user actor.
    pub fn user(id: impl Into<String>) -> Self {
        Self { kind: ActorKind::User, id: id.into() }
    }
    /// An agent actor.
    pub fn agent(id: impl Into<String>) -> Self {
        Self { kind: ActorKind::Agent, id: id.into() }
    }
    /// A worker actor.
    pub fn worker(id: impl Into<String>) -> Self {
        Self { kind: ActorKind::Worker, id: id.into() }
    }
    /// The system (a reactor) acting.
    pub fn system(id: impl Into<String>) -> Self {
        Self { kind: ActorKind::System, id: id.into() }
    }
}

/// Everything about an event that is not its payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventMetadata {
    /// Causal chain.
    pub chain: Chain,
    /// The event id of the direct cause (equals `chain.parentNodeId` when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<Uuid>,
    /// A request-wide id that ties together everything one client request caused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The lane for dedupe, rate limits and hand-offs (see [`crate::scope`]).
    pub scope_key: String,
    /// Who did it.
    pub actor: Actor,
    /// The owner of the data, for authorization.
    pub user_id: String,
    /// A digest of the client request that wrote it (its field and arguments), when it carried
    /// a `requestId`: the id resent with other arguments is refused, not answered as this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
}

impl EventMetadata {
    /// Metadata for a source event with id `event_id`.
    pub fn source(
        event_id: Uuid,
        actor: Actor,
        user_id: impl Into<String>,
        scope_key: impl Into<String>,
    ) -> Self {
        Self {
            chain: Chain::source(event_id),
            causation_id: None,
            correlation_id: None,
            scope_key: scope_key.into(),
            actor,
            user_id: user_id.into(),
            request_digest: None,
        }
    }

    /// Metadata for an event caused by `parent` (whose metadata is `self`), keeping chain,
    /// correlation, scope and owner, with another actor.
    pub fn caused_by(&self, parent: Uuid, actor: Actor) -> Self {
        Self {
            chain: self.chain.caused_by(parent),
            causation_id: Some(parent),
            correlation_id: self.correlation_id.clone(),
            scope_key: self.scope_key.clone(),
            actor,
            user_id: self.user_id.clone(),
            request_digest: None,
        }
    }

    /// The same metadata with a correlation id.
    pub fn with_correlation(mut self, correlation_id: impl Into<String>) -> Self {
        self.correlation_id = Some(correlation_id.into());
        self
    }
}

/// An event as a producer hands it to the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewEvent {
    /// UUID v7; the idempotency key of the append.
    pub event_id: Uuid,
    /// Dotted, lower-case, past tense (`operation.started`).
    pub event_type: String,
    /// Version of the payload schema of this event type (1 unless upcast rules exist).
    pub schema_version: i32,
    /// The typed event as a JSON object.
    pub payload: Value,
    /// Chain, actor, owner, scope.
    pub metadata: EventMetadata,
}

impl NewEvent {
    /// A new event at schema version 1.
    pub fn new(
        event_id: Uuid,
        event_type: impl Into<String>,
        payload: Value,
        metadata: EventMetadata,
    ) -> Self {
        Self { event_id, event_type: event_type.into(), schema_version: 1, payload, metadata }
    }

    /// The same event at another schema version.
    pub fn with_schema_version(mut self, schema_version: i32) -> Self {
        self.schema_version = schema_version;
        self
    }
}

/// An event as the log stores and returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedEvent {
    /// Global order in the log; strictly increasing for every reader (gaps are possible).
    pub position: i64,
    /// UUID v7, unique in the log.
    pub event_id: Uuid,
    /// The aggregate instance's stream.
    pub stream_id: String,
    /// 1, 2, 3 … within the stream, no gaps.
    pub stream_version: i64,
    /// Dotted, lower-case, past tense.
    pub event_type: String,
    /// Version of the payload schema.
    pub schema_version: i32,
    /// The payload JSON object.
    pub payload: Value,
    /// Chain, actor, owner, scope.
    pub metadata: EventMetadata,
    /// When the log recorded it (UTC).
    pub recorded_at: DateTime<Utc>,
}

impl RecordedEvent {
    /// The causal chain of this event.
    pub fn chain(&self) -> &Chain {
        &self.metadata.chain
    }

    /// The owner of this event.
    pub fn user_id(&self) -> &str {
        &self.metadata.user_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn source_chain_roots_at_itself() {
        let c = Chain::source(id(7));
        assert_eq!(c.root_source_id, id(7));
        assert!(c.is_source());
        assert_eq!(c.chain_id, format!("chain:{}", id(7)));
    }

    #[test]
    fn caused_events_keep_root_and_point_at_parent() {
        let meta =
            EventMetadata::source(id(1), Actor::user("u"), "u", "user:u").with_correlation("req-1");
        let child = meta.caused_by(id(2), Actor::system("signal-bus"));
        assert_eq!(child.chain.root_source_id, id(1));
        assert_eq!(child.chain.parent_node_id, Some(id(2)));
        assert_eq!(child.causation_id, Some(id(2)));
        assert_eq!(child.correlation_id.as_deref(), Some("req-1"));
        assert_eq!(child.user_id, "u");
        let grandchild = child.caused_by(id(3), Actor::system("x"));
        assert_eq!(grandchild.chain.root_source_id, id(1));
        assert_eq!(grandchild.chain.parent_node_id, Some(id(3)));
    }

    #[test]
    fn metadata_json_is_camel_case_and_omits_absent_fields() {
        let meta = EventMetadata::source(id(1), Actor::worker("w1"), "u", "topic:t");
        let json = serde_json::to_value(&meta).unwrap();
        assert_eq!(json["chain"]["rootSourceId"], id(1).to_string());
        assert!(json["chain"].get("parentNodeId").is_none());
        assert!(json.get("causationId").is_none());
        assert_eq!(json["scopeKey"], "topic:t");
        assert_eq!(json["actor"]["kind"], "worker");
        assert_eq!(json["userId"], "u");
        let back: EventMetadata = serde_json::from_value(json).unwrap();
        assert_eq!(back, meta);
    }
}
