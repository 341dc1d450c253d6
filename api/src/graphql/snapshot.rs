//! A query reads the read models as of one moment: every resolver of a request whose
//! operations are all queries reads through one snapshot (`agentlog_projections::Snapshots`),
//! opened at the request's first read and ended with the request. An answer never shows half of
//! one append: a list and its nodes' steps, a row and its children, agree.
//!
//! Mutations read after their own write (they wait for the read models to include it), and
//! subscriptions read as each event arrives: both read the live read models, one query at a
//! time. The log's own fields (`events`) read the log, which only grows. An aggregate read from
//! its stream (`operation(id)`) is folded up to the snapshot's position (`as_of_request`).

use agentlog_domain::{aggregate::Aggregate, envelope::RecordedEvent};
use agentlog_eventlog::{Loaded, fold_recorded};
use agentlog_projections::{ReadDb, committed_position};
use async_graphql::Context;

use super::request::app;
use crate::{error::ApiError, state::AppState};

/// The read snapshot of a query request.
pub(crate) struct RequestSnapshot(pub ReadDb);

impl RequestSnapshot {
    /// A snapshot for a request of queries only (`admission` attaches it: an extension of its
    /// own would add a layer to every field's resolution).
    pub(crate) fn of(app: &AppState) -> Self {
        Self(app.snapshots.take())
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
    // The stream went past the snapshot: its events up to `at`, a page at a time.
    let mut events = Vec::new();
    loop {
        let from = events.last().map_or(1, |e: &RecordedEvent| e.stream_version + 1);
        let page = store.read_stream(&loaded.stream_id, from, STREAM_PAGE).await?;
        let done = page.len() < STREAM_PAGE || page.last().is_some_and(|e| e.position > at);
        events.extend(page);
        if done {
            break;
        }
    }
    Ok(fold_recorded::<A>(&events, Some(at))?)
}

/// Events read at a time when a stream is folded to the request's moment.
const STREAM_PAGE: usize = 1_000;
