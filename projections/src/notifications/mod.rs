//! The notifications read model: `notifications` (category, type, title, body, dedupe key,
//! read, archived), folded from each user's `notification.*` stream, with the inbox, unread
//! count and archive clean-up queries.
//!
//! ```no_run
//! # async fn demo(db: agentlog_projections::ReadDb) -> Result<(), agentlog_projections::ProjectionError> {
//! use agentlog_projections::{notifications, page::PageRequest};
//! let unread = notifications::unread_count(&db, Some("user-1")).await?;
//! let inbox = notifications::inbox(&db, Some("user-1"), &Default::default(), &PageRequest::first(20)).await?;
//! # Ok(()) }
//! ```

mod projection;
mod query;
mod rows;

pub use projection::NotificationsProjection;
pub use query::{
    InboxFilter, archived_before, archived_count, inbox, notification, unread_count, users_with_archived_before,
};
pub use rows::NotificationRow;
