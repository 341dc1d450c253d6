//! The engine's one extension: admission, request durations, required variables and error
//! codes run as hooks of [`Hooks`], in that order.
//!
//! One extension, not one each: the engine runs every field's resolution through every
//! extension, a layer per extension and field even for one that only hooks the request. Three
//! layers fewer per field took a quarter off the server's CPU for the admin's analytics report
//! (3,628 buckets) and an operations page (BENCHMARKS.md, "Reads at size").

use std::sync::Arc;

use async_graphql::{
    Request, Response, ServerResult,
    extensions::{
        Extension, ExtensionContext, ExtensionFactory, NextExecute, NextPrepareRequest, NextRequest, NextSubscribe,
    },
};
use futures_util::stream::{BoxStream, StreamExt};

use super::{admission::Admission, durations::Durations, variables::RequiredVariables};
use crate::error::ErrorCodes;

/// The extension the schema is built with.
#[derive(Clone)]
pub struct Hooks(Arc<Admission>);

impl Hooks {
    /// Hooks admitting requests by `admission`.
    pub fn new(admission: Admission) -> Self {
        Self(Arc::new(admission))
    }
}

impl ExtensionFactory for Hooks {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(self.clone())
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for Hooks {
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        ErrorCodes::add(next.run(ctx).await)
    }

    fn subscribe<'s>(
        &self,
        ctx: &ExtensionContext<'_>,
        stream: BoxStream<'s, Response>,
        next: NextSubscribe<'_>,
    ) -> BoxStream<'s, Response> {
        next.run(ctx, stream).map(ErrorCodes::add).boxed()
    }

    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        // Admission first: it gives the request the parsed document the others read.
        let request = self.0.prepare(ctx, request)?;
        let mut request = Durations::prepare(request);
        RequiredVariables::check(&mut request)?;
        next.run(ctx, request).await
    }

    async fn execute(
        &self,
        ctx: &ExtensionContext<'_>,
        operation_name: Option<&str>,
        next: NextExecute<'_>,
    ) -> Response {
        Durations::executing(ctx);
        self.0.execute(ctx, next.run(ctx, operation_name)).await
    }
}
