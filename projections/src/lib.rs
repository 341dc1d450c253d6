//! agentlog's read models: a projector runner that folds the log into tables, and the read
//! models themselves. The conversations read model parses topics with
//! `agentlog-conversation-flow`.

pub mod agents;
pub mod analytics;
mod batch;
pub mod briefs;
pub mod budgets;
mod bulk;
pub mod checksum;
mod columns;
mod conditions;
pub mod conversations;
pub mod cron_jobs;
pub mod db;
mod decoding;
pub mod error;
mod fold;
pub mod groups;
pub mod notifications;
pub mod operations;
pub mod page;
mod parallel;
pub mod projection;
mod read;
pub mod runner;
mod runner_state;
mod select;
mod staging;
pub mod tasks;
mod together;

use std::sync::Arc;

pub use db::{ReadDb, ReadTx, Row, Snapshots, SqlValue, SqliteDb};
pub use decoding::DecodedEvent;
pub use error::ProjectionError;
pub use projection::Projection;
pub use runner::ProjectionRunner;
pub use runner_state::{
    BULK_COMMIT_EVERY, BULK_SQLITE_CACHE_MIB, BULK_WAL_AUTOCHECKPOINT, ProjectionStatus, RunnerOptions, RunnerTimings,
    committed_position,
};

/// Every projection agentlog keeps, in the order the runner applies them.
pub fn all_projections() -> Vec<Arc<dyn Projection>> {
    vec![
        Arc::new(operations::OperationsProjection),
        Arc::new(agents::AgentsProjection),
        Arc::new(groups::GroupsProjection),
        Arc::new(analytics::AnalyticsProjection),
        Arc::new(tasks::TasksProjection),
        Arc::new(briefs::BriefsProjection),
        Arc::new(notifications::NotificationsProjection),
        Arc::new(cron_jobs::CronJobsProjection),
        Arc::new(budgets::BudgetsProjection),
        Arc::new(conversations::ConversationsProjection),
    ]
}
