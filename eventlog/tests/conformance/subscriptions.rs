//! Subscriptions: history then live, concurrent writers, slow readers, other instances, and
//! PostgreSQL's out-of-order commits.

use std::{collections::HashSet, sync::Arc, time::Duration};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{EventFilter, EventStore, EventSubscription, ExpectedVersion, StoreOptions, testing::TestLog};
use futures_util::StreamExt;
use tokio::time::timeout;

use crate::{
    on_both_backends,
    support::{all_events, events},
};

const WRITERS: usize = 8;
// 2,000 events from 8 writers: past the small ring (256) eight times over, and enough appends
// racing for the history → live switch.
const PER_WRITER: usize = 250;

async fn take(sub: &mut EventSubscription, n: usize, within: Duration) -> Vec<Arc<RecordedEvent>> {
    let mut got = Vec::with_capacity(n);
    let deadline = tokio::time::Instant::now() + within;
    while got.len() < n {
        match tokio::time::timeout_at(deadline, sub.next()).await {
            Ok(Some(Ok(e))) => got.push(e),
            Ok(Some(Err(e))) => panic!("subscription failed: {e}"),
            Ok(None) => panic!("subscription ended after {} of {n}", got.len()),
            Err(_) => panic!("timed out with {} of {n} events", got.len()),
        }
    }
    got
}

fn spawn_writers(store: &Arc<dyn EventStore>) -> Vec<tokio::task::JoinHandle<()>> {
    (0..WRITERS)
        .map(|w| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let mut i = 0;
                while i < PER_WRITER {
                    let n = 1 + (i % 4).min(PER_WRITER - i - 1);
                    store.append(&format!("w{w}-{}", i % 7), ExpectedVersion::Any, events(n)).await.unwrap();
                    i += n;
                }
            })
        })
        .collect()
}

fn assert_exact(got: &[Arc<RecordedEvent>], expected: &[RecordedEvent]) {
    assert!(got.windows(2).all(|w| w[0].position < w[1].position), "positions must strictly increase");
    let ids: HashSet<_> = got.iter().map(|e| e.event_id).collect();
    assert_eq!(ids.len(), got.len(), "no duplicates");
    assert_eq!(
        got.iter().map(|e| e.position).collect::<Vec<_>>(),
        expected.iter().map(|e| e.position).collect::<Vec<_>>(),
        "exactly the log, in order"
    );
}

async fn history_then_live_through_concurrent_writers(log: TestLog) {
    let store = Arc::clone(&log.store);
    store.append("pre-1", ExpectedVersion::NoStream, events(2_000)).await.unwrap();
    let mut sub = store.subscribe(0, EventFilter::all());
    // read a little history, then let 8 writers go while the subscriber crosses into live
    let mut got = take(&mut sub, 100, Duration::from_secs(30)).await;
    let writers = spawn_writers(&store);
    got.extend(take(&mut sub, 2_000 - 100 + WRITERS * PER_WRITER, Duration::from_secs(120)).await);
    for w in writers {
        w.await.unwrap();
    }
    assert_exact(&got, &all_events(&*store).await);
    // nothing more arrives
    assert!(timeout(Duration::from_millis(300), sub.next()).await.is_err());
}

async fn a_stalled_subscriber_never_blocks_writers(log: TestLog) {
    let store = Arc::clone(&log.store);
    let mut stalled = store.subscribe(0, EventFilter::all());
    store.append("s-1", ExpectedVersion::NoStream, events(10)).await.unwrap();
    let first = take(&mut stalled, 5, Duration::from_secs(10)).await;
    // the subscriber stops reading; writers must finish anyway, well past the ring's capacity
    let writers = spawn_writers(&store);
    timeout(Duration::from_secs(120), async {
        for w in writers {
            w.await.unwrap();
        }
    })
    .await
    .expect("writers finished while the subscriber was stalled");
    let mut got = first;
    got.extend(take(&mut stalled, 10 + WRITERS * PER_WRITER - 5, Duration::from_secs(120)).await);
    assert_exact(&got, &all_events(&*store).await);
}

