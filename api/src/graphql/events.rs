//! The log itself: events with filters, causal chains, and a resumable subscription.

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::EventFilter;
use async_graphql::{
    Context, InputObject, Json, Object, SimpleObject, Subscription,
    connection::{Connection, Edge},
};
use chrono::{DateTime, Utc};
use futures_util::{StreamExt, stream::BoxStream};
use uuid::Uuid;

use super::{app, caller, page_size};
use crate::{
    error::{ApiError, GqlResult},
    metrics::SubscriberCount,
};

/// One event of the log.
#[derive(SimpleObject, Clone)]
pub struct Event {
    /// Global order (strictly increasing; gaps possible).
    pub position: i64,
    /// Unique id (UUID v7).
    pub event_id: Uuid,
    /// The aggregate instance's stream.
    pub stream_id: String,
    /// 1, 2, 3 … within the stream.
    pub stream_version: i64,
    /// Dotted, past tense.
    pub event_type: String,
    /// Payload schema version.
    pub schema_version: i32,
    /// The payload.
    pub payload: Json<serde_json::Value>,
    /// Chain, actor, owner, scope.
    pub metadata: Json<serde_json::Value>,
    /// The source this chain started at.
    pub root_source_id: Uuid,
    /// The direct cause (absent on a source).
    pub parent_node_id: Option<Uuid>,
    /// The owner.
    pub user_id: String,
    /// When the log recorded it.
    pub recorded_at: DateTime<Utc>,
}

impl From<&RecordedEvent> for Event {
    fn from(e: &RecordedEvent) -> Self {
        Self {
            position: e.position,
            event_id: e.event_id,
            stream_id: e.stream_id.clone(),
            stream_version: e.stream_version,
            event_type: e.event_type.clone(),
            schema_version: e.schema_version,
            payload: Json(e.payload.clone()),
            metadata: Json(serde_json::to_value(&e.metadata).unwrap_or_default()),
            root_source_id: e.metadata.chain.root_source_id,
            parent_node_id: e.metadata.chain.parent_node_id,
            user_id: e.metadata.user_id.clone(),
            recorded_at: e.recorded_at,
        }
    }
}

/// Which events.
#[derive(InputObject, Default, Clone)]
pub struct EventFilterInput {
    /// Only these types.
    pub event_types: Option<Vec<String>>,
    /// Only streams starting with this.
    pub stream_prefix: Option<String>,
    /// Only this chain.
    pub root_source_id: Option<Uuid>,
    /// Only this owner (admins only; users always see only their own).
    pub user_id: Option<String>,
}

/// Turn an input filter into a log filter, forcing a non-admin onto their own events.
pub fn log_filter(ctx: &Context<'_>, input: Option<EventFilterInput>) -> Result<EventFilter, ApiError> {
    let who = caller(ctx)?;
    let input = input.unwrap_or_default();
    let types = input.event_types.unwrap_or_default();
    if types.len() > 100 {
        return Err(ApiError::Limit("at most 100 event types per filter".into()));
    }
    let mut filter = EventFilter::types(types);
    filter.stream_prefix = input.stream_prefix;
    filter.root_source_id = input.root_source_id;
    filter.user_id = match (who.admin, input.user_id) {
        (true, u) => u,
        (false, Some(u)) if u != who.user_id => {
            return Err(ApiError::Forbidden("you may only read your own events".into()));
        }
        (false, _) => Some(who.user_id.clone()),
    };
    Ok(filter)
}

/// Queries over the log.
#[derive(Default)]
pub struct EventsQuery;

#[Object]
impl EventsQuery {
    /// Events after a position (exclusive), oldest first. The cursor is the position.
    async fn events(
        &self,
        ctx: &Context<'_>,
        after: Option<String>,
        first: Option<i32>,
        filter: Option<EventFilterInput>,
    ) -> GqlResult<Connection<String, Event>> {
        let filter = log_filter(ctx, filter)?;
        let first = page_size(ctx, first)?;
        let after: i64 = match after {
            None => 0,
            Some(a) => a.parse().map_err(|_| ApiError::validation("after", "must be a position cursor"))?,
        };
        let state = app(ctx);
        let mut events = state.store.read_all(after, &filter, first + 1).await.map_err(ApiError::from)?;
        let has_next = events.len() > first;
        events.truncate(first);
        let mut connection = Connection::new(after > 0, has_next);
        connection.edges.extend(events.iter().map(|e| Edge::new(e.position.to_string(), Event::from(e))));
        Ok(connection)
    }

    /// Every event of one causal chain, in log order: the source, the signals and actions it
    /// caused, the state changes and the notifications.
    async fn chain(&self, ctx: &Context<'_>, root_source_id: Uuid, first: Option<i32>) -> GqlResult<Vec<Event>> {
        let filter =
            log_filter(ctx, Some(EventFilterInput { root_source_id: Some(root_source_id), ..Default::default() }))?;
        let first = page_size(ctx, first.or(Some(500)))?;
        let events = app(ctx).store.read_all(0, &filter, first).await.map_err(ApiError::from)?;
        Ok(events.iter().map(Event::from).collect())
    }

    /// The highest committed position.
    async fn head_position(&self, ctx: &Context<'_>) -> GqlResult<i64> {
        caller(ctx)?;
        Ok(app(ctx).store.head_position().await.map_err(ApiError::from)?)
    }
}

/// Subscriptions over the log.
#[derive(Default)]
pub struct EventsSubscription;

#[Subscription]
impl EventsSubscription {
    /// Every event after `fromPosition` that passes the filter: history first, then live. A
    /// client that reconnects with the last position it saw misses nothing and sees nothing twice.
    async fn events(
        &self,
        ctx: &Context<'_>,
        from_position: Option<i64>,
        filter: Option<EventFilterInput>,
    ) -> BoxStream<'static, GqlResult<Event>> {
        let filter = match log_filter(ctx, filter) {
            Ok(f) => f,
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let state = app(ctx);
        let from = from_position.unwrap_or(0).max(0);
        let counted = SubscriberCount::new(state.metrics.clone());
        let stream = state.store.subscribe(from, filter).map(move |item| {
            let _alive = &counted;
            item.map(|e| Event::from(&*e)).map_err(|e| ApiError::from(e).into())
        });
        stream.boxed()
    }
}
