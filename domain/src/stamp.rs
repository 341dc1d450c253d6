//! How decided events become [`NewEvent`]s: ids, chain, scope key and owner from a
//! [`Context`] (the chain rule and the id rule are described in [`crate::context`]).
//!
//! Kept apart from `context` so that `aggregate` (which names `Context` in its traits) and this
//! module (which needs the `Aggregate` trait to evolve state while stamping) form no circle.

use uuid::Uuid;

use crate::aggregate::{Aggregate, DomainEvent, StreamEvents};
use crate::context::{Cause, Context};
use crate::envelope::{Chain, EventMetadata, NewEvent};
use crate::ids::derived_id;

impl Context {
    /// A stamper for a decision that may write several streams.
    pub fn stamper(&self) -> Stamper<'_> {
        Stamper { ctx: self, next_index: 0, source_node: None }
    }
}

/// Stamps decided events with ids, chain, scope and owner, across all streams of one decision.
#[derive(Debug)]
pub struct Stamper<'a> {
    ctx: &'a Context,
    next_index: u32,
    source_node: Option<(Uuid, String)>,
}

/// An idempotency key within `owner`'s ids.
pub fn owned_key(owner: &str, key: &str) -> String {
    format!("{owner}\u{0}{key}")
}

impl Stamper<'_> {
    /// Stamp `events` decided on `state` (the state before them). Each event's scope key comes
    /// from the state after it, so a creating event already knows its topic or task.
    pub fn stamp<A: Aggregate>(&mut self, state: &A, events: &[A::Event]) -> Vec<NewEvent> {
        self.stamp_owned(state.clone(), events).1
    }

    /// [`stamp`](Self::stamp) for a caller that keeps the state: takes it and returns it after
    /// `events` beside their stamps, so each event is evolved once and the state never cloned.
    pub fn stamp_owned<A: Aggregate>(
        &mut self,
        state: A,
        events: &[A::Event],
    ) -> (A, Vec<NewEvent>) {
        let mut current = state;
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            current = current.evolve(event);
            let event_id = self.event_id(event, A::KIND.per_owner());
            let scope_key = current.scope_key(&self.ctx.user_id);
            let chain = self.chain_for(event_id);
            let metadata = EventMetadata {
                causation_id: chain.parent_node_id,
                chain,
                correlation_id: self.ctx.correlation_id.clone(),
                scope_key,
                actor: self.ctx.actor.clone(),
                user_id: self.ctx.user_id.clone(),
                request_digest: self.ctx.request_digest.clone(),
            };
            out.push(
                NewEvent::new(event_id, event.event_type(), event.to_payload(), metadata)
                    .with_schema_version(event.schema_version()),
            );
        }
        (current, out)
    }

    /// Stamp one stream's part of a multi-stream decision; `state` is that stream's state.
    pub fn write<A: Aggregate>(&mut self, state: &A, part: &StreamEvents<A::Event>) -> StreamWrite {
        StreamWrite { stream_id: part.stream_id.clone(), events: self.stamp(state, &part.events) }
    }

    /// An event's id: from its idempotency key when it has one (within its owner's ids for a
    /// kind whose ids are per owner: two users' job `j1` fire apart), else from the command.
    fn event_id<E: DomainEvent>(&mut self, event: &E, per_owner: bool) -> Uuid {
        let index = self.next_index;
        self.next_index += 1;
        match event.idempotency_key() {
            Some(key) if per_owner => {
                derived_id(event.event_type(), &owned_key(&self.ctx.user_id, &key), 0)
            }
            Some(key) => derived_id(event.event_type(), &key, 0),
            None => self.ctx.nth_event_id(index),
        }
    }

    fn chain_for(&mut self, event_id: Uuid) -> Chain {
        match &self.ctx.cause {
            Cause::Event { event_id: parent, root_source_id, chain_id } => Chain {
                chain_id: chain_id.clone(),
                root_source_id: *root_source_id,
                parent_node_id: Some(*parent),
            },
            Cause::Source { chain_id } => match &self.source_node {
                Some((source, source_chain)) => Chain {
                    chain_id: source_chain.clone(),
                    root_source_id: *source,
                    parent_node_id: Some(*source),
                },
                None => {
                    let mut chain = Chain::source(event_id);
                    if let Some(given) = chain_id {
                        chain.chain_id = given.clone();
                    }
                    self.source_node = Some((event_id, chain.chain_id.clone()));
                    chain
                }
            },
        }
    }
}

/// Stamped events for one stream; the handler adds the expected version and appends all
/// writes of a decision atomically (`append_multi`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamWrite {
    /// The stream.
    pub stream_id: String,
    /// Its new events.
    pub events: Vec<NewEvent>,
}

/// Stamp the events of a single-stream decision.
pub fn stamp<A: Aggregate>(state: &A, events: &[A::Event], ctx: &Context) -> Vec<NewEvent> {
    ctx.stamper().stamp(state, events)
}

#[cfg(test)]
mod tests;
