//! What a resolver reads from its request: the application, the read models, the caller, and
//! a mutation's node once its read models caught up.

use async_graphql::Context;

use agentlog_projections::ReadDb;

use super::snapshot::RequestSnapshot;
use crate::{auth::Caller, error::ApiError, state::AppState};

/// The application state of a request.
pub fn app<'a>(ctx: &Context<'a>) -> &'a AppState {
    // The schema is always built with the state (build_schema), so this cannot miss.
    ctx.data_unchecked::<AppState>()
}

/// The read models as a resolver reads them: a query request's snapshot (`snapshot`), else
/// the live read models.
pub fn reads<'a>(ctx: &Context<'a>) -> &'a ReadDb {
    ctx.data_opt::<RequestSnapshot>().map_or(&app(ctx).db, |s| &s.0)
}

/// The authenticated caller, or UNAUTHENTICATED.
pub fn caller<'a>(ctx: &Context<'a>) -> Result<&'a Caller, ApiError> {
    ctx.data_opt::<Caller>().ok_or(ApiError::Unauthenticated)
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
