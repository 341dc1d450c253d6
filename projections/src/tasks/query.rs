//! Queries over the tasks read model, owner-scoped (`owner: None` lists as an admin; one task
//! and its parts are always named with their owner, as task ids are per owner).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use agentlog_domain::tasks::graph::{SubtaskNode, SubtaskPlan, plan_subtask_layers};
use agentlog_domain::tasks::{DependencyKind, TaskStatus};

use super::rows::{CommentRow, DependencyRow, DocumentRow, TaskRow, TopicRow};
use crate::{
    columns::{Columns, from_wire_name, wire_name},
    db::{ReadDb, SqlValue, placeholders},
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    select::{Order, Select},
    staging::TableRow,
};

/// Filters of [`tasks`]; all given filters must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Only this status.
    pub status: Option<TaskStatus>,
    /// Only tasks assigned to this agent.
    pub assignee_agent_id: Option<String>,
    /// Only direct subtasks of this task.
    pub parent_task_id: Option<String>,
}

/// `owner`'s task `task_id` (task ids are per owner).
pub async fn task(db: &ReadDb, owner: &str, task_id: &str) -> Result<Option<TaskRow>, ProjectionError> {
    let mut q = Select::new(TaskRow::COLUMNS, TaskRow::TABLE);
    q.eq("user_id", owner).eq("task_id", task_id);
    q.one(db).await?.as_ref().map(TaskRow::from_row).transpose()
}

/// One task by its human identifier (`T-12`).
pub async fn task_by_identifier(
    db: &ReadDb,
    owner: Option<&str>,
    identifier: &str,
) -> Result<Option<TaskRow>, ProjectionError> {
    let mut q = Select::new(TaskRow::COLUMNS, TaskRow::TABLE);
    q.eq("identifier", identifier).owner(owner);
    q.one(db).await?.as_ref().map(TaskRow::from_row).transpose()
}

/// Tasks, oldest first, filtered.
pub async fn tasks(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &TaskFilter,
    page: &PageRequest,
) -> Result<Page<TaskRow>, ProjectionError> {
    let mut q = Select::new(TaskRow::COLUMNS, TaskRow::TABLE);
    q.owner(owner)
        .eq_opt("status", filter.status.map(TaskStatus::as_str))
        .eq_opt("assignee_agent_id", filter.assignee_agent_id.as_deref())
        .eq_opt("parent_task_id", filter.parent_task_id.as_deref());
    q.page(db, "created_at", "task_id", Order::Asc, page, TaskRow::from_row, |t| {
        Cursor::new(t.created_at.timestamp_micros(), &t.task_id)
    })
    .await
}

/// What a task depends on (its upstreams).
pub async fn task_dependencies(db: &ReadDb, owner: &str, task_id: &str) -> Result<Vec<DependencyRow>, ProjectionError> {
    let mut q = Select::new(DependencyRow::COLUMNS, DependencyRow::TABLE);
    q.eq("user_id", owner).eq("task_id", task_id);
    q.all(db, "depends_on_id").await?.iter().map(DependencyRow::from_row).collect()
}

/// The tasks that depend on a task (its dependants).
pub async fn task_dependants(db: &ReadDb, owner: &str, task_id: &str) -> Result<Vec<DependencyRow>, ProjectionError> {
    let mut q = Select::new(DependencyRow::COLUMNS, DependencyRow::TABLE);
    q.eq("user_id", owner).eq("depends_on_id", task_id);
    q.all(db, "task_id").await?.iter().map(DependencyRow::from_row).collect()
}

/// A task's pinned documents, in pin order.
pub async fn task_documents(db: &ReadDb, owner: &str, task_id: &str) -> Result<Vec<DocumentRow>, ProjectionError> {
    let mut q = Select::new(DocumentRow::COLUMNS, DocumentRow::TABLE);
    q.eq("user_id", owner).eq("task_id", task_id);
    q.all(db, "pinned_at, document_id").await?.iter().map(DocumentRow::from_row).collect()
}

/// A task's topics (runs), by sequence number.
pub async fn task_topics(
    db: &ReadDb,
    owner: &str,
    task_id: &str,
    page: &PageRequest,
) -> Result<Page<TopicRow>, ProjectionError> {
    let mut q = Select::new(TopicRow::COLUMNS, TopicRow::TABLE);
    q.eq("user_id", owner).eq("task_id", task_id);
    q.page(db, "seq", "topic_id", Order::Asc, page, TopicRow::from_row, |t| Cursor::new(t.seq, &t.topic_id)).await
}

/// `owner`'s task topic of a conversation topic.
pub async fn task_topic(db: &ReadDb, owner: &str, topic_id: &str) -> Result<Option<TopicRow>, ProjectionError> {
    let mut q = Select::new(TopicRow::COLUMNS, TopicRow::TABLE);
    q.eq("user_id", owner).eq("topic_id", topic_id);
    q.one(db).await?.as_ref().map(TopicRow::from_row).transpose()
}

