//! The `messageDeltas` subscription: a topic's streamed partial content, live.

use async_graphql::{Context, Subscription};
use futures_util::{StreamExt, stream::BoxStream};
use tokio::sync::broadcast::error::RecvError;

use super::conversations::conversation_node;
use crate::deltas::MessageDelta;
use crate::error::GqlResult;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::subscribers::admit_subscriber;

/// Live partial content.
#[derive(Default)]
pub struct DeltasSubscription;

#[Subscription]
impl DeltasSubscription {
    /// Partial content of the topic's messages as workers write them: first a snapshot of each
    /// message being written, then every delta; `done` when the finished message was appended.
    /// A subscriber that falls behind gets fresh snapshots instead of the deltas it missed.
    /// With PostgreSQL, deltas published to any server instance on the database; with SQLite,
    /// those published to this process.
    async fn message_deltas(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> BoxStream<'static, GqlResult<MessageDelta>> {
        let owner = match conversation_node(ctx, owner_id.as_deref(), &topic_id).await {
            Ok(c) => c.user_id,
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let hub = app(ctx).deltas.clone();
        let user = match caller(ctx) {
            Ok(c) => c.user_id.clone(),
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let counted = match admit_subscriber(app(ctx), &user) {
            Ok(c) => c,
            Err(e) => return futures_util::stream::once(async move { Err(e.into()) }).boxed(),
        };
        let rx = hub.subscribe(&owner, &topic_id);
        let first = futures_util::stream::iter(hub.snapshots(&owner, &topic_id));
        let topic = (owner, topic_id);
        let live =
            futures_util::stream::unfold((rx, hub, topic, counted), |(mut rx, hub, topic, counted)| async move {
                let batch = match rx.recv().await {
                    Ok(d) => vec![d],
                    // Fell behind: what it missed is in the snapshots.
                    Err(RecvError::Lagged(_)) => hub.snapshots(&topic.0, &topic.1),
                    Err(RecvError::Closed) => return None,
                };
                Some((batch, (rx, hub, topic, counted)))
            })
            .flat_map(futures_util::stream::iter);
        first.chain(live).map(Ok).boxed()
    }
}
