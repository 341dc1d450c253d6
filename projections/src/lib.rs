//! agentlog's read models: a projector runner that folds the log into tables, the read models
//! themselves, and LobeHub's conversation-flow parser.

pub mod chains;
pub mod conversation;
pub mod db;
pub mod error;
pub mod projection;
pub mod runner;

use std::sync::Arc;

pub use db::{ReadDb, ReadTx, Row, SqlValue};
pub use error::ProjectionError;
pub use projection::Projection;
pub use runner::{ProjectionRunner, ProjectionStatus, RunnerOptions};

/// Every projection agentlog keeps, in the order the runner applies them.
pub fn all_projections() -> Vec<Arc<dyn Projection>> {
    vec![Arc::new(chains::ChainsProjection)]
}