/// A task's comments, oldest first.
pub async fn task_comments(
    db: &ReadDb,
    owner: &str,
    task_id: &str,
    page: &PageRequest,
) -> Result<Page<CommentRow>, ProjectionError> {
    let mut q = Select::new(CommentRow::COLUMNS, CommentRow::TABLE);
    q.eq("user_id", owner).eq("task_id", task_id);
    q.page(db, "created_at", "comment_id", Order::Asc, page, CommentRow::from_row, |c| {
        Cursor::new(c.created_at.timestamp_micros(), &c.comment_id)
    })
    .await
}

/// A subtask as the planner needs it.
struct Member {
    identifier: String,
    status: TaskStatus,
}

const MEMBER_COLUMNS: &[&str] = &["task_id", "identifier", "status"];

async fn members_where(
    db: &ReadDb,
    owner: &str,
    column: &str,
    ids: &[String],
) -> Result<Vec<(String, Member)>, ProjectionError> {
    let mut out = Vec::new();
    for chunk in ids.chunks(1_000) {
        let mut args: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
        let mut sql = format!(
            "SELECT {} FROM tasks WHERE {column} IN ({})",
            MEMBER_COLUMNS.join(", "),
            placeholders(chunk.len())
        );
        args.push(owner.into());
        sql.push_str(&format!(" AND user_id = ${}", args.len()));
        for row in db.fetch(&sql, &args).await? {
            let mut c = Columns::new(&row, "tasks", MEMBER_COLUMNS);
            let id = c.text()?;
            let identifier = c.text()?;
            let status = from_wire_name("tasks", &c.text()?)?;
            out.push((id, Member { identifier, status }));
        }
    }
    Ok(out)
}

/// The subtask layers of a task (upstream `planForParent`): every descendant, cut by its
/// `blocks` dependencies into layers that can run in parallel. Upstreams outside the subtree
/// are looked up; one that does not exist (or is not the owner's) is an unknown blocker
/// `__missing:<taskId>`. `None` when the parent is not found. All in `owner`'s namespace.
pub async fn subtask_layers(
    db: &ReadDb,
    owner: &str,
    parent_task_id: &str,
) -> Result<Option<SubtaskPlan>, ProjectionError> {
    if task(db, owner, parent_task_id).await?.is_none() {
        return Ok(None);
    }
    // Descendants, level by level (a seen set guards against parent cycles in bad data).
    let mut members: BTreeMap<String, Member> = BTreeMap::new();
    let mut frontier = vec![parent_task_id.to_string()];
    let mut seen: BTreeSet<String> = BTreeSet::from([parent_task_id.to_string()]);
    while !frontier.is_empty() {
        let children = members_where(db, owner, "parent_task_id", &frontier).await?;
        frontier = Vec::new();
        for (id, m) in children {
            if seen.insert(id.clone()) {
                frontier.push(id.clone());
                members.insert(id, m);
            }
        }
    }
    let ids: Vec<String> = members.keys().cloned().collect();
    let mut depends_on: HashMap<String, Vec<String>> = HashMap::new();
    for chunk in ids.chunks(1_000) {
        let mut args: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
        args.push(wire_name(&DependencyKind::Blocks).into());
        args.push(owner.into());
        let sql = format!(
            "SELECT task_id, depends_on_id FROM task_dependencies WHERE task_id IN ({}) AND kind = ${} AND user_id = ${}",
            placeholders(chunk.len()),
            args.len() - 1,
            args.len()
        );
        for row in db.fetch(&sql, &args).await? {
            let mut c = Columns::new(&row, "task_dependencies", &["task_id", "depends_on_id"]);
            let (task_id, upstream) = (c.text()?, c.text()?);
            depends_on.entry(task_id).or_default().push(upstream);
        }
    }
    let outside: Vec<String> = depends_on
        .values()
        .flatten()
        .filter(|u| !members.contains_key(*u))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let external_members: HashMap<String, Member> =
        members_where(db, owner, "task_id", &outside).await?.into_iter().collect();
    let identifier_of = |id: &str| -> String {
        members
            .get(id)
            .or_else(|| external_members.get(id))
            .map_or_else(|| format!("__missing:{id}"), |m| m.identifier.clone())
    };
    let nodes: Vec<SubtaskNode> = members
        .iter()
        .map(|(id, m)| SubtaskNode {
            identifier: m.identifier.clone(),
            status: m.status,
            depends_on: depends_on.get(id).into_iter().flatten().map(|u| identifier_of(u)).collect(),
        })
        .collect();
    let external: BTreeMap<String, TaskStatus> =
        external_members.values().map(|m| (m.identifier.clone(), m.status)).collect();
    Ok(Some(plan_subtask_layers(&nodes, &external)))
}
