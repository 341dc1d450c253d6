//! A websocket message over the answer-size bound, replaced by the same subscription's LIMIT
//! error (the engine's messages and the feed's alike).

use axum::extract::ws::Message;

/// A websocket message as sent, or, when it is larger than `max` bytes (a subscription's `next`
/// over the answer-size bound), the same subscription's `next` carrying a LIMIT error instead
/// of the payload: the subscription goes on, and the client learns what it did not get.
pub fn bounded_message(msg: Message, max: usize) -> Message {
    let Message::Text(text) = &msg else { return msg };
    if text.len() <= max {
        return msg;
    }
    let envelope: Option<Envelope> = serde_json::from_str(text.as_str()).ok();
    let (kind, id) = envelope.map_or((None, None), |e| (Some(e.kind), e.id));
    tracing::info!(bytes = text.len(), max, ?id, "a websocket message over the response limit was replaced by LIMIT");
    let message = format!(
        "this result is {} bytes, more than the {max} one answer may carry; it was not sent (select fewer fields, or read it with a query in pieces)",
        text.len()
    );
    let error = serde_json::json!({"message": message, "extensions": {"code": "LIMIT", "bytes": text.len()}});
    let body = serde_json::json!({
        "type": kind.unwrap_or_else(|| "next".into()),
        "id": id,
        "payload": {"data": null, "errors": [error]},
    });
    Message::text(body.to_string())
}

/// A websocket message's type and id (graphql-transport-ws and graphql-ws, either direction).
#[derive(serde::Deserialize)]
pub struct Envelope {
    /// `subscribe`, `next`, `complete`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The subscription's id, when the message has one.
    pub id: Option<String>,
}
