//! Reactors: the parts of agentlog that act on their own. Each follows the log from its
//! checkpoint and appends the consequences with ids derived from what triggered them, so a
//! restart or a second server process never doubles an effect.

pub mod checkpoint;
pub mod signal_bus;

use tokio::{sync::watch, task::JoinHandle};

use crate::state::AppState;

/// The running reactors of one server.
pub struct Reactors {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Reactors {
    /// Start every reactor.
    pub fn start(state: &AppState) -> Self {
        let (stop, rx) = watch::channel(false);
        let tasks = vec![tokio::spawn(signal_bus::run(state.clone(), rx))];
        Self { stop, tasks }
    }

    /// Stop them and wait until each finished its current reaction.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}
