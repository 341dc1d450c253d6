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
    /// A subscriber that falls behind gets fresh snapshots instead of the deltas it missed; no
    /// content is sent twice (a delta already in a snapshot sent is left out).
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
        // A delta already in a snapshot this subscriber got (published between its subscribing
        // and its snapshot, or still queued when it fell behind) is not sent again: a delta's
        // `length` is the content's after it, so one no longer than what was sent is in it.
        let sent_up_to = std::collections::HashMap::<String, i64>::new();
        first
            .chain(live)
            .scan(sent_up_to, |sent, d| futures_util::future::ready(Some(fresh(sent, &d).then_some(d))))
            .filter_map(futures_util::future::ready)
            .map(Ok)
            .boxed()
    }
}

/// Whether `d` brings content a subscriber that was sent `sent` (each message's length) lacks,
/// noting what it brings.
fn fresh(sent: &mut std::collections::HashMap<String, i64>, d: &MessageDelta) -> bool {
    if d.done {
        sent.remove(&d.message_id);
        return true;
    }
    if !d.snapshot && sent.get(&d.message_id).is_some_and(|l| d.length <= *l) {
        return false;
    }
    sent.insert(d.message_id.clone(), d.length);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(message_id: &str, text: &str, length: i64, snapshot: bool, done: bool) -> MessageDelta {
        MessageDelta { topic_id: "t".into(), message_id: message_id.into(), delta: text.into(), snapshot, done, length }
    }

    #[test]
    fn a_delta_already_in_a_snapshot_is_not_sent_again() {
        let mut sent = std::collections::HashMap::new();
        assert!(fresh(&mut sent, &delta("m", "hello", 5, true, false)));
        // Published between subscribing and the snapshot: its content is in the snapshot.
        assert!(!fresh(&mut sent, &delta("m", "lo", 5, false, false)));
        assert!(fresh(&mut sent, &delta("m", " world", 11, false, false)));
        assert!(fresh(&mut sent, &delta("other", "x", 1, false, false)));
        // A fresh snapshot after falling behind, then the deltas still queued from before it.
        assert!(fresh(&mut sent, &delta("m", "hello world!!", 13, true, false)));
        assert!(!fresh(&mut sent, &delta("m", "!", 12, false, false)));
        assert!(!fresh(&mut sent, &delta("m", "!", 13, false, false)));
        assert!(fresh(&mut sent, &delta("m", "", 13, false, true)));
        // The same id streamed again after it was appended starts afresh.
        assert!(fresh(&mut sent, &delta("m", "a", 1, false, false)));
    }
}
