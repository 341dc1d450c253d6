//! Typed events out of recorded ones, for the read models: each payload decoded once (upcasting
//! old schema versions) for every read model that handles it, and the aggregate instance found
//! from the stream id.
//!
//! The runner decodes a page of the log on the reader's side ([`DecodedEvent::owned`], which
//! also lets go of the payload's JSON there), so the projections, which run one after the other
//! on the applying side, borrow the typed event instead of each decoding it again.

use std::{ops::Deref, sync::Arc};

use agentlog_domain::{
    agents::AgentEvent,
    aggregate::DomainEvent,
    briefs::BriefEvent,
    budgets::BudgetEvent,
    conversations::ConversationEvent,
    cron_jobs::CronEvent,
    envelope::RecordedEvent,
    events::{AnyEvent, decode_any, decode_any_str},
    groups::GroupEvent,
    notifications::NotificationEvent,
    operations::OperationEvent,
    tasks::TaskEvent,
};

use agentlog_eventlog::UnparsedEvent;

use crate::error::ProjectionError;

/// A recorded event with its payload decoded once, for every read model that handles it.
#[derive(Debug, Clone)]
pub struct DecodedEvent {
    recorded: Arc<RecordedEvent>,
    /// `None`: the payload did not decode, or is of no aggregate; it is kept, and a read model
    /// that handles the event decodes it itself (and reports why it cannot).
    event: Option<AnyEvent>,
}

impl DecodedEvent {
    /// Decode a shared event, keeping its payload (others read it too).
    pub fn shared(recorded: Arc<RecordedEvent>) -> Self {
        let event = decode_any(&recorded.event_type, recorded.schema_version, &recorded.payload).ok();
        Self { recorded, event }
    }

    /// Decode an event read for the read models alone: once decoded, its JSON payload is
    /// dropped here rather than on the applying side (no read model reads it again).
    pub fn owned(mut recorded: RecordedEvent) -> Self {
        let event = decode_any(&recorded.event_type, recorded.schema_version, &recorded.payload).ok();
        if event.is_some() {
            recorded.payload = serde_json::Value::Null;
        }
        Self { recorded: Arc::new(recorded), event }
    }

    /// An event no read model decodes (it is of no read model's kind), as recorded.
    pub fn undecoded(recorded: Arc<RecordedEvent>) -> Self {
        Self { recorded, event: None }
    }

    /// [`owned`](Self::owned) when a read model `handles` its type, else as recorded.
    pub(crate) fn owned_if(recorded: RecordedEvent, handles: impl Fn(&str) -> bool) -> Self {
        if handles(&recorded.event_type) { Self::owned(recorded) } else { Self::undecoded(Arc::new(recorded)) }
    }

    /// [`owned_if`](Self::owned_if) for an event read with its payload as stored text: a
    /// payload a read model handles is read straight into its typed event; one that does not
    /// decode that way, or that no read model handles, is parsed as the log's readers parse it
    /// (text that is not JSON is the log's corruption) and goes the `owned_if` way.
    pub(crate) fn unparsed_if(
        unparsed: UnparsedEvent,
        handles: impl Fn(&str) -> bool,
    ) -> Result<Self, ProjectionError> {
        let recorded = &unparsed.event;
        if handles(&recorded.event_type)
            && let Ok(event) = decode_any_str(&recorded.event_type, recorded.schema_version, &unparsed.payload)
        {
            return Ok(Self { recorded: Arc::new(unparsed.event), event: Some(event) });
        }
        Ok(Self::owned_if(unparsed.parsed()?, handles))
    }

    /// [`shared`](Self::shared) when a read model `handles` its type, else as recorded.
    pub(crate) fn shared_if(recorded: Arc<RecordedEvent>, handles: impl Fn(&str) -> bool) -> Self {
        if handles(&recorded.event_type) { Self::shared(recorded) } else { Self::undecoded(recorded) }
    }
}

impl Deref for DecodedEvent {
    type Target = RecordedEvent;
    fn deref(&self) -> &RecordedEvent {
        &self.recorded
    }
}

