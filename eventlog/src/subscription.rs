//! Subscriptions: history first, then live, with no loss and no duplicate at the switch.
//!
//! A subscription only ever moves its position forward over committed events in log order, and
//! takes them from the tail's ring when they are there and from the database when not — the same
//! sequence either way, so the switch between history and live is invisible.

use std::{collections::VecDeque, sync::Arc};

use agentlog_domain::envelope::RecordedEvent;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::sync::watch;

use crate::{
    backend::Backend,
    error::EventLogError,
    filter::EventFilter,
    tail::{RingRead, Tail},
};

/// A stream of committed events after a position, in log order. It ends only with an error
/// (after which the caller may subscribe again from the last position it saw) or when the store
/// closes.
pub type EventSubscription = BoxStream<'static, Result<Arc<RecordedEvent>, EventLogError>>;

struct State<B> {
    backend: Arc<B>,
    tail: Arc<Tail>,
    head: watch::Receiver<i64>,
    after: i64,
    filter: EventFilter,
    buffer: VecDeque<Arc<RecordedEvent>>,
    failed: bool,
}

const PAGE: usize = 1000;

pub(crate) fn subscribe<B: Backend>(
    backend: Arc<B>,
    tail: Arc<Tail>,
    after: i64,
    filter: EventFilter,
) -> EventSubscription {
    let head = tail.head.subscribe();
    // The tailer rests while no one listens: this subscription is someone.
    tail.wake.notify_one();
    let state = State { backend, tail, head, after, filter, buffer: VecDeque::new(), failed: false };
    stream::unfold(state, |mut s| async move {
        if s.failed {
            return None;
        }
        loop {
            if let Some(e) = s.buffer.pop_front() {
                return Some((Ok(e), s));
            }
            let head = *s.head.borrow_and_update();
            if s.after >= head {
                if s.head.changed().await.is_err() {
                    return None;
                }
                continue;
            }
            let from_ring = {
                let ring = s.tail.ring.read().unwrap_or_else(|p| p.into_inner());
                ring.read_after(s.after, &s.filter, PAGE)
            };
            match from_ring {
                RingRead::Events(events, scanned_to) => {
                    s.after = scanned_to;
                    s.buffer.extend(events);
                }
                RingRead::TooOld => match s.backend.read_all(s.after, Some(head), &s.filter, PAGE).await {
                    Ok(events) => {
                        s.after = if events.len() < PAGE { head } else { events.last().map_or(head, |e| e.position) };
                        s.buffer.extend(events.into_iter().map(Arc::new));
                    }
                    Err(e) => {
                        s.failed = true;
                        return Some((Err(e), s));
                    }
                },
            }
        }
    })
    .boxed()
}
