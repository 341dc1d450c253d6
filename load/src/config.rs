//! What a load run does: the scenario and the knobs.

use std::{path::PathBuf, time::Duration};

/// What the clients do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// A realistic mix: chats (with branches and tool messages), workers, tasks with
    /// dependencies and runs, briefs, notifications; each client a user of its own when the
    /// token is an admin's.
    #[default]
    Mixed,
    /// Every client on the same conversation, the same task and the same operation at once.
    Contention,
    /// The write path, closed loop: each client a worker reporting steps on runs of its own as
    /// fast as the server answers (`reportStep`, or `reportBatch` with `--batch`).
    Write,
    /// Against `agentlog-baseline`: one single-insert `append` per request, closed loop.
    Baseline,
}

/// How to run the load.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server, `http://host:port` (loopback only).
    pub url: String,
    /// Further instances of the same server (on the same database): requests go to each
    /// instance in turn, and subscribers are spread over them.
    pub more_urls: Vec<String>,
    /// A bearer token; an admin's lets the load create a user per client.
    pub token: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Subscribers following `events(fromPosition)` over websockets.
    pub subscribers: usize,
    /// How many of the subscribers read slowly ([`Config::slow_delay`] after each message).
    pub slow_subscribers: usize,
    /// A slow subscriber's pause after each message.
    pub slow_delay: Duration,
    /// Subscribers start at the log's head as the run begins instead of at position 0 (on a
    /// large log: the run's events only).
    pub subscribe_from_head: bool,
    /// Stop starting mutations after this long.
    pub duration: Option<Duration>,
    /// Stop after sending this many mutations (retries included).
    pub max_mutations: Option<u64>,
    /// Send this many mutations per second, all clients together, on a fixed schedule (each
    /// client one per `clients / rate` seconds); `None`: each client as fast as it is answered.
    pub rate: Option<f64>,
    /// Write every acknowledged mutation here, one JSON object per line.
    pub record: Option<PathBuf>,
    /// What the clients do.
    pub scenario: Scenario,
    /// Seed of the clients' choices.
    pub seed: u64,
    /// Longest wait for one HTTP answer.
    pub request_timeout: Duration,
    /// Longest wait, after the load, for the subscribers to reach the log's head; also the
    /// longest a client waits for an unreachable server to come back.
    pub drain_timeout: Duration,
    /// Show a progress bar on stderr.
    pub progress: bool,
    /// [`Scenario::Write`]: steps per request (0 or 1: `reportStep`; more: `reportBatch`).
    pub batch: usize,
}

impl Config {
    /// Defaults: 4 clients, 1 subscriber, 10 seconds, the mixed scenario.
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            more_urls: Vec::new(),
            token: token.into(),
            clients: 4,
            subscribers: 1,
            slow_subscribers: 0,
            slow_delay: Duration::from_millis(200),
            subscribe_from_head: false,
            duration: None,
            max_mutations: None,
            rate: None,
            record: None,
            scenario: Scenario::Mixed,
            seed: 1,
            request_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            progress: false,
            batch: 0,
        }
    }
}