/// An aggregate's event enum, found in an [`AnyEvent`].
pub(crate) trait Typed: DomainEvent + Clone {
    /// This aggregate's event, if `any` is one.
    fn of(any: &AnyEvent) -> Option<&Self>;
}

macro_rules! typed {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl Typed for $ty {
            fn of(any: &AnyEvent) -> Option<&Self> {
                match any {
                    AnyEvent::$variant(e) => Some(e),
                    _ => None,
                }
            }
        }
    )*};
}

typed! {
    OperationEvent => Operation,
    TaskEvent => Task,
    ConversationEvent => Conversation,
    BriefEvent => Brief,
    NotificationEvent => Notification,
    CronEvent => Cron,
    GroupEvent => Group,
    AgentEvent => Agent,
    BudgetEvent => Budget,
}

/// The event as its aggregate's event enum (decoded already, see [`DecodedEvent`]).
///
/// An event whose payload did not decode is decoded again here, for the reason.
pub(crate) fn decode<E: Typed>(e: &DecodedEvent) -> Result<&E, ProjectionError> {
    if let Some(typed) = e.event.as_ref().and_then(E::of) {
        return Ok(typed);
    }
    let reason = match E::decode(&e.event_type, e.schema_version, &e.payload) {
        Err(err) => err.to_string(),
        // Only an event of another aggregate (no projection is fed another's events).
        Ok(_) => format!("`{}` is not an event of this read model's aggregate", e.event_type),
    };
    Err(ProjectionError::Decode {
        event_id: e.event_id,
        event_type: e.event_type.clone(),
        position: e.position,
        reason,
    })
}

/// The aggregate instance id of an event's stream (`task-42` → `42`).
pub(crate) fn stream_entity(e: &RecordedEvent) -> Result<&str, ProjectionError> {
    agentlog_domain::streams::StreamKind::parse(&e.stream_id).map(|(_, id)| id).ok_or_else(|| ProjectionError::Decode {
        event_id: e.event_id,
        event_type: e.event_type.clone(),
        position: e.position,
        reason: format!("stream `{}` names no aggregate instance", e.stream_id),
    })
}

/// The owner of an event's aggregate: the one an owned stream id names, else the event's
/// `userId` (every event of a stream names its aggregate's owner).
pub(crate) fn stream_owner(e: &RecordedEvent) -> String {
    agentlog_domain::streams::StreamKind::parse_owner(&e.stream_id).unwrap_or_else(|| e.user_id().to_string())
}

/// `(owner, id)`: an instance of a kind whose ids are per owner.
pub(crate) type OwnedKey = (String, String);

/// A decoded event with its recorded envelope and its instance.
pub(crate) type OwnedEvent<'a, E> = (&'a DecodedEvent, OwnedKey, &'a E);

/// Decode every event of a batch with the owner and instance id of its stream, for a kind
/// whose ids are per owner.
pub(crate) fn decode_owned_batch<'a, E: Typed>(
    events: &[&'a DecodedEvent],
) -> Result<Vec<OwnedEvent<'a, E>>, ProjectionError> {
    events.iter().map(|e| Ok((*e, (stream_owner(e), stream_entity(e)?.to_string()), decode::<E>(e)?))).collect()
}

