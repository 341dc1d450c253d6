//! Queries over the briefs read model, owner-scoped (`owner: None` lists as an admin; one brief
//! is always named with its owner, as brief ids are per owner).

use agentlog_domain::briefs::{BriefPriority, BriefType};

use super::rows::BriefRow;
use crate::{
    columns::wire_name,
    db::ReadDb,
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    select::{Order, Select},
    staging::TableRow,
};

/// Filters of [`briefs`]; all given filters must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BriefFilter {
    /// Only this type.
    pub brief_type: Option<BriefType>,
    /// Only this priority.
    pub priority: Option<BriefPriority>,
    /// Only resolved (`true`) or unresolved (`false`) briefs.
    pub resolved: Option<bool>,
    /// Only briefs about this task.
    pub task_id: Option<String>,
}

/// `owner`'s brief `brief_id` (brief ids are per owner).
pub async fn brief(db: &ReadDb, owner: &str, brief_id: &str) -> Result<Option<BriefRow>, ProjectionError> {
    let mut q = Select::new(BriefRow::COLUMNS, BriefRow::TABLE);
    q.eq("user_id", owner).eq("brief_id", brief_id);
    q.one(db).await?.as_ref().map(BriefRow::from_row).transpose()
}

/// Briefs, newest first, filtered.
pub async fn briefs(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &BriefFilter,
    page: &PageRequest,
) -> Result<Page<BriefRow>, ProjectionError> {
    let mut q = Select::new(BriefRow::COLUMNS, BriefRow::TABLE);
    q.owner(owner)
        .eq_opt("brief_type", filter.brief_type.map(BriefType::as_str))
        .eq_opt("priority", filter.priority.as_ref().map(wire_name))
        .eq_opt("task_id", filter.task_id.as_deref());
    match filter.resolved {
        Some(true) => q.condition("resolved_at IS NOT NULL"),
        Some(false) => q.condition("resolved_at IS NULL"),
        None => &mut q,
    };
    q.page(db, "created_at", "brief_id", Order::Desc, page, BriefRow::from_row, |b| {
        Cursor::new(b.created_at.timestamp_micros(), &b.brief_id)
    })
    .await
}

/// Does an unresolved urgent brief of `owner`'s that is not an error report wait on a human for
/// task `task_id`? (The scheduler skips such a task's ticks; a finished run does not re-arm.)
/// Only the task owner's briefs count: another user's brief naming the task changes nothing.
pub async fn human_waiting(db: &ReadDb, owner: &str, task_id: &str) -> Result<bool, ProjectionError> {
    let rows = db
        .fetch(
            "SELECT 1 FROM briefs WHERE task_id = $1 AND user_id = $2 AND priority = 'urgent' \
             AND brief_type <> 'error' AND resolved_at IS NULL LIMIT 1",
            &[task_id.into(), owner.into()],
        )
        .await?;
    Ok(!rows.is_empty())
}
