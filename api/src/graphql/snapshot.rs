//! A query reads the read models as of one moment: every resolver of a request whose
//! operations are all queries reads through one snapshot (`agentlog_projections::Snapshots`), opened at the
//! request's first read and ended with the request. An answer never shows half of one append:
//! an operation's status and its children, a list and its count, agree.
//!
//! Mutations read after their own write (they wait for the read models to include it), and
//! subscriptions read as each event arrives: both read the live read models, one query at a
//! time. The log's own fields (`events`) read the log, which only grows.

use std::sync::Arc;

use agentlog_projections::ReadDb;
use async_graphql::{
    Request, ServerResult,
    extensions::{Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest},
    parser::types::OperationType,
};

use crate::state::AppState;

/// The read snapshot of a query request.
pub(crate) struct RequestSnapshot(pub ReadDb);

/// The engine extension that gives each query request its snapshot (see the module docs).
pub struct QuerySnapshots;

impl ExtensionFactory for QuerySnapshots {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(QuerySnapshots)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for QuerySnapshots {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        let queries_only = request
            .parsed_query()
            .is_ok_and(|doc| doc.operations.iter().all(|(_, op)| op.node.ty == OperationType::Query));
        if queries_only && let Some(app) = ctx.data_opt::<AppState>() {
            request = request.data(RequestSnapshot(app.snapshots.take()));
        }
        next.run(ctx, request).await
    }
}
