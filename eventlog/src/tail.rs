//! The tailer: one task per store that follows the committed log in position order and keeps
//! the most recent events in memory, so live subscribers are served without a query each.
//!
//! The ring holds every committed event with `floor < position <= head`, contiguous in log
//! order. A subscriber whose position is at or above the floor reads from the ring; one that
//! fell further behind reads the database until it catches up. Writers never wait for either.

use std::{
    collections::VecDeque,
    sync::{Arc, RwLock},
    time::Duration,
};

use agentlog_domain::envelope::RecordedEvent;
use tokio::sync::{Notify, watch};

use crate::{backend::Backend, filter::EventFilter};

/// Recent committed events, contiguous in log order.
#[derive(Debug)]
pub(crate) struct Ring {
    /// Every committed event above the floor is in `events`.
    floor: i64,
    events: VecDeque<Arc<RecordedEvent>>,
    capacity: usize,
}

/// What the ring could give a subscriber at `after`.
pub(crate) enum RingRead {
    /// The subscriber is below the floor: read the database.
    TooOld,
    /// Matching events, and the position the scan covered up to.
    Events(Vec<Arc<RecordedEvent>>, i64),
}

impl Ring {
    fn new(head: i64, capacity: usize) -> Self {
        Self { floor: head, events: VecDeque::with_capacity(capacity.min(4096)), capacity: capacity.max(1) }
    }

    fn head(&self) -> i64 {
        self.events.back().map_or(self.floor, |e| e.position)
    }

    fn push(&mut self, event: Arc<RecordedEvent>) {
        if self.events.len() == self.capacity
            && let Some(old) = self.events.pop_front()
        {
            self.floor = old.position;
        }
        self.events.push_back(event);
    }

    /// Up to `max` events after `after` that pass `filter`, scanning at most `max * 8` entries.
    pub(crate) fn read_after(&self, after: i64, filter: &EventFilter, max: usize) -> RingRead {
        if after < self.floor {
            return RingRead::TooOld;
        }
        let start = self.events.partition_point(|e| e.position <= after);
        let mut out = Vec::new();
        let mut scanned_to = after;
        for e in self.events.range(start..).take(max.saturating_mul(8)) {
            scanned_to = e.position;
            if filter.matches(e) {
                out.push(Arc::clone(e));
                if out.len() == max {
                    break;
                }
            }
        }
        RingRead::Events(out, scanned_to)
    }
}

/// Shared view of the tail: the ring and the head position subscribers wait on.
pub(crate) struct Tail {
    pub ring: RwLock<Ring>,
    pub head: watch::Sender<i64>,
    /// Poked when another process appended (PostgreSQL NOTIFY).
    pub wake: Arc<Notify>,
}

impl Tail {
    pub(crate) fn new(head: i64, capacity: usize) -> Self {
        Self {
            ring: RwLock::new(Ring::new(head, capacity)),
            head: watch::Sender::new(head),
            wake: Arc::new(Notify::new()),
        }
    }
}

/// Follow the log: read everything after the ring's head whenever a local commit, a
/// notification or the poll interval says there may be more — while anyone listens (a
/// subscription or a head watcher). With no one listening (a bulk load that only appends) it
/// reads nothing, so the log is not read back as it is written; the first subscriber wakes it,
/// and it catches up from where it stopped, so the ring stays contiguous.
pub(crate) async fn run_tailer<B: Backend>(
    backend: Arc<B>,
    tail: Arc<Tail>,
    mut committed: watch::Receiver<i64>,
    poll_interval: Duration,
) {
    const PAGE: usize = 1000;
    let mut writer_alive = true;
    loop {
        while tail.head.receiver_count() > 0 {
            let after = tail.ring.read().map(|r| r.head()).unwrap_or_else(|p| p.into_inner().head());
            match backend.read_all(after, None, &EventFilter::all(), PAGE).await {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    let full = events.len() == PAGE;
                    let last = events.last().map_or(after, |e| e.position);
                    {
                        let mut ring = tail.ring.write().unwrap_or_else(|p| p.into_inner());
                        for e in events {
                            ring.push(Arc::new(e));
                        }
                    }
                    tail.head.send_if_modified(|h| {
                        let moved = last > *h;
                        *h = (*h).max(last);
                        moved
                    });
                    if !full {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "event log tailer could not read; retrying");
                    break;
                }
            }
        }
        tokio::select! {
            changed = committed.changed(), if writer_alive => {
                if changed.is_err() {
                    writer_alive = false;
                }
            }
            _ = tail.wake.notified() => {}
            _ = tokio::time::sleep(poll_interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use agentlog_domain::envelope::{Actor, EventMetadata};
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;

    fn ev(position: i64, ty: &str) -> Arc<RecordedEvent> {
        let id = Uuid::from_u128(position as u128 + 1);
        Arc::new(RecordedEvent {
            position,
            event_id: id,
            stream_id: "s-1".into(),
            stream_version: position,
            event_type: ty.into(),
            schema_version: 1,
            payload: serde_json::json!({}),
            metadata: EventMetadata::source(id, Actor::system("t"), "u", "user:u"),
            recorded_at: Utc::now(),
        })
    }

    #[test]
    fn ring_serves_contiguous_events_and_refuses_below_its_floor() {
        let mut ring = Ring::new(10, 3);
        for p in [11, 13, 14] {
            ring.push(ev(p, "a.b"));
        }
        let RingRead::Events(got, to) = ring.read_after(10, &EventFilter::all(), 10) else { panic!() };
        assert_eq!(got.iter().map(|e| e.position).collect::<Vec<_>>(), vec![11, 13, 14]);
        assert_eq!(to, 14);
        ring.push(ev(15, "c.d"));
        assert!(matches!(ring.read_after(10, &EventFilter::all(), 10), RingRead::TooOld));
        let RingRead::Events(got, to) = ring.read_after(11, &EventFilter::types(["c.d"]), 10) else { panic!() };
        assert_eq!(got.iter().map(|e| e.position).collect::<Vec<_>>(), vec![15]);
        assert_eq!(to, 15);
    }
}
