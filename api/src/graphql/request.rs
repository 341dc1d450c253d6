//! What a resolver reads from its request: the application, the read models, the caller, a
//! mutation's node once its read models caught up, and an aggregate read from its stream as of
//! the request's moment.

use agentlog_domain::aggregate::Aggregate;
use agentlog_eventlog::{Loaded, fold_stream};
use agentlog_projections::{ReadDb, committed_position};
use async_graphql::Context;

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

/// `loaded` (an aggregate as its stream holds it now) as of the request's moment: in a request
/// of queries, its stream folded up to the position the snapshot's read model `projection` has
/// applied when the stream has gone past it, so the aggregate's own fields agree with the rows
/// read beside it (an operation's status with its children, steps and cards); outside one
/// (mutations, which waited for their read models; subscriptions), as it is. Answers the
/// state and its stream version; version 0: the stream did not exist at that moment.
pub(crate) async fn as_of_request<A: Aggregate>(
    ctx: &Context<'_>,
    loaded: Loaded<A>,
    projection: &str,
) -> Result<(A, i64), ApiError> {
    let Some(snapshot) = ctx.data_opt::<RequestSnapshot>() else { return Ok((loaded.state, loaded.version)) };
    if loaded.version == 0 {
        return Ok((loaded.state, 0));
    }
    let at = committed_position(&snapshot.0, projection).await?;
    let store = &app(ctx).store;
    let last = store.read_stream(&loaded.stream_id, loaded.version, 1).await?;
    if last.first().is_none_or(|e| e.position <= at) {
        return Ok((loaded.state, loaded.version));
    }
    // The stream went past the snapshot: folded up to `at`, a page at a time.
    Ok(fold_stream::<A>(store.as_ref(), &loaded.stream_id, Some(at)).await?)
}

/// The use cases for the field being resolved, as its caller, with the request's digest
/// ([`request_digest`]) for a `requestId` it carries.
pub fn commands<'a>(ctx: &Context<'a>) -> Result<crate::commands::Commands<'a>, ApiError> {
    Ok(crate::commands::Commands::new(app(ctx), caller(ctx)?).with_request_digest(request_digest(ctx)))
}

/// A digest of the field being resolved: its name and its arguments but `requestId`, as
/// canonical JSON (keys sorted), SHA-256, 32 hex digits. Two sends of one request match; the
/// same `requestId` on another mutation or with other arguments does not.
pub fn request_digest(ctx: &Context<'_>) -> Option<String> {
    use sha2::{Digest, Sha256};
    let field = ctx.field();
    let arguments = field.arguments().ok()?;
    let mut canonical = serde_json::Map::new();
    for (name, value) in arguments {
        if name.as_str() != "requestId" {
            canonical.insert(name.to_string(), value.into_json().ok()?);
        }
    }
    let text = format!("{}\u{0}{}", field.name(), serde_json::Value::Object(canonical));
    let digest = Sha256::digest(text.as_bytes());
    Some(digest.iter().take(16).map(|b| format!("{b:02x}")).collect())
}
