//! The GraphQL schema: queries over the read models and the log, mutations for the domain's
//! commands, subscriptions over the log. Resolvers are thin: parse, call a use case or a
//! read-model query, map the result.

pub mod admin;
pub mod events;
pub mod operations;

use async_graphql::{Context, MergedObject, MergedSubscription, Schema};

use crate::{auth::Caller, error::ApiError, state::AppState};

/// All queries.
#[derive(MergedObject, Default)]
pub struct Query(events::EventsQuery, operations::OperationsQuery);

/// All mutations.
#[derive(MergedObject, Default)]
pub struct Mutation(operations::OperationsMutation, admin::AdminMutation);

/// All subscriptions.
#[derive(MergedSubscription, Default)]
pub struct Subscription(events::EventsSubscription);

/// The schema type.
pub type AppSchema = Schema<Query, Mutation, Subscription>;

/// Build the schema with the application state and limits.
pub fn build_schema(state: AppState) -> AppSchema {
    let limits = state.limits.clone();
    Schema::build(Query::default(), Mutation::default(), Subscription::default())
        .data(state)
        .limit_depth(limits.max_depth)
        .limit_complexity(limits.max_complexity)
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

/// The authenticated caller, or UNAUTHENTICATED.
pub fn caller<'a>(ctx: &Context<'a>) -> Result<&'a Caller, ApiError> {
    ctx.data_opt::<Caller>().ok_or(ApiError::Unauthenticated)
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
