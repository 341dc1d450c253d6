//! Typed events out of recorded ones, for the read models: decode (upcasting old schema
//! versions) and find the aggregate instance from the stream id.

use agentlog_domain::{aggregate::DomainEvent, envelope::RecordedEvent};

use crate::error::ProjectionError;

/// Decode a recorded event into its aggregate's event enum.
pub(crate) fn decode<E: DomainEvent>(e: &RecordedEvent) -> Result<E, ProjectionError> {
    E::decode(&e.event_type, e.schema_version, &e.payload).map_err(|err| ProjectionError::Decode {
        event_id: e.event_id,
        event_type: e.event_type.clone(),
        position: e.position,
        reason: err.to_string(),
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
pub(crate) type OwnedEvent<'a, E> = (&'a RecordedEvent, OwnedKey, E);

/// Decode every event of a batch with the owner and instance id of its stream, for a kind
/// whose ids are per owner.
pub(crate) fn decode_owned_batch<'a, E: DomainEvent>(
    events: &[&'a RecordedEvent],
) -> Result<Vec<OwnedEvent<'a, E>>, ProjectionError> {
    events.iter().map(|e| Ok((*e, (stream_owner(e), stream_entity(e)?.to_string()), decode::<E>(e)?))).collect()
}

/// Decode every event of a batch with the instance id of its stream.
pub(crate) fn decode_batch<'a, E: DomainEvent>(
    events: &[&'a RecordedEvent],
) -> Result<Vec<(&'a RecordedEvent, String, E)>, ProjectionError> {
    events.iter().map(|e| Ok((*e, stream_entity(e)?.to_string(), decode::<E>(e)?))).collect()
}
