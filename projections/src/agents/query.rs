//! Queries over the agents read model. Built-in agents (owned by `system`) are visible to every
//! user; other agents only to their owner (`owner = None` reads as an admin).

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

/// An agent's current config, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRow {
    /// Its id.
    pub id: String,
    /// The owner (`system` for built-ins).
    pub user_id: String,
    /// Unique short name.
    pub slug: String,
    /// Display title.
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// Model (none = the user's default).
    pub model: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// System prompt.
    pub system_role: Option<String>,
    /// Plugins (tool identifiers).
    pub plugins: Vec<String>,
    /// native or heterogeneous.
    pub kind: String,
    /// The external runtime of a heterogeneous agent.
    pub runtime: Option<String>,
    /// What a heterogeneous agent can do.
    pub capabilities: Option<Vec<String>>,
    /// One of upstream's built-in agents.
    pub builtin: bool,
    /// Retired.
    pub archived: bool,
    /// Current config version.
    pub version: i64,
    /// Registered (log time).
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
    /// Archived.
    pub archived_at: Option<DateTime<Utc>>,
    /// Log position of the last event applied.
    pub updated_position: i64,
}

const AGENT_SELECT: &str = "SELECT id, user_id, slug, title, description, model, provider, system_role, plugins, \
    kind, runtime, capabilities, builtin, archived, version, created_at, updated_at, archived_at, updated_position \
    FROM agents";

impl AgentRow {
    fn from_row(r: &Row) -> Self {
        Self {
            id: r.text_or_empty(0),
            user_id: r.text_or_empty(1),
            slug: r.text_or_empty(2),
            title: r.text_or_empty(3),
            description: r.text(4),
            model: r.text(5),
            provider: r.text(6),
            system_role: r.text(7),
            plugins: r.json_as(8).unwrap_or_default(),
            kind: r.text_or_empty(9),
            runtime: r.text(10),
            capabilities: r.json_as(11),
            builtin: r.flag(12),
            archived: r.flag(13),
            version: r.int_or_zero(14),
            created_at: r.time_or_epoch(15),
            updated_at: r.time_or_epoch(16),
            archived_at: r.time(17),
            updated_position: r.int_or_zero(18),
        }
    }
}

/// What may `owner` see: its own agents and the built-ins.
fn visible_to(w: &mut Conditions, owner: Option<&str>) {
    if let Some(owner) = owner {
        let p = w.bind(owner);
        w.push(format!("(user_id = {p} OR builtin = 1)"));
    }
}

/// Which agents to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentFilter {
    /// Include archived agents (default: only live ones).
    pub include_archived: bool,
    /// Only built-ins (`Some(true)`) or only user agents (`Some(false)`).
    pub builtin: Option<bool>,
    /// Only agents on this model.
    pub model: Option<String>,
}

/// `owner`'s agent `id`, or the built-in `id` (agent ids are per owner); `None` when absent.
pub async fn get(db: &ReadDb, owner: &str, id: &str) -> Result<Option<AgentRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("id", Some(id));
    visible_to(&mut w, Some(owner));
    let rows = db.fetch(&format!("{AGENT_SELECT} {}", w.sql()), w.args()).await?;
    Ok(rows.first().map(AgentRow::from_row))
}

/// Agents in registration order.
pub async fn list(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &AgentFilter,
    page: &PageRequest,
) -> Result<Page<AgentRow>, ProjectionError> {
    let mut w = Conditions::default();
    visible_to(&mut w, owner);
    if !filter.include_archived {
        w.push("archived = 0".into());
    }
    w.eq("builtin", filter.builtin.map(i64::from));
    w.eq("model", filter.model.as_deref());
    let keyset = Keyset { sort: "created_at", id: "id", order: Order::Asc };
    keyset
        .page(
            db,
            AGENT_SELECT,
            w,
            page,
            |r| Ok(AgentRow::from_row(r)),
            |a: &AgentRow| Cursor::new(a.created_at.timestamp_micros(), a.id.clone()),
        )
        .await
}

/// One config version of an agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentVersionRow {
    /// The agent.
    pub agent_id: String,
    /// The version (1 at registration).
    pub version: i64,
    /// The whole config at this version.
    pub config: Value,
    /// Fields changed from the previous version.
    pub changed: Vec<String>,
    /// Model at this version.
    pub model: Option<String>,
    /// Provider at this version.
    pub provider: Option<String>,
    /// System prompt at this version.
    pub system_role: Option<String>,
    /// When it was recorded (log time).
    pub recorded_at: DateTime<Utc>,
    /// Log position of its event.
    pub position: i64,
}

const VERSION_SELECT: &str = "SELECT v.agent_id, v.version, v.config, v.changed, v.model, v.provider, \
    v.system_role, v.recorded_at, v.position FROM agent_versions v JOIN agents a ON a.user_id = v.user_id AND a.id = v.agent_id";

fn version_row(r: &Row) -> AgentVersionRow {
    AgentVersionRow {
        agent_id: r.text_or_empty(0),
        version: r.int_or_zero(1),
        config: r.json_value(2).unwrap_or(Value::Null),
        changed: r.json_as(3).unwrap_or_default(),
        model: r.text(4),
        provider: r.text(5),
        system_role: r.text(6),
        recorded_at: r.time_or_epoch(7),
        position: r.int_or_zero(8),
    }
}

/// `owner`'s agent or a built-in (agent ids are per owner).
fn visible_agent(w: &mut Conditions, owner: &str) {
    let p = w.bind(owner);
    w.push(format!("(a.user_id = {p} OR a.builtin = 1)"));
}

/// Every config version of `owner`'s agent (or the built-in) `agent_id`, oldest first.
pub async fn versions(
    db: &ReadDb,
    owner: &str,
    agent_id: &str,
    page: &PageRequest,
) -> Result<Page<AgentVersionRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("v.agent_id", Some(agent_id));
    visible_agent(&mut w, owner);
    let keyset = Keyset { sort: "v.version", id: "v.agent_id", order: Order::Asc };
    keyset
        .page(
            db,
            VERSION_SELECT,
            w,
            page,
            |r| Ok(version_row(r)),
            |v: &AgentVersionRow| Cursor::new(v.version, v.agent_id.clone()),
        )
        .await
}

/// One config version of `owner`'s agent (or the built-in) `agent_id` (what `owner`'s
/// operation with that `agentConfigVersion` ran under).
pub async fn version(
    db: &ReadDb,
    owner: &str,
    agent_id: &str,
    version: i64,
) -> Result<Option<AgentVersionRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("v.agent_id", Some(agent_id));
    w.eq("v.version", Some(version));
    visible_agent(&mut w, owner);
    let rows = db.fetch(&format!("{VERSION_SELECT} {}", w.sql()), w.args()).await?;
    Ok(rows.first().map(version_row))
}
