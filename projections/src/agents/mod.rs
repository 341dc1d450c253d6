//! The agents read model: `agents` (each agent's current config and version, built-ins
//! included) and `agent_versions` (every config version ever recorded, so "which model and
//! prompt did this run use" is `agent_versions` at the operation's `agent_config_version`).
//!
//! Fed by `agent.registered` (version 1), `agent.config_updated` (the whole new config and its
//! version) and `agent.archived`. The domain's [`Agent`] state is folded with its own `evolve`.
//! Agent events carry no time of their own (but `archived`), so created / updated times are the
//! log's `recorded_at`.

mod query;

use std::collections::HashMap;

use agentlog_domain::{
    agents::{Agent, AgentConfig, AgentEvent, AgentKind},
    aggregate::Aggregate,
    envelope::RecordedEvent,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use query::{AgentFilter, AgentRow, AgentVersionRow, get, list, version, versions};

use crate::{
    db::{ReadTx, SqlValue},
    decoding::{DecodedEvent, decode},
    error::ProjectionError,
    fold::{RowSet, group_by_owned_instance, int, json_text, load_owned_states, micros},
    projection::Projection,
};

/// Projects `agent.*` events into `agents` and `agent_versions`.
#[derive(Debug, Default, Clone, Copy)]
pub struct AgentsProjection;

/// What `agents.state` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentFold {
    agent: Agent,
    created_at: i64,
    updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    archived_at: Option<i64>,
    updated_position: i64,
}

const AGENT_COLUMNS: [&str; 20] = [
    "id",
    "user_id",
    "slug",
    "title",
    "description",
    "model",
    "provider",
    "system_role",
    "plugins",
    "kind",
    "runtime",
    "capabilities",
    "builtin",
    "archived",
    "version",
    "created_at",
    "updated_at",
    "archived_at",
    "updated_position",
    "state",
];

const VERSION_COLUMNS: [&str; 10] = [
    "agent_id",
    "version",
    "user_id",
    "config",
    "changed",
    "model",
    "provider",
    "system_role",
    "recorded_at",
    "position",
];

fn version_row(
    agent_id: &str,
    user_id: &str,
    version: u64,
    config: &AgentConfig,
    changed: &[String],
    recorded: &RecordedEvent,
) -> Result<Vec<SqlValue>, ProjectionError> {
    Ok(vec![
        agent_id.into(),
        int(version),
        user_id.into(),
        json_text(config)?.into(),
        json_text(changed)?.into(),
        config.model.as_deref().into(),
        config.provider.as_deref().into(),
        config.system_role.as_deref().into(),
        micros(recorded.recorded_at).into(),
        recorded.position.into(),
    ])
}

fn agent_row(fold: &AgentFold) -> Result<Vec<SqlValue>, ProjectionError> {
    let a = &fold.agent;
    let c = &a.config;
    let (kind, runtime, capabilities) = match &c.kind {
        AgentKind::Native => ("native", SqlValue::Null, SqlValue::Null),
        AgentKind::Heterogeneous { runtime, capabilities } => {
            ("heterogeneous", runtime.as_str().into(), json_text(capabilities)?.into())
        }
    };
    Ok(vec![
        a.agent_id.as_str().into(),
        a.user_id.as_str().into(),
        c.slug.as_str().into(),
        c.title.as_str().into(),
        c.description.as_deref().into(),
        c.model.as_deref().into(),
        c.provider.as_deref().into(),
        c.system_role.as_deref().into(),
        json_text(&c.plugins)?.into(),
        kind.into(),
        runtime,
        capabilities,
        a.builtin.into(),
        a.archived.into(),
        int(a.version),
        fold.created_at.into(),
        fold.updated_at.into(),
        fold.archived_at.into(),
        fold.updated_position.into(),
        json_text(fold)?.into(),
    ])
}

#[async_trait]
impl Projection for AgentsProjection {
    fn name(&self) -> &'static str {
        "agents"
    }
    fn version(&self) -> i32 {
        2
    }
    fn tables(&self) -> &'static [&'static str] {
        &["agents", "agent_versions"]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("agent.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let groups = group_by_owned_instance(events)?;
        let keys: Vec<(String, String)> = groups.iter().map(|(key, _)| key.clone()).collect();
        let mut folds: HashMap<(String, String), AgentFold> = load_owned_states(tx, "agents", "id", &keys).await?;
        let mut agents = RowSet::default();
        let mut versions = RowSet::default();
        for (key, events) in &groups {
            let (owner, id) = key;
            let mut fold = folds.remove(key).unwrap_or_default();
            for recorded in events {
                let event: &AgentEvent = decode(recorded)?;
                let at = micros(recorded.recorded_at);
                match event {
                    AgentEvent::Registered(e) => {
                        fold.created_at = at;
                        versions.put(
                            (owner.clone(), id.clone(), e.version),
                            version_row(id, owner, e.version, &e.agent.config, &[], recorded)?,
                        );
                    }
                    AgentEvent::ConfigUpdated(e) => versions.put(
                        (owner.clone(), id.clone(), e.version),
                        version_row(id, owner, e.version, &e.config, &e.changed, recorded)?,
                    ),
                    AgentEvent::Archived(e) => fold.archived_at = Some(micros(e.at)),
                }
                fold.agent = std::mem::take(&mut fold.agent).evolve(event);
                fold.updated_at = at;
                fold.updated_position = recorded.position;
            }
            if !fold.agent.exists() {
                tracing::warn!(agent = %id, owner = %owner, "events for an agent that was never registered; skipped");
                continue;
            }
            // The row's owner is the stream's: the key it is loaded by next time.
            fold.agent.user_id.clone_from(owner);
            agents.put(key.clone(), agent_row(&fold)?);
        }
        agents.upsert(tx, "agents", &AGENT_COLUMNS, &["user_id", "id"]).await?;
        versions.upsert(tx, "agent_versions", &VERSION_COLUMNS, &["user_id", "agent_id", "version"]).await
    }
}
