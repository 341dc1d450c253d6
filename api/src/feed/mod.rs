//! The log's `events` subscription served beside the GraphQL engine.
//!
//! Through the engine every event costs each subscriber a full execution: a context, the
//! extensions' hooks, a resolver call per field, a response tree, its serialisation. With a
//! thousand subscribers that was most of the server's CPU (RELIABILITY.md, "1,000 subscribers").
//! The feed takes the subscribe messages it can answer exactly as the engine would (a plain
//! selection of `Event` fields, [`plan`]) and writes each event's message straight from the
//! recorded event ([`render`]), rendered once per selection for all its subscribers ([`shared`]);
//! everything else — other subscriptions, queries over the socket, errors, the handshake and
//! pings — still goes to the engine, which never sees the fed ones.
//!
//! Per connection: [`Intercept`] sees every client message before the engine does, and [`Fed`]
//! gives the socket's writer the fed subscriptions' messages beside the engine's.
//! Semantics match the engine's: the same admission (the caller's filter, the subscription caps),
//! a repeated id replaces the subscription that had it, a client's `complete` is answered with
//! `complete`, a subscription that ends (its stream failed) sends the error and `complete`.

pub mod plan;
pub mod render;
pub mod shared;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, OnceLock},
};

use agentlog_eventlog::EventLogError;
use async_graphql::{PathSegment, http::WebSocketProtocols};
use axum::extract::ws::Message;
use futures_util::{
    StreamExt,
    stream::{self, AbortHandle, BoxStream, SelectAll},
};
use tokio::sync::mpsc;

use crate::{
    auth::Caller,
    error::{ApiError, add_code},
    graphql::{events::caller_filter, subscribers::admit_subscriber},
    oversized::{Envelope, bounded_message},
    state::AppState,
};
use plan::Plan;
use render::Frame;

/// What the intercept asks of [`Fed`].
pub enum Command {
    /// Serve subscription `id` with these messages (replacing one with the same id).
    Start { id: String, messages: BoxStream<'static, Message> },
    /// End subscription `id`; `answer`: send `complete` (the client asked).
    Stop { id: String, answer: bool },
}

/// One connection's view of the client's messages, ahead of the engine.
pub struct Intercept {
    state: AppState,
    renders: Arc<shared::Renders>,
    protocol: WebSocketProtocols,
    /// Set once `connection_init` is accepted: before that every message is the engine's.
    caller: Arc<OnceLock<Caller>>,
    commands: mpsc::UnboundedSender<Command>,
    /// Ids the feed took (some may have ended since).
    fed: HashSet<String>,
    /// Ids handed to the engine that the client has not completed: the engine decides what a
    /// repeat of one means.
    engine: HashSet<String>,
}

impl Intercept {
    /// The intercept of one connection, and the receiver [`Fed`] takes.
    pub fn new(
        state: AppState,
        renders: Arc<shared::Renders>,
        protocol: WebSocketProtocols,
        caller: Arc<OnceLock<Caller>>,
    ) -> (Self, mpsc::UnboundedReceiver<Command>) {
        let (commands, receiver) = mpsc::unbounded_channel();
        let intercept =
            Self { state, renders, protocol, caller, commands, fed: HashSet::new(), engine: HashSet::new() };
        (intercept, receiver)
    }

    /// Whether the feed took `message` (then the engine must not see it).
    pub fn take(&mut self, message: &Message) -> bool {
        let bytes: &[u8] = match message {
            Message::Text(text) => text.as_bytes(),
            Message::Binary(bytes) => bytes,
            _ => return false,
        };
        let Ok(envelope) = serde_json::from_slice::<Envelope>(bytes) else { return false };
        let Some(id) = envelope.id else { return false };
        match envelope.kind.as_str() {
            "subscribe" | "start" => self.subscribe(id, bytes),
            "complete" | "stop" => {
                if self.fed.remove(&id) {
                    let _ = self.commands.send(Command::Stop { id, answer: true });
                    true
                } else {
                    self.engine.remove(&id);
                    false
                }
            }
            _ => false,
        }
    }

