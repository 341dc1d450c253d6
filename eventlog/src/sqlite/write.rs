//! Appends and imports on a SQLite connection of the log's own (`agentlog_sqlite`): each
//! statement runs on the calling thread — a blocking-pool thread, never a runtime worker — and
//! is kept prepared, and every event is a one-row `INSERT` bound in place.
//!
//! sqlx would hand each statement, each of its thousands of bound values and each row read back
//! to its worker thread and copy them; for a batch of thousands of events that cost more than
//! SQLite's own work, and a multi-row `INSERT` also needs a statement journal.

use std::collections::HashMap;

use agentlog_domain::envelope::EventMetadata;
use agentlog_sqlite::{Connection, SqlRef, SqliteFailure};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{
    backend::BatchAnswers,
    batch::{self, StoredEvent},
    error::EventLogError,
    import::{ImportResult, PreparedImport, plan_import},
    validate::PreparedAppend,
};

const INSERT_EVENT: &str = "INSERT INTO events (position, event_id, stream_id, stream_version, event_type, \
                            schema_version, payload, metadata, root_source_id, parent_node_id, user_id, recorded_at) \
                            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

const LAST_POSITION: &str = "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), \
                             (SELECT MAX(position) FROM events), 0)";

const STREAM_VERSION: &str = "SELECT MAX(stream_version) FROM events WHERE stream_id = ?1";

const STORED_EVENT: &str = "SELECT stream_id, stream_version, position, event_type, schema_version, payload, metadata \
                            FROM events WHERE event_id = ?1";

/// A UUID as the log's text (lower-case, hyphenated), written without `core::fmt`, to bind as
/// a borrowed `&str`.
pub(crate) struct UuidText([u8; uuid::fmt::Hyphenated::LENGTH]);

impl UuidText {
    pub(crate) fn new(id: Uuid) -> Self {
        let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
        id.hyphenated().encode_lower(&mut text);
        Self(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        // Hex digits and hyphens only: always UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The columns of one event row, borrowed from the event that fills it.
struct EventRow<'a> {
    position: i64,
    event_id: UuidText,
    stream_id: &'a str,
    stream_version: i64,
    event_type: &'a str,
    schema_version: i32,
    payload: &'a str,
    metadata_json: &'a str,
    root_source: UuidText,
    parent_node: Option<UuidText>,
    user_id: &'a str,
    recorded_at: i64,
}

impl EventRow<'_> {
    fn ids(event_id: Uuid, metadata: &EventMetadata) -> (UuidText, UuidText, Option<UuidText>) {
        (
            UuidText::new(event_id),
            UuidText::new(metadata.chain.root_source_id),
            metadata.chain.parent_node_id.map(UuidText::new),
        )
    }

    fn bind<'r>(&'r self, values: &mut Vec<SqlRef<'r>>) {
        values.extend([
            SqlRef::Int(self.position),
            SqlRef::Text(self.event_id.as_str()),
            SqlRef::Text(self.stream_id),
            SqlRef::Int(self.stream_version),
            SqlRef::Text(self.event_type),
            SqlRef::Int(self.schema_version.into()),
            SqlRef::Text(self.payload),
            SqlRef::Text(self.metadata_json),
            SqlRef::Text(self.root_source.as_str()),
            self.parent_node.as_ref().map(UuidText::as_str).into(),
            SqlRef::Text(self.user_id),
            SqlRef::Int(self.recorded_at),
        ]);
    }
}

pub(crate) fn failed(context: &'static str) -> impl FnOnce(SqliteFailure) -> EventLogError {
    move |source| EventLogError::Sqlite { context, source }
}

/// Run `body` in a `BEGIN IMMEDIATE` transaction (the write lock up front, so its reads see
/// what it writes on): committed when it succeeds, rolled back when it or the commit fails.
fn in_transaction<T>(
    conn: &mut Connection,
    body: impl FnOnce(&mut Connection) -> Result<T, EventLogError>,
) -> Result<T, EventLogError> {
    if conn.in_transaction() {
        // A transaction whose commit and rollback both failed: end it first.
        conn.execute("ROLLBACK", &[]).map_err(failed("rolling back"))?;
    }
    conn.execute("BEGIN IMMEDIATE", &[]).map_err(failed("starting an append transaction"))?;
    let done = body(conn).and_then(|value| conn.execute("COMMIT", &[]).map(|_| value).map_err(failed("committing")));
    if done.is_err() && conn.in_transaction() {
        let _ = conn.execute("ROLLBACK", &[]);
    }
    done
}

