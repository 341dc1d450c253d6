//! The groups read model: `groups` (title, config, supervisor, deleted flag, the orchestration
//! runs in progress with their supervisor state, and how many orchestration steps were
//! recorded) and `group_members` (each group's members as they are now).
//!
//! Fed by every `group.*` event; the domain's [`Group`] state is folded with its own `evolve`.
//! The members of every group a batch touches are rewritten whole (delete, insert): a group has
//! a handful of members and this keeps removals exact.

mod query;

use std::collections::HashMap;

use agentlog_domain::{
    aggregate::Aggregate,
    groups::{Group, GroupEvent},
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use query::{GroupFilter, GroupMemberRow, GroupRow, get, list, members};

use crate::{
    db::{ReadTx, SqlValue},
    decoding::{DecodedEvent, decode},
    error::ProjectionError,
    fold::{RowSet, group_by_owned_instance, int, json_text, load_owned_states, micros, wire_name},
    projection::Projection,
};

/// Projects `group.*` events into `groups` and `group_members`.
#[derive(Debug, Default, Clone, Copy)]
pub struct GroupsProjection;

/// What `groups.state` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupFold {
    group: Group,
    created_at: i64,
    updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deleted_at: Option<i64>,
    orchestration_steps: u64,
    updated_position: i64,
}

const GROUP_COLUMNS: [&str; 15] = [
    "id",
    "user_id",
    "title",
    "config",
    "max_rounds",
    "member_count",
    "supervisor_agent_id",
    "deleted",
    "orchestrations",
    "orchestration_steps",
    "created_at",
    "updated_at",
    "deleted_at",
    "updated_position",
    "state",
];

const MEMBER_COLUMNS: [&str; 6] = ["group_id", "agent_id", "user_id", "role", "enabled", "member_order"];

fn group_row(fold: &GroupFold) -> Result<Vec<SqlValue>, ProjectionError> {
    let g = &fold.group;
    Ok(vec![
        g.group_id.as_str().into(),
        g.user_id.as_str().into(),
        g.title.as_str().into(),
        json_text(&g.config)?.into(),
        g.config.max_rounds.into(),
        int(g.members.len() as u64),
        g.supervisor().map(|m| m.agent_id.as_str()).into(),
        g.deleted.into(),
        json_text(&g.orchestrations)?.into(),
        int(fold.orchestration_steps),
        fold.created_at.into(),
        fold.updated_at.into(),
        fold.deleted_at.into(),
        fold.updated_position.into(),
        json_text(fold)?.into(),
    ])
}

#[async_trait]
impl Projection for GroupsProjection {
    fn name(&self) -> &'static str {
        "groups"
    }
    fn version(&self) -> i32 {
        2
    }
    fn tables(&self) -> &'static [&'static str] {
        &["groups", "group_members"]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("group.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let groups = group_by_owned_instance(events)?;
        let keys: Vec<(String, String)> = groups.iter().map(|(key, _)| key.clone()).collect();
        let mut folds: HashMap<(String, String), GroupFold> = load_owned_states(tx, "groups", "id", &keys).await?;
        let mut rows = RowSet::default();
        let mut members = RowSet::default();
        let mut rewritten: Vec<&(String, String)> = Vec::new();
        for (key, events) in &groups {
            let mut fold = folds.remove(key).unwrap_or_default();
            for recorded in events {
                let event: &GroupEvent = decode(recorded)?;
                match event {
                    GroupEvent::Created(e) => fold.created_at = micros(e.at),
                    GroupEvent::Deleted(e) => fold.deleted_at = Some(micros(e.at)),
                    GroupEvent::OrchestrationAdvanced(_) => fold.orchestration_steps += 1,
                    _ => {}
                }
                fold.group = std::mem::take(&mut fold.group).evolve(event);
                fold.updated_at = micros(recorded.recorded_at);
                fold.updated_position = recorded.position;
            }
            if fold.group.group_id.is_empty() {
                tracing::warn!(group = %key.1, owner = %key.0, "events for a group that was never created; skipped");
                continue;
            }
            // The row's owner is the stream's: the key it is loaded by next time.
            fold.group.user_id.clone_from(&key.0);
            rows.put(key.clone(), group_row(&fold)?);
            rewritten.push(key);
            for m in fold.group.members.values() {
                members.put(
                    (key.0.clone(), key.1.clone(), m.agent_id.clone()),
                    vec![
                        key.1.as_str().into(),
                        m.agent_id.as_str().into(),
                        key.0.as_str().into(),
                        wire_name(&m.role)?.into(),
                        m.enabled.into(),
                        m.order.into(),
                    ],
                );
            }
        }
        rows.upsert(tx, "groups", &GROUP_COLUMNS, &["user_id", "id"]).await?;
        // SQLite parses an OR chain one level deeper per term: keep chains short.
        for chunk in rewritten.chunks(400) {
            let terms: Vec<String> =
                (0..chunk.len()).map(|i| format!("(user_id = ${} AND group_id = ${})", 2 * i + 1, 2 * i + 2)).collect();
            let sql = format!("DELETE FROM group_members WHERE {}", terms.join(" OR "));
            let args: Vec<SqlValue> = chunk
                .iter()
                .flat_map(|(owner, id)| [SqlValue::from(owner.as_str()), SqlValue::from(id.as_str())])
                .collect();
            tx.execute(&sql, &args).await?;
        }
        members.upsert(tx, "group_members", &MEMBER_COLUMNS, &["user_id", "group_id", "agent_id"]).await
    }
}
