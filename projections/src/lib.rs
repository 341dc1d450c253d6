//! agentlog's read models: a projector runner that folds the log into tables, the read models
//! themselves, and LobeHub's conversation-flow parser.
//!
//! Everything but the parser sits behind the default `db` feature; with
//! `default-features = false` the crate is only [`conversation`] (no tokio, sqlx or event log).

#[cfg(feature = "db")]
pub mod agents;
#[cfg(feature = "db")]
pub mod analytics;
#[cfg(feature = "db")]
pub mod briefs;
#[cfg(feature = "db")]
pub mod chains;
#[cfg(feature = "db")]
pub mod checksum;
#[cfg(feature = "db")]
mod columns;
#[cfg(feature = "db")]
mod conditions;
pub mod conversation;
#[cfg(feature = "db")]
pub mod conversations;
#[cfg(feature = "db")]
pub mod cron_jobs;
#[cfg(feature = "db")]
pub mod db;
#[cfg(feature = "db")]
mod decoding;
#[cfg(feature = "db")]
pub mod error;
#[cfg(feature = "db")]
mod fold;
#[cfg(feature = "db")]
pub mod groups;
#[cfg(feature = "db")]
pub mod notifications;
#[cfg(feature = "db")]
pub mod operations;
#[cfg(feature = "db")]
pub mod page;
#[cfg(feature = "db")]
pub mod projection;
#[cfg(feature = "db")]
mod read;
#[cfg(feature = "db")]
pub mod runner;
#[cfg(feature = "db")]
mod select;
#[cfg(feature = "db")]
mod staging;
#[cfg(feature = "db")]
pub mod tasks;
#[cfg(feature = "db")]
pub mod workload;

#[cfg(feature = "db")]
use std::sync::Arc;

#[cfg(feature = "db")]
pub use db::{ReadDb, ReadTx, Row, SqlValue};
#[cfg(feature = "db")]
pub use error::ProjectionError;
#[cfg(feature = "db")]
pub use projection::Projection;
#[cfg(feature = "db")]
pub use runner::{ProjectionRunner, ProjectionStatus, RunnerOptions, RunnerTimings};

/// Every projection agentlog keeps, in the order the runner applies them.
#[cfg(feature = "db")]
pub fn all_projections() -> Vec<Arc<dyn Projection>> {
    vec![
        Arc::new(chains::ChainsProjection),
        Arc::new(operations::OperationsProjection),
        Arc::new(agents::AgentsProjection),
        Arc::new(groups::GroupsProjection),
        Arc::new(analytics::AnalyticsProjection),
        Arc::new(tasks::TasksProjection),
        Arc::new(briefs::BriefsProjection),
        Arc::new(notifications::NotificationsProjection),
        Arc::new(cron_jobs::CronJobsProjection),
        Arc::new(conversations::ConversationsProjection),
    ]
}
