//! Queries over the notifications read model, owner-scoped (`owner: None` = admin, every
//! user's notifications). Each query matches one partial index of the migration: the inbox
//! (`is_archived = 0`), unread (`is_read = 0 AND is_archived = 0`) and archive clean-up
//! (`is_archived = 1`).

use chrono::{DateTime, Utc};

use super::rows::NotificationRow;
use crate::{
    columns::micros,
    db::ReadDb,
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    select::{Order, Select},
    staging::TableRow,
};

/// Filters of [`inbox`]; all given filters must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxFilter {
    /// Only read (`true`) or unread (`false`) notifications.
    pub read: Option<bool>,
    /// Only this category.
    pub category: Option<String>,
}

/// One notification by id.
pub async fn notification(
    db: &ReadDb,
    owner: Option<&str>,
    notification_id: &str,
) -> Result<Option<NotificationRow>, ProjectionError> {
    let mut q = Select::new(NotificationRow::COLUMNS, NotificationRow::TABLE);
    q.eq("notification_id", notification_id).owner(owner);
    q.one(db).await?.as_ref().map(NotificationRow::from_row).transpose()
}

/// The inbox: non-archived notifications, newest first, filtered.
pub async fn inbox(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &InboxFilter,
    page: &PageRequest,
) -> Result<Page<NotificationRow>, ProjectionError> {
    let mut q = Select::new(NotificationRow::COLUMNS, NotificationRow::TABLE);
    q.owner(owner)
        .condition("is_archived = 0")
        .eq_opt("is_read", filter.read)
        .eq_opt("category", filter.category.as_deref());
    q.page(db, "created_at", "notification_id", Order::Desc, page, NotificationRow::from_row, |n| {
        Cursor::new(n.created_at.timestamp_micros(), &n.notification_id)
    })
    .await
}

/// How many non-archived notifications are unread (a count over the unread partial index).
pub async fn unread_count(db: &ReadDb, owner: Option<&str>) -> Result<i64, ProjectionError> {
    let mut q = Select::new(&["COUNT(*)"], NotificationRow::TABLE);
    q.owner(owner).condition("is_read = 0").condition("is_archived = 0");
    Ok(q.one(db).await?.and_then(|r| r.i64(0)).unwrap_or(0))
}

/// Archive clean-up: archived notifications last changed before `before`, oldest first (at
/// most `limit`, ≤ 10,000). The log keeps them; a retention job reads this list.
pub async fn archived_before(
    db: &ReadDb,
    owner: Option<&str>,
    before: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<NotificationRow>, ProjectionError> {
    let mut q = Select::new(NotificationRow::COLUMNS, NotificationRow::TABLE);
    let cutoff = q.bind(micros(before));
    q.owner(owner).condition("is_archived = 1").condition(format!("updated_at < {cutoff}"));
    let order = format!("updated_at, created_at, notification_id LIMIT {}", limit.clamp(1, 10_000));
    q.all(db, &order).await?.iter().map(NotificationRow::from_row).collect()
}

/// Retention: the users who have notifications archived at or before `before` (at most `limit`,
/// ≤ 10,000). Archived rows older than the retention are purged, so this scans a bounded set.
pub async fn users_with_archived_before(
    db: &ReadDb,
    before: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<String>, ProjectionError> {
    let sql = format!(
        "SELECT DISTINCT user_id FROM notifications WHERE is_archived = 1 AND archived_at <= $1 ORDER BY user_id LIMIT {}",
        limit.clamp(1, 10_000)
    );
    let rows = db.fetch(&sql, &[micros(before)]).await?;
    Ok(rows.iter().filter_map(|r| r.str(0).map(str::to_string)).collect())
}

/// How many of `owner`'s notifications were archived at or before `before` (what a purge at
/// that time removes).
pub async fn archived_count(db: &ReadDb, owner: &str, before: DateTime<Utc>) -> Result<i64, ProjectionError> {
    let mut q = Select::new(&["COUNT(*)"], NotificationRow::TABLE);
    let cutoff = q.bind(micros(before));
    q.owner(Some(owner)).condition("is_archived = 1").condition(format!("archived_at <= {cutoff}"));
    Ok(q.one(db).await?.and_then(|r| r.i64(0)).unwrap_or(0))
}