    fn subscribe(&mut self, id: String, bytes: &[u8]) -> bool {
        let Some(caller) = self.caller.get() else { return false };
        if self.engine.contains(&id) {
            return false;
        }
        let planned = serde_json::from_slice::<plan::Subscribe>(bytes).ok().and_then(|s| plan::plan(&s.payload));
        // The caller's filter and the caps are checked as the engine checks them; when one
        // refuses, the engine answers (it refuses the same way, with its own error message).
        let admitted = planned.and_then(|plan| {
            let filter = caller_filter(caller, plan.filter.clone()).ok()?;
            let counted = admit_subscriber(&self.state, &caller.user_id).ok()?;
            Some((plan, filter, counted))
        });
        let Some((plan, filter, counted)) = admitted else {
            if self.fed.remove(&id) {
                // The engine replaces a subscription with the same id: end the fed one quietly.
                let _ = self.commands.send(Command::Stop { id: id.clone(), answer: false });
            }
            self.engine.insert(id);
            return false;
        };
        let frame = Frame::new(self.protocol, &id, &plan);
        let renders = Arc::clone(&self.renders);
        let selection = renders.selection(&plan);
        let from = plan.from_position.unwrap_or(0).max(0);
        let events = self.state.store.subscribe(from, filter);
        let events = if plan.settled {
            let state = self.state.clone();
            events
                .then(move |item| {
                    let state = state.clone();
                    async move {
                        if let Ok(event) = &item {
                            state.settle(event.position).await;
                        }
                        item
                    }
                })
                .boxed()
        } else {
            events
        };
        let protocol = self.protocol;
        let message_id = id.clone();
        let messages = events
            .map(move |item| {
                let _counted = &counted;
                let text = match item {
                    Ok(event) => frame.message(&renders.event(selection, &plan, &event)),
                    Err(e) => error_message(protocol, &message_id, &plan, e),
                };
                Message::Text(text.into())
            })
            .boxed();
        self.fed.insert(id.clone());
        let _ = self.commands.send(Command::Start { id, messages });
        true
    }
}

/// The protocol of a websocket upgrade, chosen as async-graphql-axum's `GraphQLProtocol` does:
/// the first one of `Sec-WebSocket-Protocol` the engine speaks.
pub fn protocol(headers: &axum::http::HeaderMap) -> Option<WebSocketProtocols> {
    let offered = headers.get(axum::http::header::SEC_WEBSOCKET_PROTOCOL)?.to_str().ok()?;
    offered.split(',').find_map(|p| p.trim().parse().ok())
}

/// The engine's message for a subscription whose stream failed: its error with the field's
/// place, path and code.
fn error_message(protocol: WebSocketProtocols, id: &str, plan: &Plan, e: EventLogError) -> String {
    let error: async_graphql::Error = ApiError::from(e).into();
    let mut error = error.into_server_error(plan.pos);
    error.path = vec![PathSegment::Field(plan.key.clone())];
    add_code(&mut error);
    let response = async_graphql::Response::from_errors(vec![error]);
    let kind = render::data_kind(protocol);
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
    let payload = serde_json::to_string(&response).unwrap_or_else(|_| "null".into());
    format!(r#"{{"type":"{kind}","id":{id},"payload":{payload}}}"#)
}

fn complete_message(id: &str) -> Message {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
    Message::Text(format!(r#"{{"type":"complete","id":{id}}}"#).into())
}

/// An item of a fed subscription: its id, which start of that id it belongs to, and a message
/// (`None`: the subscription ended).
type Tagged = (String, u64, Option<Message>);

/// The fed subscriptions of one connection: the socket's writer takes their messages with
/// [`Fed::next`] beside the engine's, so a fed event costs one poll of the connection and no
/// queue between them.
pub struct Fed {
    commands: mpsc::UnboundedReceiver<Command>,
    /// The intercept is gone (the engine's input ended): no more commands.
    closed: bool,
    live: SelectAll<BoxStream<'static, Tagged>>,
    current: HashMap<String, (u64, AbortHandle)>,
    starts: u64,
    max_bytes: usize,
}

impl Fed {
    /// Serve what the intercept sends on `commands`; each message bounded like the engine's
    /// (`max_bytes`).
    pub fn new(commands: mpsc::UnboundedReceiver<Command>, max_bytes: usize) -> Self {
        Self { commands, closed: false, live: SelectAll::new(), current: HashMap::new(), starts: 0, max_bytes }
    }

    /// The next message to send. Cancel-safe: nothing is taken across an await.
    pub async fn next(&mut self) -> Message {
        loop {
            tokio::select! {
                // A stop or a replacement is seen before more of what it ends.
                biased;
                command = self.commands.recv(), if !self.closed => match command {
                    None => self.closed = true,
                    Some(Command::Start { id, messages }) => self.start(id, messages),
                    Some(Command::Stop { id, answer }) => {
                        if let Some((_, handle)) = self.current.remove(&id) {
                            handle.abort();
                            if answer {
                                return complete_message(&id);
                            }
                        }
                    }
                },
                Some((id, start, item)) = self.live.next(), if !self.live.is_empty() => match item {
                    Some(message) => return bounded_message(message, self.max_bytes),
                    // Ended on its own (not stopped, not replaced): the client hears `complete`.
                    None if self.current.get(&id).is_some_and(|(s, _)| *s == start) => {
                        self.current.remove(&id);
                        return complete_message(&id);
                    }
                    None => {}
                },
                else => std::future::pending::<()>().await,
            }
        }
    }

    fn start(&mut self, id: String, messages: BoxStream<'static, Message>) {
        self.starts += 1;
        let start = self.starts;
        let (messages, handle) = stream::abortable(messages);
        if let Some((_, replaced)) = self.current.insert(id.clone(), (start, handle)) {
            replaced.abort();
        }
        let tag = id.clone();
        let tagged =
            messages.map(move |m| (tag.clone(), start, Some(m))).chain(stream::once(async move { (id, start, None) }));
        self.live.push(tagged.boxed());
    }
}