async fn a_filtered_subscription_sees_only_its_events(log: TestLog) {
    let store = Arc::clone(&log.store);
    let mut sub = store.subscribe(0, EventFilter::all().with_stream_prefix("keep-"));
    for i in 0..200 {
        let stream = if i % 3 == 0 { format!("keep-{i}") } else { format!("drop-{i}") };
        store.append(&stream, ExpectedVersion::NoStream, events(2)).await.unwrap();
    }
    let got = take(&mut sub, 67 * 2, Duration::from_secs(30)).await;
    assert!(got.iter().all(|e| e.stream_id.starts_with("keep-")));
    let expected = store.read_all(0, &EventFilter::all().with_stream_prefix("keep-"), 10_000).await.unwrap();
    assert_exact(&got, &expected);
    assert!(timeout(Duration::from_millis(300), sub.next()).await.is_err());
}

async fn resuming_from_a_position_continues_exactly(log: TestLog) {
    let store = Arc::clone(&log.store);
    store.append("r-1", ExpectedVersion::NoStream, events(50)).await.unwrap();
    let mut sub = store.subscribe(0, EventFilter::all());
    let first = take(&mut sub, 20, Duration::from_secs(10)).await;
    drop(sub);
    store.append("r-1", ExpectedVersion::Exact(50), events(30)).await.unwrap();
    let mut resumed = store.subscribe(first[19].position, EventFilter::all());
    let rest = take(&mut resumed, 60, Duration::from_secs(10)).await;
    let mut got = first;
    got.extend(rest);
    assert_exact(&got, &all_events(&*store).await);
}

async fn another_instance_sees_appends_within_a_second(log: TestLog) {
    let other = agentlog_eventlog::testing::reopen(&log.guard, StoreOptions::default()).await;
    let mut sub = other.subscribe(log.store.head_position().await.unwrap(), EventFilter::all());
    for round in 0..5 {
        let appended = log.store.append(&format!("x-{round}"), ExpectedVersion::NoStream, events(1)).await.unwrap();
        let got = take(&mut sub, 1, Duration::from_secs(1)).await;
        assert_eq!(got[0].position, appended.positions[0]);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    other.close().await;
}

// The tailer reads nothing while no one listens: a watcher that arrives after such appends
// still sees their head, and a subscription their events, then live ones.
async fn appends_made_while_no_one_listened_reach_a_later_listener(log: TestLog) {
    let store = Arc::clone(&log.store);
    let appended = store.append("q-1", ExpectedVersion::NoStream, events(1_500)).await.unwrap();
    let last = appended.positions[appended.positions.len() - 1];
    let mut head = store.watch_head();
    timeout(Duration::from_secs(10), head.wait_for(|h| *h >= last)).await.expect("the watcher saw the head").unwrap();
    drop(head);
    store.append("q-1", ExpectedVersion::Exact(1_500), events(20)).await.unwrap();
    let mut sub = store.subscribe(0, EventFilter::all());
    let mut got = take(&mut sub, 1_520, Duration::from_secs(30)).await;
    store.append("q-2", ExpectedVersion::NoStream, events(5)).await.unwrap();
    got.extend(take(&mut sub, 5, Duration::from_secs(10)).await);
    assert_exact(&got, &all_events(&*store).await);
}

on_both_backends!(StoreOptions::default() =>
    appends_made_while_no_one_listened_reach_a_later_listener as tailer_rests_until_someone_listens,
    history_then_live_through_concurrent_writers as subscribe_history_then_live_8_writers,
    a_filtered_subscription_sees_only_its_events as subscribe_with_filter,
    resuming_from_a_position_continues_exactly as subscribe_resume_from_position,
    another_instance_sees_appends_within_a_second as second_instance_sees_appends_within_a_second,
);

// A small ring forces the stalled subscriber back to the database and forth again.
on_both_backends!(StoreOptions { ring_capacity: 256, ..StoreOptions::default() } =>
    a_stalled_subscriber_never_blocks_writers as stalled_subscriber_never_blocks_writers,
    history_then_live_through_concurrent_writers as subscribe_history_then_live_small_ring,
);
