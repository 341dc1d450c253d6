//! The runtime websocket connections run on, apart from the one that serves requests.
//!
//! An event is written to every subscriber's socket: with 1,000 subscribers, 1,000 tasks woken
//! and 1,000 `send` calls per event. On the runtime that serves requests a mutation arriving
//! meanwhile waits in the same run queue behind all of them; on threads of their own, the
//! operating system shares the cores between the two (RELIABILITY.md, "1,000 subscribers").

use std::{future::Future, sync::Arc};

use tokio::{
    runtime::{Builder, Handle, Runtime},
    task::JoinHandle,
};

/// A handle on the websockets' runtime; the runtime stops (its tasks dropped) with the last one.
#[derive(Clone)]
pub struct Sockets {
    inner: Arc<Inner>,
}

struct Inner {
    /// Taken in `drop` to shut it down without blocking.
    runtime: Option<Runtime>,
    handle: Handle,
}

impl Sockets {
    /// Start the runtime: a worker thread per core, named `agentlog-ws`.
    pub fn start() -> std::io::Result<Self> {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let runtime =
            Builder::new_multi_thread().worker_threads(threads).thread_name("agentlog-ws").enable_all().build()?;
        let handle = runtime.handle().clone();
        Ok(Self { inner: Arc::new(Inner { runtime: Some(runtime), handle }) })
    }

    /// Run one connection there.
    pub fn spawn<F>(&self, connection: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.inner.handle.spawn(connection)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Dropping a runtime blocks, which an async context must not do; this does not.
            runtime.shutdown_background();
        }
    }
}
