//! Input checks that run before anything reaches the database.

use std::collections::HashSet;

use agentlog_domain::envelope::NewEvent;
use serde_json::Value;

use crate::{
    append::{ExpectedVersion, StreamAppend},
    error::ValidationError,
};

/// Limits on what one append may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest serialized payload, in bytes (default 1 MiB).
    pub max_payload_bytes: usize,
    /// Most events in one append (default 10,000).
    pub max_events_per_append: usize,
    /// Longest stream id, in bytes (default 256).
    pub max_stream_id_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_payload_bytes: 1024 * 1024, max_events_per_append: 10_000, max_stream_id_bytes: 256 }
    }
}

/// An event that passed validation, serialized once for the database.
#[derive(Debug, Clone)]
pub(crate) struct PreparedEvent {
    pub event: NewEvent,
    pub payload_json: String,
    pub metadata_json: String,
}

/// One stream's part of a validated append.
#[derive(Debug)]
pub(crate) struct PreparedPart {
    pub stream_id: String,
    pub expected: ExpectedVersion,
    pub events: Vec<PreparedEvent>,
}

/// A validated append: one or more streams, all or nothing.
pub(crate) type PreparedAppend = Vec<PreparedPart>;

/// Is `t` dotted lower-case: at least two segments of `[a-z][a-z0-9_]*`?
pub fn is_valid_event_type(t: &str) -> bool {
    let mut segments = 0;
    for segment in t.split('.') {
        let mut chars = segment.chars();
        match chars.next() {
            Some(c) if c.is_ascii_lowercase() => {}
            _ => return false,
        }
        if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            return false;
        }
        segments += 1;
    }
    segments >= 2 && t.len() <= 128
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Does any string or key in `v` contain NUL? Iterative: payloads may nest deeply.
fn contains_nul(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains('\0') => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (k, item) in map {
                    if k.contains('\0') {
                        return true;
                    }
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    false
}

fn metadata_has_nul(m: &agentlog_domain::envelope::EventMetadata) -> bool {
    [Some(&m.chain.chain_id), m.correlation_id.as_ref(), Some(&m.scope_key), Some(&m.actor.id), Some(&m.user_id)]
        .into_iter()
        .flatten()
        .any(|s| s.contains('\0'))
}

fn check_stream_id(stream_id: &str, limits: &Limits) -> Result<(), ValidationError> {
    if stream_id.is_empty() {
        return Err(ValidationError::EmptyStreamId);
    }
    let shown = || stream_id.chars().take(80).collect::<String>();
    if stream_id.len() > limits.max_stream_id_bytes {
        return Err(ValidationError::InvalidStreamId { stream_id: shown(), reason: "too long" });
    }
    if stream_id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ValidationError::InvalidStreamId {
            stream_id: shown(),
            reason: "must not contain whitespace or control characters",
        });
    }
    Ok(())
}

/// Validate one stream's append and serialize its events. Takes the append: each event moves
/// into its prepared form (a bulk load queues many thousands; a copy of each would double the
/// memory they take).
pub(crate) fn prepare(append: StreamAppend, limits: &Limits) -> Result<Vec<PreparedEvent>, ValidationError> {
    check_stream_id(&append.stream_id, limits)?;
    if append.events.is_empty() {
        return Err(ValidationError::NoEvents);
    }
    if append.events.len() > limits.max_events_per_append {
        return Err(ValidationError::TooManyEvents { max: limits.max_events_per_append, got: append.events.len() });
    }
    let mut seen = HashSet::with_capacity(append.events.len());
    let mut out = Vec::with_capacity(append.events.len());
    for e in append.events {
        if e.event_id.is_nil() {
            return Err(ValidationError::NilEventId);
        }
        if !seen.insert(e.event_id) {
            return Err(ValidationError::DuplicateEventId(e.event_id));
        }
        if !is_valid_event_type(&e.event_type) {
            return Err(ValidationError::InvalidEventType(e.event_type.chars().take(80).collect()));
        }
        if e.schema_version < 1 {
            return Err(ValidationError::InvalidSchemaVersion { event_id: e.event_id, got: e.schema_version });
        }
        if !e.payload.is_object() {
            return Err(ValidationError::PayloadNotObject { event_id: e.event_id, got: json_kind(&e.payload) });
        }
        if contains_nul(&e.payload) || metadata_has_nul(&e.metadata) {
            return Err(ValidationError::NulInJson { event_id: e.event_id });
        }
        if e.metadata.user_id.is_empty() {
            return Err(ValidationError::EmptyUserId { event_id: e.event_id });
        }
        // Serializing a Value cannot fail (string keys only), so no error path is lost here.
        let payload_json = serde_json::to_string(&e.payload).unwrap_or_default();
        if payload_json.len() > limits.max_payload_bytes {
            return Err(ValidationError::PayloadTooLarge {
                event_id: e.event_id,
                size: payload_json.len(),
                limit: limits.max_payload_bytes,
            });
        }
        let metadata_json = serde_json::to_string(&e.metadata).unwrap_or_default();
        out.push(PreparedEvent { event: e, payload_json, metadata_json });
    }
    Ok(out)
}

/// Validate a multi-stream append: each part, plus no stream and no event id twice. A part
/// with no events is a read guard (its expected version is checked, nothing is written to it),
/// allowed when another part has events.
pub(crate) fn prepare_all(appends: Vec<StreamAppend>, limits: &Limits) -> Result<PreparedAppend, ValidationError> {
    if appends.is_empty() {
        return Err(ValidationError::NoEvents);
    }
    let mut streams = HashSet::with_capacity(appends.len());
    let mut ids = HashSet::new();
    let mut out: PreparedAppend = Vec::with_capacity(appends.len());
    for a in appends {
        if !streams.insert(a.stream_id.clone()) {
            return Err(ValidationError::DuplicateStream(a.stream_id));
        }
        let (stream_id, expected) = (a.stream_id.clone(), a.expected);
        let events = if a.events.is_empty() {
            check_stream_id(&a.stream_id, limits)?;
            Vec::new()
        } else {
            let prepared = prepare(a, limits)?;
            for p in &prepared {
                if !ids.insert(p.event.event_id) {
                    return Err(ValidationError::DuplicateEventId(p.event.event_id));
                }
            }
            prepared
        };
        out.push(PreparedPart { stream_id, expected, events });
    }
    if out.iter().all(|p| p.events.is_empty()) {
        return Err(ValidationError::NoEvents);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_must_be_dotted_lower_case() {
        for ok in ["operation.started", "task.topic_completed", "signal.emitted", "a.b.c", "x1.y2"] {
            assert!(is_valid_event_type(ok), "{ok}");
        }
        for bad in [
            "",
            "operation",
            "Operation.started",
            "operation.Started",
            "operation..started",
            ".started",
            "operation.",
            "op-eration.started",
            "1op.started",
            "op.1started",
            "op.started ",
            "op.stärted",
        ] {
            assert!(!is_valid_event_type(bad), "{bad:?}");
        }
    }
}
