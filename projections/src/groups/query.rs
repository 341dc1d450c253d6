//! Queries over the groups read model (`owner = None` lists as an admin; one group is always
//! named with its owner, as group ids are per owner).

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::{
    conditions::{Conditions, Order},
    db::{ReadDb, Row},
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    read::RowExt,
    select::Keyset,
};

/// A chat group, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupRow {
    /// Its id.
    pub id: String,
    /// The owner.
    pub user_id: String,
    /// Title.
    pub title: String,
    /// `{systemPrompt?, openingMessage?, openingQuestions?, allowDm?, maxRounds}`.
    pub config: Value,
    /// Most finished actions per orchestration run.
    pub max_rounds: i64,
    /// Members now.
    pub member_count: i64,
    /// The supervisor member.
    pub supervisor_agent_id: Option<String>,
    /// Deleted.
    pub deleted: bool,
    /// Orchestration runs in progress: supervisor operation id → `{maxRounds,
    /// supervisorAgentId, round, skipCallSupervisor}`.
    pub orchestrations: Value,
    /// Orchestration steps recorded in the group's life.
    pub orchestration_steps: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
    /// Deleted at.
    pub deleted_at: Option<DateTime<Utc>>,
    /// Log position of the last event applied.
    pub updated_position: i64,
}

const GROUP_SELECT: &str = "SELECT id, user_id, title, config, max_rounds, member_count, supervisor_agent_id, \
    deleted, orchestrations, orchestration_steps, created_at, updated_at, deleted_at, updated_position FROM groups";

impl GroupRow {
    fn from_row(r: &Row) -> Self {
        Self {
            id: r.text_or_empty(0),
            user_id: r.text_or_empty(1),
            title: r.text_or_empty(2),
            config: r.json_value(3).unwrap_or(Value::Null),
            max_rounds: r.int_or_zero(4),
            member_count: r.int_or_zero(5),
            supervisor_agent_id: r.text(6),
            deleted: r.flag(7),
            orchestrations: r.json_value(8).unwrap_or(Value::Null),
            orchestration_steps: r.int_or_zero(9),
            created_at: r.time_or_epoch(10),
            updated_at: r.time_or_epoch(11),
            deleted_at: r.time(12),
            updated_position: r.int_or_zero(13),
        }
    }
}

/// Which groups to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupFilter {
    /// Include deleted groups (default: only live ones).
    pub include_deleted: bool,
    /// Only groups this agent is a member of.
    pub member_agent_id: Option<String>,
}

/// `owner`'s group `id` (deleted ones too; group ids are per owner).
pub async fn get(db: &ReadDb, owner: &str, id: &str) -> Result<Option<GroupRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("user_id", Some(owner));
    w.eq("id", Some(id));
    let rows = db.fetch(&format!("{GROUP_SELECT} {}", w.sql()), w.args()).await?;
    Ok(rows.first().map(GroupRow::from_row))
}

/// Groups in creation order.
pub async fn list(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &GroupFilter,
    page: &PageRequest,
) -> Result<Page<GroupRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.owner("user_id", owner);
    if !filter.include_deleted {
        w.push("deleted = 0".into());
    }
    if let Some(agent) = &filter.member_agent_id {
        let p = w.bind(agent.as_str());
        w.push(format!(
            "EXISTS (SELECT 1 FROM group_members m WHERE m.user_id = groups.user_id AND m.group_id = groups.id \
             AND m.agent_id = {p})"
        ));
    }
    let keyset = Keyset { sort: "created_at", id: "id", order: Order::Asc };
    keyset
        .page(
            db,
            GROUP_SELECT,
            w,
            page,
            |r| Ok(GroupRow::from_row(r)),
            |g: &GroupRow| Cursor::new(g.created_at.timestamp_micros(), g.id.clone()),
        )
        .await
}

/// A member of a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupMemberRow {
    /// The group.
    pub group_id: String,
    /// The agent.
    pub agent_id: String,
    /// participant or supervisor.
    pub role: String,
    /// Enabled.
    pub enabled: bool,
    /// Display and speaking order.
    pub order: i64,
}

/// The members of `owner`'s group `group_id`, in speaking order.
pub async fn members(db: &ReadDb, owner: &str, group_id: &str) -> Result<Vec<GroupMemberRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("user_id", Some(owner));
    w.eq("group_id", Some(group_id));
    let sql = format!(
        "SELECT group_id, agent_id, role, enabled, member_order FROM group_members {} ORDER BY member_order, agent_id",
        w.sql()
    );
    Ok(db
        .fetch(&sql, w.args())
        .await?
        .iter()
        .map(|r| GroupMemberRow {
            group_id: r.text_or_empty(0),
            agent_id: r.text_or_empty(1),
            role: r.text_or_empty(2),
            enabled: r.flag(3),
            order: r.int_or_zero(4),
        })
        .collect())
}
