//! Building events for the tests.

use agentlog_domain::envelope::{Actor, EventMetadata, NewEvent, RecordedEvent};
use agentlog_eventlog::{EventFilter, EventStore};
use serde_json::json;
use uuid::Uuid;

/// A fresh event of `event_type` owned by `user`, as its own source.
pub fn event(event_type: &str, user: &str) -> NewEvent {
    let id = Uuid::now_v7();
    NewEvent::new(
        id,
        event_type,
        json!({"n": 1, "text": "hello"}),
        EventMetadata::source(id, Actor::user(user), user, format!("user:{user}")),
    )
}

/// `n` events of type `test.happened` for user `u1`.
pub fn events(n: usize) -> Vec<NewEvent> {
    (0..n)
        .map(|i| {
            let mut e = event("test.happened", "u1");
            e.payload = json!({"i": i});
            e
        })
        .collect()
}

/// An event caused by `parent` (same chain).
pub fn caused(parent: &NewEvent, event_type: &str) -> NewEvent {
    let id = Uuid::now_v7();
    NewEvent::new(
        id,
        event_type,
        json!({"because": parent.event_id}),
        parent.metadata.caused_by(parent.event_id, Actor::system("test")),
    )
}

/// Everything in the log.
pub async fn all_events(store: &dyn EventStore) -> Vec<RecordedEvent> {
    store.read_all(0, &EventFilter::all(), usize::MAX >> 1).await.expect("read all")
}

/// How many events the log holds.
pub async fn count(store: &dyn EventStore) -> usize {
    all_events(store).await.len()
}
