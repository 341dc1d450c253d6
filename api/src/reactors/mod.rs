//! Reactors: the parts of agentlog that act on their own. Each follows the log from its
//! checkpoint and appends the consequences with ids derived from what triggered them, so a
//! restart or a second server process never doubles an effect.

pub mod card_timeouts;
pub mod checkpoint;
pub mod child_results;
pub mod clock_pass;
pub mod error;
mod follow;
pub mod genai_metrics;
pub mod lease_reaper;
pub mod notification_retention;
pub mod orchestration;
pub mod refusals;
pub mod scheduler;
pub mod signal_bus;
pub mod sources;
pub mod task_cascade;
pub mod task_lifecycle;
pub mod topic_stop;

use tokio::{sync::watch, task::JoinHandle};

pub use follow::{OPERATION_ENDS, Reactor, follow};

use crate::state::App;

/// The running reactors of one server.
pub struct Reactors {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Reactors {
    /// Start every reactor.
    pub fn start(state: &App) -> Self {
        let (stop, rx) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(follow::<signal_bus::SignalBus>(state.clone(), rx.clone())),
            tokio::spawn(follow::<task_lifecycle::TaskLifecycle>(state.clone(), rx.clone())),
            tokio::spawn(follow::<task_cascade::TaskCascade>(state.clone(), rx.clone())),
            tokio::spawn(follow::<topic_stop::TopicStop>(state.clone(), rx.clone())),
            tokio::spawn(follow::<child_results::ChildResults>(state.clone(), rx.clone())),
            tokio::spawn(follow::<orchestration::Orchestration>(state.clone(), rx.clone())),
            tokio::spawn(follow::<sources::Sources>(state.clone(), rx.clone())),
            tokio::spawn(scheduler::run(state.clone(), rx.clone())),
            tokio::spawn(lease_reaper::run(state.clone(), rx.clone())),
            tokio::spawn(card_timeouts::run(state.clone(), rx.clone())),
            tokio::spawn(notification_retention::run(state.clone(), rx)),
        ];
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
