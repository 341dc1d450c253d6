//! A subscriber following the whole log with `events(fromPosition)` over graphql-transport-ws.
//! When the connection drops (the server restarts), it reconnects and resumes from the last
//! position it saw — the server's promise is that it then misses nothing and sees nothing twice;
//! the subscriber keeps every position it saw so a checker can hold the server to that.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::{
    net::TcpStream,
    sync::{mpsc, watch},
};
use tokio_tungstenite::{
    MaybeTlsStream, WebSocketStream,
    tungstenite::{Message, client::IntoClientRequest, http::HeaderValue, protocol::WebSocketConfig},
};

use crate::report::SubscriberReport;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

const QUERY: &str = "subscription($p: Int) { events(fromPosition: $p) { position recordedAt } }";
/// What a subscriber reads of a server message.
#[derive(Deserialize)]
struct Incoming {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    payload: Option<IncomingPayload>,
}

#[derive(Deserialize, Default)]
struct IncomingPayload {
    #[serde(default)]
    data: Option<IncomingData>,
    #[serde(default)]
    errors: Option<Value>,
}

#[derive(Deserialize)]
struct IncomingData {
    events: Option<IncomingEvent>,
}

#[derive(Deserialize)]
struct IncomingEvent {
    position: Option<i64>,
    #[serde(rename = "recordedAt")]
    recorded_at: Option<String>,
}

/// Most error messages kept in a report.
const MAX_ERRORS: usize = 20;

/// When to stop: once the subscriber has seen `head`, or at `give_up` in any case.
#[derive(Debug, Clone, Copy)]
pub struct Stop {
    /// The log's head when the load ended.
    pub head: i64,
    /// The latest moment to stop.
    pub give_up: Instant,
}

/// How one subscriber reads.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Follow the log after this position (0: from the start).
    pub from: i64,
    /// Wait this long after each message before reading the next (a slow client: the server
    /// must neither wait for it nor drop what it has not yet read).
    pub delay: Duration,
}

