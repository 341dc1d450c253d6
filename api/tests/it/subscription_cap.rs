//! The server caps its open subscriptions, all kinds together: one more is refused with LIMIT
//! at once (it does not wait for a place), and a closed subscription frees its place.
//! In-process (the schema's `execute_stream`), SQLite: the cap does not depend on the backend.

use std::time::Duration;

use agentlog_api::{
    auth::Caller,
    graphql::build_schema,
    server::open_app,
    state::{ApiLimits, Settings},
};
use agentlog_eventlog::testing::TempSqlite;
use futures_util::{Stream, StreamExt};
use serde_json::Value;

const EVENTS: &str = "subscription { events { position eventType } }";
const NOTIFICATIONS: &str = "subscription { notificationCreated { position } }";

/// The next answer of a subscription within `wait`, as JSON; `None` while it is still waiting.
async fn next_within(
    stream: &mut (impl Stream<Item = async_graphql::Response> + Unpin),
    wait: Duration,
) -> Option<Value> {
    let answer = tokio::time::timeout(wait, stream.next()).await.ok()??;
    Some(serde_json::to_value(&answer).expect("a response serialises"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_beyond_the_cap_are_refused_and_a_closed_one_frees_its_place() {
    let file = TempSqlite::new();
    let limits = ApiLimits { max_subscriptions: 2, ..ApiLimits::default() };
    let state = open_app(&file.url(), Settings::default(), limits).await.expect("open the app");
    let schema = build_schema(state.clone());
    let alice = Caller { user_id: "alice".into(), admin: false };
    let subscribe =
        |query: &str| Box::pin(schema.execute_stream(async_graphql::Request::new(query).data(alice.clone())));

    // Two kinds, two places: both admitted (waiting for events).
    let mut first = subscribe(EVENTS);
    let mut second = subscribe(NOTIFICATIONS);
    assert_eq!(next_within(&mut first, Duration::from_millis(300)).await, None);
    assert_eq!(next_within(&mut second, Duration::from_millis(300)).await, None);
    assert_eq!(state.metrics.subscribers.load(std::sync::atomic::Ordering::Relaxed), 2);

    // A third, of either kind, is refused at once.
    for query in [EVENTS, NOTIFICATIONS] {
        let mut third = subscribe(query);
        let refused = next_within(&mut third, Duration::from_secs(5)).await.expect("an answer at once");
        assert_eq!(refused["errors"][0]["extensions"]["code"], "LIMIT", "{refused}");
        assert!(refused["errors"][0]["message"].as_str().is_some_and(|m| m.contains("subscriptions")), "{refused}");
        assert_eq!(next_within(&mut third, Duration::from_millis(100)).await, None, "the refusal ends the stream");
    }
    assert_eq!(state.metrics.subscribers.load(std::sync::atomic::Ordering::Relaxed), 2, "refusals are not counted");

    // Closing one frees its place: the next is admitted and receives events.
    drop(first);
    let mut fourth = subscribe(EVENTS);
    assert_eq!(next_within(&mut fourth, Duration::from_millis(300)).await, None);
    let created = schema
        .execute(
            async_graphql::Request::new("mutation { createConversation(topicId: \"t1\") { __typename } }")
                .data(alice.clone()),
        )
        .await;
    assert!(created.errors.is_empty(), "{:?}", created.errors);
    let event = next_within(&mut fourth, Duration::from_secs(10)).await.expect("an event");
    assert!(event["data"]["events"]["position"].as_i64().is_some_and(|p| p > 0), "{event}");
    drop((second, fourth));
}