/// Judge and insert a batch of appends in one transaction.
pub(crate) fn commit_batch(
    conn: &mut Connection,
    batch: &[&PreparedAppend],
    now: DateTime<Utc>,
) -> Result<BatchAnswers, EventLogError> {
    in_transaction(conn, |conn| {
        let Known { stored, versions, last } = load_state(conn, &batch::event_ids(batch), &batch::stream_ids(batch))?;
        let plan = batch::plan(batch, &stored, versions);
        let mut located: batch::Located = stored.iter().map(|(id, s)| (*id, (s.position, s.stream_version))).collect();
        let recorded_at = now.timestamp_micros();
        let mut position = last;
        let rows = plan.rows.iter().map(|row| {
            position += 1;
            let e = &row.event.event;
            located.insert(e.event_id, (position, row.stream_version));
            let (event_id, root_source, parent_node) = EventRow::ids(e.event_id, &e.metadata);
            EventRow {
                position,
                event_id,
                stream_id: row.stream_id,
                stream_version: row.stream_version,
                event_type: e.event_type.as_str(),
                schema_version: e.schema_version,
                payload: row.event.payload_json.as_str(),
                metadata_json: row.event.metadata_json.as_str(),
                root_source,
                parent_node,
                user_id: e.metadata.user_id.as_str(),
                recorded_at,
            }
        });
        conn.run_per_row_with(INSERT_EVENT, rows, EventRow::bind).map_err(failed("inserting events"))?;
        Ok(batch::answers(batch, plan.verdicts, &located))
    })
}

/// Import events recorded elsewhere in one transaction.
pub(crate) fn import(conn: &mut Connection, events: &[PreparedImport]) -> Result<ImportResult, EventLogError> {
    in_transaction(conn, |conn| {
        let ids: Vec<Uuid> = events.iter().map(|e| e.recorded.event_id).collect();
        let mut streams: Vec<String> = events.iter().map(|e| e.recorded.stream_id.clone()).collect();
        streams.sort_unstable();
        streams.dedup();
        let Known { stored, versions, last } = load_state(conn, &ids, &streams)?;
        let plan = plan_import(events, &stored, versions, last)?;
        let rows = plan.rows.iter().map(|row| {
            let r = &row.event.recorded;
            let (event_id, root_source, parent_node) = EventRow::ids(r.event_id, &r.metadata);
            EventRow {
                position: row.position,
                event_id,
                stream_id: r.stream_id.as_str(),
                stream_version: r.stream_version,
                event_type: r.event_type.as_str(),
                schema_version: r.schema_version,
                payload: row.event.prepared.payload_json.as_str(),
                metadata_json: row.event.prepared.metadata_json.as_str(),
                root_source,
                parent_node,
                user_id: r.metadata.user_id.as_str(),
                recorded_at: r.recorded_at.timestamp_micros(),
            }
        });
        conn.run_per_row_with(INSERT_EVENT, rows, EventRow::bind).map_err(failed("inserting imported events"))?;
        Ok(plan.result)
    })
}

/// What the database holds that a batch needs.
struct Known {
    /// Stored events with the batch's ids.
    stored: HashMap<Uuid, StoredEvent>,
    /// The current versions of the batch's streams that exist.
    versions: HashMap<String, i64>,
    /// The last position handed out.
    last: i64,
}

/// Read what the database holds that a batch needs: one indexed lookup per id and per stream,
/// on statements kept prepared.
fn load_state(conn: &mut Connection, ids: &[Uuid], streams: &[String]) -> Result<Known, EventLogError> {
    let mut last = 0;
    conn.for_each_row_refs(LAST_POSITION, &[], &mut |row| last = row.i64(0).unwrap_or(0))
        .map_err(failed("reading the log head"))?;
    let mut versions = HashMap::with_capacity(streams.len());
    for stream in streams {
        let mut version = None;
        conn.for_each_row_refs(STREAM_VERSION, &[SqlRef::Text(stream)], &mut |row| version = row.i64(0))
            .map_err(failed("reading stream versions"))?;
        if let Some(version) = version {
            versions.insert(stream.clone(), version);
        }
    }
    let mut stored = HashMap::new();
    for &id in ids {
        let text = UuidText::new(id);
        conn.for_each_row_refs(STORED_EVENT, &[SqlRef::Text(text.as_str())], &mut |row| {
            stored.insert(
                id,
                StoredEvent {
                    stream_id: row.str(0).unwrap_or_default().to_string(),
                    stream_version: row.i64(1).unwrap_or(0),
                    position: row.i64(2).unwrap_or(0),
                    event_type: row.str(3).unwrap_or_default().to_string(),
                    schema_version: row.i64(4).and_then(|v| i32::try_from(v).ok()).unwrap_or(0),
                    payload: row.json(5).unwrap_or(serde_json::Value::Null),
                    metadata: row.str(6).and_then(|m| serde_json::from_str(m).ok()),
                },
            );
        })
        .map_err(failed("reading event ids"))?;
    }
    Ok(Known { stored, versions, last })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_is_the_hyphenated_lower_case_form() {
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_eq!(UuidText::new(id).as_str(), id.to_string());
    }
}