/// Follow the log after `pace.from` until told to stop (see [`Stop`]). Sends on `subscribed`
/// once its first subscription is sent, so the load can start when every subscriber listens.
pub async fn follow(
    url: String,
    token: String,
    pace: Pace,
    subscribed: mpsc::UnboundedSender<()>,
    mut stop: watch::Receiver<Option<Stop>>,
) -> SubscriberReport {
    let mut report = SubscriberReport { slow: !pace.delay.is_zero(), ..SubscriberReport::default() };
    // Deliveries are timed for events recorded once this subscriber's subscription was sent
    // (live ones), not for the history it reads first, nor for what was appended while it
    // was still connecting (that is connection set-up, not delivery).
    let mut began: Option<chrono::DateTime<chrono::Utc>> = None;
    let mut last = pace.from;
    let finished = |stop: &watch::Receiver<Option<Stop>>, last: i64| {
        stop.borrow().as_ref().is_some_and(|s| last >= s.head || Instant::now() >= s.give_up)
    };
    'connect: while !finished(&stop, last) {
        let mut socket = match connect(&url, &token, last).await {
            Ok(s) => s,
            Err(e) => {
                report.connect_failures += 1;
                tracing::debug!(error = %e, "subscriber cannot connect");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if began.is_none() {
            began = Some(chrono::Utc::now());
            let _ = subscribed.send(());
        }
        // One timer for the connection (not one per message): it bounds how long a quiet
        // subscriber takes to notice the stop.
        let mut check = tokio::time::interval(Duration::from_millis(250));
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                message = socket.next() => {
                    let text = match message {
                        Some(Ok(Message::Text(t))) => t,
                        Some(Ok(Message::Close(frame))) => { note(&mut report, format!("closed by the server: {frame:?}")); break }
                        Some(Err(e)) => { note(&mut report, format!("connection lost: {e}")); break }
                        None => { note(&mut report, "connection ended".into()); break }
                        Some(Ok(_)) => continue,
                    };
                    // Typed: a thousand subscribers on the server's machine parse every event.
                    let incoming: Incoming = match serde_json::from_str(text.as_str()) {
                        Ok(v) => v,
                        Err(e) => { note(&mut report, format!("an unexpected message ({e}): {}", text.as_str())); break }
                    };
                    match incoming.kind.as_str() {
                        "next" => {
                            let payload = incoming.payload.unwrap_or_default();
                            if let Some(errors) = payload.errors {
                                note(&mut report, format!("subscription error: {errors}"));
                                break;
                            }
                            let event = payload.data.and_then(|d| d.events);
                            let Some(position) = event.as_ref().and_then(|e| e.position) else {
                                note(&mut report, format!("an event without a position: {}", text.as_str()));
                                break;
                            };
                            if position <= last {
                                report.duplicates += 1;
                            } else {
                                last = position;
                                report.events += 1;
                                report.positions.push(position);
                                let recorded = event.as_ref().and_then(|e| e.recorded_at.as_deref());
                                if let Some(us) = began.and_then(|b| delivery_us(recorded?, b)) {
                                    report.delivery_us.push(us);
                                }
                            }
                            if finished(&stop, last) { break 'connect }
                            if !pace.delay.is_zero() { tokio::time::sleep(pace.delay).await }
                        }
                        "ping" => { let _ = socket.send(Message::text(json!({"type": "pong"}).to_string())).await; }
                        "error" | "complete" => { note(&mut report, format!("subscription ended: {}", text.as_str())); break }
                        _ => {}
                    }
                }
                changed = stop.changed() => {
                    if changed.is_err() || finished(&stop, last) { break 'connect }
                }
                _ = check.tick() => {
                    if finished(&stop, last) { break 'connect }
                }
            }
        }
        report.disconnects += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    report.last_position = last;
    report.caught_up = stop.borrow().as_ref().is_some_and(|s| last >= s.head);
    report
}

/// Microseconds from an event's `recordedAt` to now (its arrival here, before this subscriber
/// pauses), for an event recorded at or after `began`; the server and this client share the
/// machine's clock.
fn delivery_us(recorded_at: &str, began: chrono::DateTime<chrono::Utc>) -> Option<u64> {
    let recorded = chrono::DateTime::parse_from_rfc3339(recorded_at).ok()?.with_timezone(&chrono::Utc);
    if recorded < began {
        return None;
    }
    let took = chrono::Utc::now().signed_duration_since(recorded).num_microseconds()?;
    Some(u64::try_from(took).unwrap_or(0))
}

fn note(report: &mut SubscriberReport, error: String) {
    tracing::debug!(%error, "subscriber");
    if report.errors.len() < MAX_ERRORS {
        report.errors.push(error);
    }
}

/// Connect, initialise with the token and subscribe from `from`.
async fn connect(url: &str, token: &str, from: i64) -> Result<Socket, String> {
    let mut request = url.into_client_request().map_err(|e| format!("websocket URL: {e}"))?;
    request.headers_mut().insert("Sec-WebSocket-Protocol", HeaderValue::from_static("graphql-transport-ws"));
    // In the upgrade request too: a socket known from the start takes none of the server's
    // few places for sockets without a token (many subscribers connect at once).
    let bearer = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| format!("token header: {e}"))?;
    request.headers_mut().insert("Authorization", bearer);
    // A small read buffer: tungstenite zeroes its free part before every read (128 KiB by
    // default), which for a thousand subscribers on this machine costs the server's CPU.
    let config = WebSocketConfig::default().read_buffer_size(4 * 1024);
    let connect = tokio_tungstenite::connect_async_with_config(request, Some(config), false);
    let (mut socket, _) = tokio::time::timeout(Duration::from_secs(5), connect)
        .await
        .map_err(|_| "websocket connect timed out".to_string())?
        .map_err(|e| format!("websocket connect: {e}"))?;
    let init = json!({"type": "connection_init", "payload": {"authorization": format!("Bearer {token}")}});
    socket.send(Message::text(init.to_string())).await.map_err(|e| format!("websocket init: {e}"))?;
    let ack = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .map_err(|_| "no connection_ack".to_string())?
        .ok_or("closed before connection_ack")?
        .map_err(|e| format!("websocket: {e}"))?;
    let acked = match &ack {
        Message::Text(t) => serde_json::from_str::<Value>(t.as_str()).is_ok_and(|v| v["type"] == "connection_ack"),
        _ => false,
    };
    if !acked {
        return Err(format!("expected connection_ack, got {ack:?}"));
    }
    let subscribe = json!({"id": "log", "type": "subscribe", "payload": {"query": QUERY, "variables": {"p": from}}});
    socket.send(Message::text(subscribe.to_string())).await.map_err(|e| format!("websocket subscribe: {e}"))?;
    Ok(socket)
}
