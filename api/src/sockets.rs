//! The runtime websocket connections run on, apart from the one that serves requests.
//!
//! An event is written to every subscriber's socket: with 1,000 subscribers, 1,000 tasks woken
//! and 1,000 `send` calls per event. On the runtime that serves requests a mutation arriving
//! meanwhile waits in the same run queue behind all of them; on threads of their own, the
//! operating system shares the cores between the two (RELIABILITY.md, "1,000 subscribers").
//! They run nicer than the process (`--websocket-nice`, default 5), so a request goes before
//! a burst of fan-out: an acknowledgement waits for nobody's delivery, and a delivery that
//! waits is still delivered (each connection pulls its events).

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
    /// Start the runtime: a worker thread per core, named `agentlog-ws`, each `nice` steps
    /// nicer than the process (0: as the process).
    pub fn start(nice: i32) -> std::io::Result<Self> {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let runtime = Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("agentlog-ws")
            .on_thread_start(move || set_nice(nice))
            .enable_all()
            .build()?;
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

/// Make the calling thread `nice` steps nicer than it is (on Linux a thread has its own
/// niceness, inherited from the thread that made it), within -20..=19.
fn set_nice(nice: i32) {
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `getpriority` and `setpriority` take plain integers (`who = 0`: the calling
        // thread); errno is the thread's own, cleared first because -1 is a valid niceness.
        let current = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS as _, 0)
        };
        let unknown = current == -1 && std::io::Error::last_os_error().raw_os_error() != Some(0);
        // SAFETY: as above.
        let rc = if unknown {
            -1
        } else {
            unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, (current + nice).clamp(-20, 19)) }
        };
        if rc != 0 {
            let error = std::io::Error::last_os_error();
            tracing::warn!(nice, current, %error, "could not set the websocket threads' niceness; they run as the process does");
        }
    }
    #[cfg(not(target_os = "linux"))]
    tracing::warn!(nice, "the websocket threads' niceness is set on Linux only");
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Dropping a runtime blocks, which an async context must not do; this does not.
            runtime.shutdown_background();
        }
    }
}
