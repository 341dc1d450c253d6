//! An event as the engine would answer it for a planned selection, written straight to JSON:
//! the same keys in the same order, the same scalars (`recordedAt` as RFC 3339, ids hyphenated,
//! `payload` and `metadata` as their JSON).

use std::io::Write as _;

use agentlog_domain::envelope::RecordedEvent;
use async_graphql::http::WebSocketProtocols;

use super::plan::{EventField, Plan};

/// The text around each event of one subscription: the message up to the event, and after it.
pub struct Frame {
    head: Vec<u8>,
    tail: &'static [u8],
}

impl Frame {
    /// The `next` (graphql-transport-ws) or `data` (graphql-ws) message of subscription `id`.
    pub fn new(protocol: WebSocketProtocols, id: &str, plan: &Plan) -> Self {
        let kind = data_kind(protocol);
        let mut head = format!(r#"{{"type":"{kind}","id":"#).into_bytes();
        push_json(&mut head, id);
        head.extend_from_slice(br#","payload":{"data":{"#);
        push_json(&mut head, &plan.key);
        head.push(b':');
        Self { head, tail: b"}}}" }
    }

    /// The whole message around `event`'s JSON (from [`event_json`]).
    pub fn message(&self, event: &[u8]) -> String {
        let mut out = Vec::with_capacity(self.head.len() + event.len() + self.tail.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(event);
        out.extend_from_slice(self.tail);
        // Only JSON text was written.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// The type of a subscription's data message: `next` (graphql-transport-ws) or `data` (graphql-ws).
pub fn data_kind(protocol: WebSocketProtocols) -> &'static str {
    match protocol {
        WebSocketProtocols::GraphQLWS => "next",
        WebSocketProtocols::SubscriptionsTransportWS => "data",
    }
}

/// `e` as the JSON object `plan` selects.
pub fn event_json(out: &mut Vec<u8>, plan: &Plan, e: &RecordedEvent) {
    out.push(b'{');
    for (i, (key, field)) in plan.fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json(out, key);
        out.push(b':');
        match field {
            EventField::Position => push_int(out, e.position),
            EventField::EventId => push_quoted(out, e.event_id),
            EventField::StreamId => push_json(out, &e.stream_id),
            EventField::StreamVersion => push_int(out, e.stream_version),
            EventField::EventType => push_json(out, &e.event_type),
            EventField::SchemaVersion => push_int(out, i64::from(e.schema_version)),
            EventField::Payload => push_json(out, &e.payload),
            EventField::Metadata => push_json(out, &e.metadata),
            EventField::RootSourceId => push_quoted(out, e.metadata.chain.root_source_id),
            EventField::ParentNodeId => match e.metadata.chain.parent_node_id {
                Some(id) => push_quoted(out, id),
                None => out.extend_from_slice(b"null"),
            },
            EventField::UserId => push_json(out, &e.metadata.user_id),
            EventField::RecordedAt => push_json(out, &e.recorded_at.to_rfc3339()),
            EventField::Typename => out.extend_from_slice(br#""Event""#),
        }
    }
    out.push(b'}');
}

fn push_int(out: &mut Vec<u8>, n: i64) {
    let _ = write!(out, "{n}");
}

/// A value whose text needs no escaping (a UUID), quoted.
fn push_quoted(out: &mut Vec<u8>, v: impl std::fmt::Display) {
    let _ = write!(out, "\"{v}\"");
}

fn push_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Serialising what was deserialised (or built in memory) does not fail; `null` if it did.
    let mark = out.len();
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.truncate(mark);
        out.extend_from_slice(b"null");
    }
}
