//! `agentlog-load`: drives a running agentlog server the way its clients do — users chatting,
//! workers claiming and reporting on operations, tasks with dependencies, briefs, notifications,
//! and subscribers following the log — over GraphQL on HTTP and graphql-transport-ws, and
//! measures it.
//!
//! It is a client and nothing more: it knows the GraphQL schema and the documented stream names
//! (`conversation-<topicId>`, `operation-<id>`, …), never the server's code. Every mutation the
//! server acknowledged (an HTTP answer with data and no errors) can be written to a JSON-lines
//! file with what identifies its effect in the log ([`Record`]), so a test can check afterwards
//! that each one is there. It refuses any target that is not this machine (loopback only).
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentlog_load::LoadError> {
//! let mut config = agentlog_load::Config::new("http://127.0.0.1:8080", "secret");
//! config.clients = 8;
//! config.duration = Some(std::time::Duration::from_secs(10));
//! let report = agentlog_load::run(config).await?;
//! println!("{report}");
//! # Ok(()) }
//! ```

mod budget;
mod client;
mod contention;
mod mixed;
mod record;
mod report;
mod rng;
mod run;
mod stats;
mod subscriber;
mod target;

use std::{path::PathBuf, time::Duration};

pub use record::Record;
pub use report::{OpReport, Report, SubscriberReport};
pub use run::run;
pub use target::{Target, check_loopback};

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
            record: None,
            scenario: Scenario::Mixed,
            seed: 1,
            request_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            progress: false,
        }
    }
}

/// Why a load run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The URL does not parse or is not http(s).
    #[error("bad server URL {url:?}: {reason}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The target is not this machine.
    #[error("refusing to load {host:?}: agentlog-load only targets this machine (127.0.0.0/8, ::1 or localhost)")]
    NotLoopback {
        /// The host named.
        host: String,
    },
    /// No token.
    #[error("no token: pass --token or set AGENTLOG_TOKEN (the server writes an admin token to agentlog-admin-token)")]
    NoToken,
    /// Nothing to do.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Preparing the load failed (the server refused or could not be reached).
    #[error("setting up the load failed: {0}")]
    Setup(String),
    /// A client stopped before the end.
    #[error("a client stopped: {0}")]
    Client(String),
    /// The record file could not be written.
    #[error("writing the record file {path}: {source}")]
    Record {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
