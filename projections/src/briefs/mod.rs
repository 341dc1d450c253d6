//! The briefs read model: `briefs` (type, priority, title, summary, actions, links to task,
//! topic, operation, cron job and agent, read and resolution), folded from `brief.*` events,
//! and its queries.
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::{briefs, page::PageRequest};
//! let open = briefs::BriefFilter { resolved: Some(false), ..Default::default() };
//! let page = briefs::briefs(&db, Some("user-1"), &open, &PageRequest::first(20)).await?;
//! # Ok(()) }
//! ```

mod projection;
mod query;
mod rows;

pub use projection::BriefsProjection;
pub use query::{BriefFilter, brief, briefs, human_waiting};
pub use rows::BriefRow;
