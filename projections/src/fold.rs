//! Batch folding, shared by the read models whose rows are an aggregate's state: load every row
//! a batch touches with one query, fold the batch's events in memory, write back with
//! multi-row upserts.
//!
//! Such a table keeps the fold's continuation (the domain state, serialized) in a `state` TEXT
//! column next to the queryable columns derived from it, so applying the next batch starts
//! exactly where the last one stopped, with the domain's own `evolve`.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    db::{ReadTx, SqlValue},
    decoding::{DecodedEvent, OwnedKey, stream_entity, stream_owner},
    error::ProjectionError,
};

/// The `state` column of the rows of a table keyed by `(user_id, key_column)` (ids per owner)
/// with these keys, by key.
///
/// Looked up by the whole key: an id alone does not lead the primary key, and a lookup by it
/// scans the table, a cost that grows with the read model.
pub(crate) async fn load_owned_states<S: DeserializeOwned>(
    tx: &mut ReadTx,
    table: &str,
    key_column: &str,
    keys: &[(String, String)],
) -> Result<HashMap<(String, String), S>, ProjectionError> {
    let mut out = HashMap::with_capacity(keys.len());
    let select = format!("SELECT user_id, {key_column}, state FROM {table}");
    for row in tx.fetch_keyed(&select, &["user_id", key_column], &owned_key_values(keys)).await? {
        let (Some(owner), Some(id), Some(text)) = (row.str(0), row.str(1), row.str(2)) else {
            return Err(ProjectionError::Invalid(format!("{table}: a row without key or state")));
        };
        let state = serde_json::from_str(text)
            .map_err(|e| ProjectionError::Invalid(format!("{table} row `{id}`: stored state unreadable: {e}")))?;
        out.insert((owner.to_string(), id.to_string()), state);
    }
    Ok(out)
}

/// `(owner, id)` keys as the values of `["user_id", <id column>]`, for
/// [`ReadTx::fetch_keyed`].
pub(crate) fn owned_key_values(keys: &[(String, String)]) -> Vec<Vec<SqlValue>> {
    keys.iter().map(|(owner, id)| vec![SqlValue::from(owner.as_str()), SqlValue::from(id.as_str())]).collect()
}

/// Serialize to JSON text (for a TEXT column).
pub(crate) fn json_text<T: Serialize + ?Sized>(value: &T) -> Result<String, ProjectionError> {
    serde_json::to_string(value)
        .map_err(|e| ProjectionError::Invalid(format!("cannot serialize a read-model value: {e}")))
}

/// Serialize to JSON text, NULL when absent.
pub(crate) fn json_opt<T: Serialize>(value: Option<&T>) -> Result<SqlValue, ProjectionError> {
    Ok(value.map(json_text).transpose()?.into())
}

/// The wire name of a unit enum variant (its serde name: `waiting_for_human`, `subagent`, …).
pub(crate) fn wire_name<T: Serialize>(value: &T) -> Result<String, ProjectionError> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        Ok(other) => Err(ProjectionError::Invalid(format!("expected a unit variant, got {other}"))),
        Err(e) => Err(ProjectionError::Invalid(format!("cannot name an enum value: {e}"))),
    }
}

/// A time as epoch microseconds.
pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// An unsigned count or measure as a BIGINT (saturating: read models never wrap).
pub(crate) fn int(value: u64) -> SqlValue {
    SqlValue::Int(i64::try_from(value).unwrap_or(i64::MAX))
}

/// An optional unsigned measure as a BIGINT or NULL.
pub(crate) fn int_opt(value: Option<u64>) -> SqlValue {
    value.map_or(SqlValue::Null, int)
}

/// Rows for one table, keyed so a row written twice in one batch is written once (PostgreSQL
/// refuses an upsert that touches the same row twice), in key order.
#[derive(Debug)]
pub(crate) struct RowSet<K: Ord> {
    rows: BTreeMap<K, Vec<SqlValue>>,
}

impl<K: Ord> Default for RowSet<K> {
    fn default() -> Self {
        Self { rows: BTreeMap::new() }
    }
}

impl<K: Ord> RowSet<K> {
    /// Set the row of `key` (the last write wins).
    pub(crate) fn put(&mut self, key: K, row: Vec<SqlValue>) {
        self.rows.insert(key, row);
    }

    /// Upsert every row into `table`.
    pub(crate) async fn upsert(
        self,
        tx: &mut ReadTx,
        table: &str,
        columns: &[&str],
        key: &[&str],
    ) -> Result<(), ProjectionError> {
        let rows: Vec<Vec<SqlValue>> = self.rows.into_values().collect();
        tx.upsert(table, columns, key, &rows).await
    }
}

/// One instance's events in a batch.
pub(crate) type OwnedGroup<'a> = (OwnedKey, Vec<&'a DecodedEvent>);

/// Events grouped by owner and instance id (a kind whose ids are per owner), each group in log
/// order, groups in order of first appearance.
///
/// The key is worked out once per stream, not per event (a batch holds many events of few
/// streams); two streams naming one instance (a legacy global stream and its owned successor)
/// share a group.
pub(crate) fn group_by_owned_instance<'a>(events: &[&'a DecodedEvent]) -> Result<Vec<OwnedGroup<'a>>, ProjectionError> {
    let mut by_stream: HashMap<&'a str, usize> = HashMap::new();
    let mut by_key: HashMap<OwnedKey, usize> = HashMap::new();
    let mut groups: Vec<OwnedGroup<'a>> = Vec::new();
    for event in events {
        let i = match by_stream.get(event.stream_id.as_str()) {
            Some(&i) => i,
            None => {
                let key = (stream_owner(event), stream_entity(event)?.to_string());
                let i = match by_key.get(&key) {
                    Some(&i) => i,
                    None => {
                        by_key.insert(key.clone(), groups.len());
                        groups.push((key, Vec::new()));
                        groups.len() - 1
                    }
                };
                by_stream.insert(event.stream_id.as_str(), i);
                i
            }
        };
        groups[i].1.push(*event);
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::decoding::tests::event_at;

    fn event(position: i64, stream_id: &str, owner: &str) -> DecodedEvent {
        let recorded = event_at(position, stream_id, owner, "operation.step_recorded", serde_json::Value::Null);
        DecodedEvent::undecoded(Arc::new(recorded))
    }

    #[test]
    fn groups_by_instance_in_log_order_whatever_the_stream_id() {
        let events = [
            event(1, "operation@u1/a", "u1"),
            event(2, "operation@u2/a", "u2"),
            event(3, "operation-a", "u1"),
            event(4, "operation@u1/b", "u1"),
            event(5, "operation@u1/a", "u1"),
        ];
        let refs: Vec<&DecodedEvent> = events.iter().collect();
        let groups = group_by_owned_instance(&refs).unwrap();
        let seen: Vec<(OwnedKey, Vec<i64>)> =
            groups.into_iter().map(|(key, events)| (key, events.iter().map(|e| e.position).collect())).collect();
        let key = |owner: &str, id: &str| (owner.to_string(), id.to_string());
        // A legacy global stream and the owned one naming the same instance share a group.
        assert_eq!(seen, vec![(key("u1", "a"), vec![1, 3, 5]), (key("u2", "a"), vec![2]), (key("u1", "b"), vec![4])]);
    }
}
