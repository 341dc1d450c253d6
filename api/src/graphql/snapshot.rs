//! A query reads the read models as of one moment: every resolver of a request whose
//! operations are all queries reads through one snapshot (`agentlog_projections::Snapshots`),
//! opened at the request's first read and ended with the request. An answer never shows half of
//! one append: a list and its nodes' steps, a row and its children, agree.
//!
//! Mutations read after their own write (they wait for the read models to include it), and
//! subscriptions read as each event arrives: both read the live read models, one query at a
//! time. The log's own fields (`events`) read the log, which only grows. An aggregate read from
//! its stream (`operation(id)`) is folded up to the snapshot's position (`request::as_of_request`).

use agentlog_projections::ReadDb;

use crate::state::AppState;

/// The read snapshot of a query request.
pub(crate) struct RequestSnapshot(pub ReadDb);

impl RequestSnapshot {
    /// A snapshot for a request of queries only (`admission` attaches it: an extension of its
    /// own would add a layer to every field's resolution).
    pub(crate) fn of(app: &AppState) -> Self {
        Self(app.snapshots.take())
    }
}