/// Decode every event of a batch with the instance id of its stream.
pub(crate) fn decode_batch<'a, E: Typed>(
    events: &[&'a DecodedEvent],
) -> Result<Vec<(&'a DecodedEvent, String, &'a E)>, ProjectionError> {
    events.iter().map(|e| Ok((*e, stream_entity(e)?.to_string(), decode::<E>(e)?))).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use agentlog_domain::envelope::{Actor, EventMetadata};
    use chrono::Utc;
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    /// An event at `position` of `stream_id`, owned by `owner` (the unit tests' fixture).
    pub(crate) fn event_at(
        position: i64,
        stream_id: &str,
        owner: &str,
        event_type: &str,
        payload: serde_json::Value,
    ) -> RecordedEvent {
        let id = Uuid::from_u128(position as u128);
        RecordedEvent {
            position,
            event_id: id,
            stream_id: stream_id.into(),
            stream_version: position,
            event_type: event_type.into(),
            schema_version: 1,
            payload,
            metadata: EventMetadata::source(id, Actor::user(owner), owner, "s"),
            recorded_at: Utc::now(),
        }
    }

    fn recorded(event_type: &str, payload: serde_json::Value) -> RecordedEvent {
        event_at(3, "brief@u1/b1", "u1", event_type, payload)
    }

    #[test]
    fn an_owned_event_is_decoded_once_and_lets_go_of_its_json() {
        let e = recorded("brief.read", json!({"at": "2026-01-01T00:00:00Z"}));
        let expected = BriefEvent::decode("brief.read", 1, &e.payload).unwrap();
        let decoded = DecodedEvent::owned(e);
        assert_eq!(decoded.payload, serde_json::Value::Null);
        assert_eq!(decode::<BriefEvent>(&decoded).unwrap(), &expected);
        // Shared: the same event, its payload kept for the log's other readers.
        let shared = DecodedEvent::shared(Arc::new(recorded("brief.read", json!({"at": "2026-01-01T00:00:00Z"}))));
        assert_ne!(shared.payload, serde_json::Value::Null);
        assert_eq!(decode::<BriefEvent>(&shared).unwrap(), &expected);
    }

    #[test]
    fn a_payload_that_does_not_decode_is_kept_and_its_reason_reported() {
        let bad = json!({"at": 42});
        let decoded = DecodedEvent::owned(recorded("brief.read", bad.clone()));
        assert_eq!(decoded.payload, bad, "kept for the reason");
        let expected = BriefEvent::decode("brief.read", 1, &bad).unwrap_err().to_string();
        match decode::<BriefEvent>(&decoded) {
            Err(ProjectionError::Decode { position: 3, reason, .. }) => assert_eq!(reason, expected),
            other => panic!("expected a decode error, got {other:?}"),
        }
        // Another aggregate's event is refused, not misread.
        let brief = DecodedEvent::owned(recorded("brief.read", json!({"at": "2026-01-01T00:00:00Z"})));
        assert!(matches!(decode::<TaskEvent>(&brief), Err(ProjectionError::Decode { .. })));
    }

    /// An event as a rebuild reads it on SQLite: its payload as stored text.
    fn unparsed(event_type: &str, text: &str) -> UnparsedEvent {
        UnparsedEvent { event: recorded(event_type, serde_json::Value::Null), payload: text.to_string() }
    }

    #[test]
    fn an_unparsed_event_decodes_as_an_owned_one_does() {
        let text = r#"{"at":"2026-01-01T00:00:00Z"}"#;
        let all = |_: &str| true;
        let owned = DecodedEvent::owned(recorded("brief.read", serde_json::from_str(text).unwrap()));
        let from_text = DecodedEvent::unparsed_if(unparsed("brief.read", text), all).unwrap();
        assert_eq!(from_text.payload, serde_json::Value::Null);
        assert_eq!(decode::<BriefEvent>(&from_text).unwrap(), decode::<BriefEvent>(&owned).unwrap());
        // One that does not decode keeps its parsed payload and reports the same reason.
        let bad = r#"{"at":42}"#;
        let from_text = DecodedEvent::unparsed_if(unparsed("brief.read", bad), all).unwrap();
        assert_eq!(from_text.payload, json!({"at": 42}));
        let owned = DecodedEvent::owned(recorded("brief.read", json!({"at": 42})));
        let reason = |d: &DecodedEvent| decode::<BriefEvent>(d).unwrap_err().to_string();
        assert_eq!(reason(&from_text), reason(&owned));
        // One no read model handles is parsed as recorded, not decoded.
        let none = |_: &str| false;
        let kept = DecodedEvent::unparsed_if(unparsed("brief.read", text), none).unwrap();
        assert_eq!(kept.payload, json!({"at": "2026-01-01T00:00:00Z"}));
        assert!(kept.event.is_none());
        // Text that is not JSON is the log's corruption, whoever handles it.
        for handles in [all, none] {
            let err = DecodedEvent::unparsed_if(unparsed("brief.read", "{not json"), handles).unwrap_err();
            assert!(err.to_string().contains("payload"), "{err}");
        }
    }
}
