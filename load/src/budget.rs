//! How much load is left: a deadline and/or a number of mutations, shared by all clients, and
//! the schedule each client sends on when the run has a rate.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

/// The run's bounds and schedule.
#[derive(Debug)]
pub struct Budget {
    deadline: Option<Instant>,
    max: Option<u64>,
    sent: AtomicU64,
    schedule: Option<Schedule>,
}

/// A fixed schedule: each of `clients` sends one mutation per `interval`, client `i` offset by
/// `i / clients` of an interval so the sends spread evenly.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    start: Instant,
    interval: Duration,
    clients: u32,
}

impl Budget {
    /// A budget ending at `deadline` and/or after `max` mutations (unbounded when both are None).
    pub fn new(deadline: Option<Instant>, max: Option<u64>) -> Self {
        Self { deadline, max, sent: AtomicU64::new(0), schedule: None }
    }

    /// Send on a fixed schedule from `start`: `rate` mutations per second, `clients` together.
    pub fn with_rate(mut self, start: Instant, rate: f64, clients: usize) -> Self {
        let clients = u32::try_from(clients.max(1)).unwrap_or(u32::MAX);
        if rate.is_finite() && rate > 0.0 {
            let interval = Duration::from_secs_f64(f64::from(clients) / rate);
            self.schedule = Some(Schedule { start, interval, clients });
        }
        self
    }

    /// When `client`'s `n`-th send (from 0, retries included) is due: now without a schedule,
    /// `None` when that is past the deadline (the client stops).
    ///
    /// With a schedule two runs send the same work in the same time whatever their servers'
    /// speed, as long as they keep up; a client held up (a backoff, a slow answer) sends at once
    /// until it is back on its schedule. Latency is timed from the send, as without one.
    pub fn due(&self, client: usize, n: u64) -> Option<Instant> {
        let Some(s) = self.schedule else { return Some(Instant::now()) };
        let offset = (client as u64 % u64::from(s.clients)) as f64 / f64::from(s.clients);
        let due = s.start + s.interval.mul_f64(n as f64 + offset);
        self.deadline.is_none_or(|d| due < d).then_some(due)
    }

    /// Take one mutation from the budget; false once it is spent.
    pub fn take(&self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        match self.max {
            None => {
                self.sent.fetch_add(1, Ordering::Relaxed);
                true
            }
            // Never counts past the max, so `sent` is exactly what was sent.
            Some(max) => {
                self.sent.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1)).is_ok()
            }
        }
    }

    /// Is it spent?
    pub fn spent(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
            || self.max.is_some_and(|m| self.sent.load(Ordering::Relaxed) >= m)
    }

    /// Mutations sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_max_is_never_exceeded() {
        let b = Budget::new(None, Some(3));
        assert!((0..10).filter(|_| b.take()).count() == 3);
        assert!(b.spent());
        assert_eq!(b.sent(), 3);
    }

    #[test]
    fn a_rate_spreads_each_clients_sends() {
        let start = Instant::now();
        // 40 a second over 4 clients: each one every 100 ms, client 1 25 ms after client 0.
        let b = Budget::new(Some(start + Duration::from_secs(2)), None).with_rate(start, 40.0, 4);
        assert_eq!(b.due(0, 0), Some(start));
        assert_eq!(b.due(1, 0), Some(start + Duration::from_millis(25)));
        assert_eq!(b.due(1, 3), Some(start + Duration::from_millis(325)));
        // The 20th send of each client (n = 19) is the last before the deadline.
        assert_eq!(b.due(3, 19), Some(start + Duration::from_millis(1975)));
        assert_eq!(b.due(0, 20), None);
        // Without a rate: due now.
        let unpaced = Budget::new(None, None);
        assert!(unpaced.due(0, 1_000).is_some_and(|d| d <= Instant::now()));
    }

    #[test]
    fn a_past_deadline_allows_nothing() {
        let b = Budget::new(Some(Instant::now()), None);
        assert!(!b.take());
        assert!(b.spent());
    }
}
