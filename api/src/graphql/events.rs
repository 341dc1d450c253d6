//! The log itself: events with filters, causal chains, and a resumable subscription.

use std::sync::Arc;

use agentlog_domain::envelope::{EventMetadata, RecordedEvent};
use agentlog_eventlog::EventFilter;
use async_graphql::{
    Context, InputObject, Json, Object, Subscription,
    connection::{Connection, Edge},
};
use chrono::{DateTime, Utc};
use futures_util::{StreamExt, stream::BoxStream};
use uuid::Uuid;

use crate::auth::Caller;
use crate::error::{ApiError, GqlResult};
use crate::graphql::paging::page_request;
use crate::graphql::paging::page_size;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::subscribers::admit_subscriber;

/// One event of the log, as GraphQL serves it. Each field is read from the shared recorded
/// event only when a query selects it: a thousand subscribers asking for `position` cost no
/// payload copies.
#[derive(Clone)]
pub struct Event(pub Arc<RecordedEvent>);

/// One event of the log.
#[Object]
impl Event {
    /// Global order (strictly increasing; gaps possible).
    async fn position(&self) -> i64 {
        self.0.position
    }

    /// Unique id (UUID v7).
    async fn event_id(&self) -> Uuid {
        self.0.event_id
    }

    /// The aggregate instance's stream.
    async fn stream_id(&self) -> &str {
        &self.0.stream_id
    }

    /// 1, 2, 3 … within the stream.
    async fn stream_version(&self) -> i64 {
        self.0.stream_version
    }

    /// Dotted, past tense.
    async fn event_type(&self) -> &str {
        &self.0.event_type
    }

    /// Payload schema version.
    async fn schema_version(&self) -> i32 {
        self.0.schema_version
    }

    /// The payload.
    async fn payload(&self) -> Json<&serde_json::Value> {
        Json(&self.0.payload)
    }

    /// Chain, actor, owner, scope.
    async fn metadata(&self) -> Json<&EventMetadata> {
        Json(&self.0.metadata)
    }

    /// The source this chain started at.
    async fn root_source_id(&self) -> Uuid {
        self.0.metadata.chain.root_source_id
    }

    /// The direct cause (absent on a source).
    async fn parent_node_id(&self) -> Option<Uuid> {
        self.0.metadata.chain.parent_node_id
    }

    /// The owner.
    async fn user_id(&self) -> &str {
        &self.0.metadata.user_id
    }

    /// When the log recorded it.
    async fn recorded_at(&self) -> DateTime<Utc> {
        self.0.recorded_at
    }
}

impl From<RecordedEvent> for Event {
    fn from(e: RecordedEvent) -> Self {
        Self(Arc::new(e))
    }
}

/// Which events.
#[derive(InputObject, Default, Clone, Debug)]
pub struct EventFilterInput {
    /// Only these types (absent or empty: every type).
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
    caller_filter(caller(ctx)?, input)
}

/// [`log_filter`] for a known caller.
pub fn caller_filter(who: &Caller, input: Option<EventFilterInput>) -> Result<EventFilter, ApiError> {
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
    /// Events between positions (`after`, `before`: exclusive), oldest first: the `first` after
    /// `after`, or the `last` before `before`. The cursor is the position.
    #[graphql(complexity = "super::cost::log_read(last.or(first), 50, child_complexity)")]
    async fn events(
        &self,
        ctx: &Context<'_>,
        after: Option<String>,
        first: Option<i32>,
        filter: Option<EventFilterInput>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, Event>> {
        let filter = log_filter(ctx, filter)?;
        let request = page_request(ctx, first, after, last, before)?;
        let position = |field: &str, cursor: Option<&String>| {
            cursor
                .map(|c| c.parse::<i64>().map_err(|_| ApiError::validation(field, "must be a position cursor")))
                .transpose()
        };
        let after = position("after", request.after.as_ref())?;
        let before = position("before", request.before.as_ref())?;
        let size = request.size;
        let store = &app(ctx).store;
        let mut events = if request.backward {
            let mut back = store
                .read_all_back(after.unwrap_or(0), before.unwrap_or(i64::MAX), &filter, size + 1)
                .await
                .map_err(ApiError::from)?;
            back.reverse();
            back
        } else {
            let mut events = store.read_all(after.unwrap_or(0), &filter, size + 1).await.map_err(ApiError::from)?;
            events.retain(|e| before.is_none_or(|b| e.position < b));
            events
        };
        let more = events.len() > size;
        if request.backward {
            events.drain(..events.len().saturating_sub(size));
        } else {
            events.truncate(size);
        }
        // Past a cursor the request gave, is there any event at all (the true page flags)?
        let has_next = (more && !request.backward)
            || match before {
                Some(b) => !store.read_all(b.saturating_sub(1), &filter, 1).await.map_err(ApiError::from)?.is_empty(),
                None => false,
            };
        let has_previous = (more && request.backward)
            || match after {
                Some(a) => {
                    !store.read_all_back(0, a.saturating_add(1), &filter, 1).await.map_err(ApiError::from)?.is_empty()
                }
                None => false,
            };
        let mut connection = Connection::new(has_previous, has_next);
        connection.edges.extend(events.into_iter().map(|e| Edge::new(e.position.to_string(), Event::from(e))));
        Ok(connection)
    }

    /// The first `first` events (default and at most 500) of one causal chain, in log order: the
    /// source, the signals and actions it caused, the state changes and the notifications. A
    /// longer chain is read on with `events(filter: {rootSourceId}, after: …)`.
    #[graphql(complexity = "super::cost::log_read(first, 500, child_complexity)")]
    async fn chain(&self, ctx: &Context<'_>, root_source_id: Uuid, first: Option<i32>) -> GqlResult<Vec<Event>> {
        let filter =
            log_filter(ctx, Some(EventFilterInput { root_source_id: Some(root_source_id), ..Default::default() }))?;
        let first = page_size(ctx, first.or(Some(500)))?;
        let events = app(ctx).store.read_all(0, &filter, first).await.map_err(ApiError::from)?;
        Ok(events.into_iter().map(Event::from).collect())
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
    /// Every event after `fromPosition` (default 0, the start; negative: VALIDATION) that passes
    /// the filter: history first, then live. A
    /// client that reconnects with the last position it saw misses nothing and sees nothing twice.
    /// `settled`: each event comes once this server's read models include it (bounded by the
    /// read-your-writes wait), so a query sent on receiving it reads its effects.
    async fn events(
        &self,
        ctx: &Context<'_>,
        from_position: Option<i64>,
        filter: Option<EventFilterInput>,
        #[graphql(default)] settled: bool,
    ) -> BoxStream<'static, GqlResult<Event>> {
        let filter = match log_filter(ctx, filter) {
            Ok(f) => f,
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let state = app(ctx);
        let from = from_position.unwrap_or(0);
        if from < 0 {
            let e = ApiError::validation("fromPosition", "must not be negative");
            return futures_util::stream::once(async move { Err(e.into()) }).boxed();
        }
        let user = match caller(ctx) {
            Ok(c) => c.user_id.clone(),
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let counted = match admit_subscriber(state, &user) {
            Ok(c) => c,
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let settle = settled.then(|| state.clone());
        let stream = state.store.subscribe(from, filter).then(move |item| {
            let settle = settle.clone();
            async move {
                if let (Some(state), Ok(event)) = (&settle, &item) {
                    state.settle(event.position).await;
                }
                item
            }
        });
        let stream = stream.map(move |item| {
            let _alive = &counted;
            item.map(Event).map_err(|e| ApiError::from(e).into())
        });
        stream.boxed()
    }
}
