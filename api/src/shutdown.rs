//! Draining before a stop: once a shutdown begins, new requests are refused (UNAVAILABLE),
//! open websockets are closed with 1001, and the server waits for the requests already
//! admitted to be answered before it stops listening.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use tokio::sync::{Notify, watch};

/// Whether this server is draining, and how many requests it is still answering.
#[derive(Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

struct Inner {
    draining: watch::Sender<bool>,
    in_flight: AtomicUsize,
    idle: Notify,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner {
                draining: watch::channel(false).0,
                in_flight: AtomicUsize::new(0),
                idle: Notify::new(),
            }),
        }
    }
}

/// A request admitted before the shutdown began; the drain waits until every one is dropped.
pub struct InFlight(Arc<Inner>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Shutdown {
    /// Admit a request, or None when the shutdown has begun (the caller answers UNAVAILABLE).
    /// Counted before the flag is read, so [`Shutdown::drained`] cannot miss a request
    /// admitted at the moment the shutdown begins.
    pub fn admit(&self) -> Option<InFlight> {
        self.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        let guard = InFlight(Arc::clone(&self.inner));
        if *self.inner.draining.borrow() {
            return None;
        }
        Some(guard)
    }

    /// Begin the shutdown: refuse from now on, and tell every open websocket.
    pub fn begin(&self) {
        self.inner.draining.send_replace(true);
    }

    /// The shutdown has begun.
    pub fn is_draining(&self) -> bool {
        *self.inner.draining.borrow()
    }

    /// Resolves once the shutdown has begun.
    pub async fn begun(&self) {
        let mut rx = self.inner.draining.subscribe();
        // The sender lives as long as `self`, so this only ends once the flag is true.
        let _ = rx.wait_for(|draining| *draining).await;
    }

    /// Requests being answered now.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Resolves when no admitted request is left.
    pub async fn drained(&self) {
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            // Registered before the count is read, so a last drop in between still wakes us.
            idle.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            idle.await;
        }
    }
}
