//! The GraphQL schema: queries over the read models and the log, mutations for the domain's
//! commands, subscriptions over the log. Resolvers are thin: parse, call a use case or a
//! read-model query, map the result.

pub mod admin;
pub mod admission;
pub mod agents;
pub mod analytics;
pub mod budgets;
pub mod changes;
pub mod conversations;
pub mod cost;
pub mod events;
pub mod inbox;
pub mod operations;
pub mod raw_json;
pub mod sources;
pub mod tasks;
pub mod variables;

use agentlog_projections::page::{Page, PageRequest};
use async_graphql::{
    Context, Json, MergedObject, MergedSubscription, OutputType, Schema,
    connection::{Connection, Edge},
};
use serde::de::DeserializeOwned;

use crate::{auth::Caller, error::ApiError, state::AppState};

/// All queries.
#[derive(MergedObject, Default)]
pub struct Query(
    events::EventsQuery,
    operations::OperationsQuery,
    tasks::TasksQuery,
    inbox::InboxQuery,
    conversations::ConversationsQuery,
    agents::AgentsQuery,
    admin::AdminQuery,
    analytics::AnalyticsQueryRoot,
    admin::AdminQuery,
    budgets::BudgetsQuery,
);

/// All mutations.
#[derive(MergedObject, Default)]
pub struct Mutation(
    operations::OperationsMutation,
    tasks::TasksMutation,
    inbox::InboxMutation,
    conversations::ConversationsMutation,
    agents::AgentsMutation,
    sources::SourcesMutation,
    admin::AdminMutation,
    budgets::BudgetsMutation,
);

/// All subscriptions.
#[derive(MergedSubscription, Default)]
pub struct Subscription(events::EventsSubscription, changes::ChangesSubscription, conversations::DeltasSubscription);

/// The schema type.
pub type AppSchema = Schema<Query, Mutation, Subscription>;

/// Build the schema with the application state and limits.
pub fn build_schema(state: AppState) -> AppSchema {
    let limits = state.limits.clone();
    Schema::build(Query::default(), Mutation::default(), Subscription::default())
        .data(state)
        // Admission refuses a non-introspection document past `max_depth`; the engine's own
        // check only has to let introspection's allowance through.
        .limit_depth(limits.max_depth.max(limits.max_introspection_depth))
        .limit_complexity(limits.max_complexity)
        .extension(admission::Admission(limits.clone()))
        .extension(variables::RequiredVariables)
        .extension(crate::error::ErrorCodes)
        .finish()
}

/// The schema's SDL, as checked in at `api/schema.graphql`.
pub fn sdl() -> String {
    Schema::build(Query::default(), Mutation::default(), Subscription::default()).finish().sdl()
}

/// The application state of a request.
pub fn app<'a>(ctx: &Context<'a>) -> &'a AppState {
    // The schema is always built with the state (build_schema), so this cannot miss.
    ctx.data_unchecked::<AppState>()
}

/// One admitted subscription: counted server-wide and against its user until dropped.
pub struct Subscriber {
    _server: crate::metrics::SubscriberCount,
    _user: crate::quota::QuotaHold,
}

/// Count one more open subscription of `user`, or refuse it (LIMIT) when the user's or the
/// server's cap is reached.
pub fn admit_subscriber(state: &AppState, user: &str) -> Result<Subscriber, ApiError> {
    let per_user = state.limits.max_subscriptions_per_user;
    let user_hold = state.subscriptions.admit(user, per_user).ok_or_else(|| {
        ApiError::Limit(format!("you have {per_user} subscriptions open, the most one user may; close one first"))
    })?;
    let max = state.limits.max_subscriptions;
    let server = crate::metrics::SubscriberCount::admit(state.metrics.clone(), max).ok_or_else(|| {
        ApiError::Limit(format!("the server has {max} subscriptions open, its maximum; subscribe again later"))
    })?;
    Ok(Subscriber { _server: server, _user: user_hold })
}

/// A mutation payload's node, read from a read model when the client asks for it. The mutation
/// waited for its read models (bounded); when that wait timed out, a node that is not there
/// yet is answered as behind (UNAVAILABLE, with the positions), never NOT_FOUND: the command
/// was written.
pub async fn node_after<T>(
    ctx: &Context<'_>,
    position: i64,
    read: impl std::future::Future<Output = Result<T, ApiError>>,
) -> crate::error::GqlResult<T> {
    match read.await {
        Ok(node) => Ok(node),
        Err(e) => {
            let reached = app(ctx).runner.position();
            if reached < position { Err(ApiError::Behind { position, reached }.into()) } else { Err(e.into()) }
        }
    }
}

/// The authenticated caller, or UNAUTHENTICATED.
pub fn caller<'a>(ctx: &Context<'a>) -> Result<&'a Caller, ApiError> {
    ctx.data_opt::<Caller>().ok_or(ApiError::Unauthenticated)
}

/// A read-model page request from Relay arguments (`first` within limits, `after` opaque).
pub fn page_request(ctx: &Context<'_>, first: Option<i32>, after: Option<String>) -> Result<PageRequest, ApiError> {
    Ok(PageRequest::first(page_size(ctx, first)?).after(after))
}

/// A Relay connection over a read-model page, each row mapped to its GraphQL type.
pub fn connection<R, T: OutputType>(page: Page<R>, had_cursor: bool, node: impl Fn(R) -> T) -> Connection<String, T> {
    let mut c = Connection::new(had_cursor, page.has_next_page);
    c.edges.extend(page.items.into_iter().zip(page.cursors).map(|(row, cursor)| Edge::new(cursor, node(row))));
    c
}

/// A value as JSON for a `JSON` field.
pub fn json<T: serde::Serialize>(v: &T) -> Json<serde_json::Value> {
    Json(serde_json::to_value(v).unwrap_or_default())
}

/// The wire name of a serde unit enum value (`TaskStatus::Backlog` → `"backlog"`).
pub fn wire<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// Read a wire name (`"backlog"`) as its serde enum, or VALIDATION naming the field.
pub fn from_wire<T: DeserializeOwned>(field: &str, name: &str) -> Result<T, ApiError> {
    serde_json::from_value(serde_json::Value::String(name.to_string()))
        .map_err(|_| ApiError::validation(field, format!("`{name}` is not a known value")))
}

/// Decode a `JSON` argument into a domain type, or VALIDATION naming the field.
pub fn decode<T: DeserializeOwned>(field: &str, value: Json<serde_json::Value>) -> Result<T, ApiError> {
    serde_json::from_value(value.0).map_err(|e| ApiError::validation(field, e.to_string()))
}

/// A page size within limits.
pub fn page_size(ctx: &Context<'_>, first: Option<i32>) -> Result<usize, ApiError> {
    let max = app(ctx).limits.max_page_size;
    match first {
        None => Ok(50.min(max)),
        Some(n) if n < 0 => Err(ApiError::validation("first", "must not be negative")),
        Some(n) if n as usize > max => Err(ApiError::Limit(format!("first may be at most {max}"))),
        Some(n) => Ok(n as usize),
    }
}
