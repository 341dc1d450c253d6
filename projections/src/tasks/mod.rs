//! The tasks read model: `tasks`, `task_dependencies` (blocks | relates), `task_topics` (runs
//! with status, trigger, hand-off and review), `task_documents` (pinnedBy) and `task_comments`,
//! folded from `task.*` events; and the queries the API serves from them, subtask layers
//! included, and the scheduler's due queries (`due`).
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::{page::PageRequest, tasks};
//! let filter = tasks::TaskFilter { status: Some(agentlog_domain::tasks::TaskStatus::Running), ..Default::default() };
//! let page = tasks::tasks(&db, Some("user-1"), &filter, &PageRequest::first(20)).await?;
//! let layers = tasks::subtask_layers(&db, "user-1", "parent-task").await?;
//! # Ok(()) }
//! ```

mod due;
mod projection;
mod query;
mod rows;

pub use due::{heartbeat_ticks_due, heartbeat_timeouts_due, schedules_due};
pub use projection::TasksProjection;
pub use query::{
    TaskFilter, subtask_layers, task, task_by_identifier, task_comments, task_dependants, task_dependencies,
    task_documents, task_topic, task_topics, tasks,
};
pub use rows::{CommentRow, DependencyRow, DocumentRow, TaskRow, TopicRow};
