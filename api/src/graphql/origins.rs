//! Why something exists: the event that created a node and its path of causes back to the
//! chain's root, so one query answers "why is this here?".

use async_graphql::{ComplexObject, Context, SimpleObject};

use super::events::Event;
use crate::error::{ApiError, GqlResult};
use crate::graphql::request::app;
use crate::graphql::request::caller;

/// Why something exists: the event that created it and the causes that led to it.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct Origin {
    /// The event that created it.
    pub event: Event,
}

#[ComplexObject]
impl Origin {
    /// Its causes, from the chain's root source to the event that created it (both included),
    /// following each event's `parentNodeId`.
    #[graphql(complexity = "super::cost::once(super::cost::ORIGIN, child_complexity)")]
    async fn path(&self, ctx: &Context<'_>) -> GqlResult<Vec<Event>> {
        Ok(path_of(ctx, &self.event.0).await?)
    }
}

/// The most events of one chain read to explain an origin.
const MAX_CHAIN_EVENTS: usize = 5_000;

/// The origin of the aggregate whose stream is `stream_id`: its first event (its path of causes
/// back to its chain's root is read when asked for).
pub async fn origin(ctx: &Context<'_>, stream_id: &str) -> Result<Option<Origin>, ApiError> {
    let first = app(ctx).store.read_stream(stream_id, 1, 1).await?.into_iter().next();
    origin_of(ctx, first)
}

/// The origin of what the event at `position` created (a notification: its stream holds many).
pub async fn origin_at(ctx: &Context<'_>, position: i64) -> Result<Option<Origin>, ApiError> {
    if position < 1 {
        return Ok(None);
    }
    let filter = agentlog_eventlog::EventFilter::default();
    let event = app(ctx).store.read_all(position - 1, &filter, 1).await?.into_iter().next();
    origin_of(ctx, event.filter(|e| e.position == position))
}

/// `first`, when the caller may see it.
fn origin_of(
    ctx: &Context<'_>,
    first: Option<agentlog_domain::envelope::RecordedEvent>,
) -> Result<Option<Origin>, ApiError> {
    let Some(first) = first else { return Ok(None) };
    if !caller(ctx)?.may_see(&first.metadata.user_id) {
        return Ok(None);
    }
    Ok(Some(Origin { event: Event::from(first) }))
}

/// `first`'s path of causes back to its chain's root, oldest first, `first` last.
async fn path_of(ctx: &Context<'_>, first: &agentlog_domain::envelope::RecordedEvent) -> Result<Vec<Event>, ApiError> {
    // Only the origin owner's events: a chain never crosses owners, and should an event name
    // another user's as its parent, the path stops there rather than show it.
    let filter = agentlog_eventlog::EventFilter {
        root_source_id: Some(first.metadata.chain.root_source_id),
        user_id: Some(first.metadata.user_id.clone()),
        ..Default::default()
    };
    let chain = app(ctx).store.read_all(0, &filter, MAX_CHAIN_EVENTS).await?;
    let by_id: std::collections::HashMap<uuid::Uuid, &agentlog_domain::envelope::RecordedEvent> =
        chain.iter().map(|e| (e.event_id, e)).collect();
    let mut path = vec![first.clone()];
    let mut at = first.metadata.chain.parent_node_id;
    while let Some(id) = at {
        let Some(parent) = by_id.get(&id) else { break };
        if path.len() > MAX_CHAIN_EVENTS {
            break;
        }
        path.push((*parent).clone());
        at = parent.metadata.chain.parent_node_id;
    }
    path.reverse();
    Ok(path.into_iter().map(Event::from).collect())
}
