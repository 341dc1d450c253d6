//! `agentlog-load`: drives a running agentlog server the way its clients do — users chatting,
//! workers claiming and reporting on operations, tasks with dependencies, briefs, notifications,
//! and subscribers following the log — over GraphQL on HTTP and graphql-transport-ws, and
//! measures it.
//!
//! It is a client and nothing more: it knows the GraphQL schema and the documented stream names
//! (`conversation@<owner>/<topicId>`, `operation@<owner>/<id>`, …), never the server's code. Every mutation the
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
mod config;
mod contention;
mod error;
mod mixed;
mod record;
mod report;
mod rng;
mod run;
mod stats;
mod subscriber;
mod target;
mod write;

pub use config::{Config, Scenario};
pub use error::LoadError;
pub use record::Record;
pub use report::{DeliveryReport, OpReport, Report, SubscriberReport};
pub use run::run;
pub use target::{Target, check_loopback};
