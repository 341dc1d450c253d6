//! Importing events recorded by another log (a copy, a restore from an export): each event keeps
//! its event id, stream version and recording time, and its position when that is still above
//! everything the target holds.
//!
//! ```no_run
//! # async fn demo(from: &dyn agentlog_eventlog::EventStore, to: &dyn agentlog_eventlog::EventStore) -> Result<(), agentlog_eventlog::EventLogError> {
//! use agentlog_eventlog::EventFilter;
//! let page = from.read_all(0, &EventFilter::all(), 1_000).await?;
//! let first = to.import(page.clone()).await?;
//! let again = to.import(page).await?; // idempotent: nothing new
//! assert_eq!(again.imported, 0);
//! # Ok(()) }
//! ```
//!
//! The rules, judged for the whole call inside one append transaction (it takes the same lock as
//! appends, so it is ordered with them):
//! - an event whose id is already stored with the same stream, version, type, schema version,
//!   payload and metadata is skipped (re-running an import is a no-op); with anything else
//!   different it is an [`EventLogError::IdempotencyConflict`];
//! - a new event must continue its stream: its `stream_version` is the stream's version + 1,
//!   or the import is an [`EventLogError::Conflict`] (versions never get gaps);
//! - new events get positions in the order given: the event's own position if it is above the
//!   last position the target has handed out, the next one otherwise. Copying into an empty
//!   log therefore keeps every position.
//!
//! Everything is validated like an append first. The import is atomic: all new events or none.

use std::collections::HashMap;

use agentlog_domain::envelope::{NewEvent, RecordedEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{
    append::{ExpectedVersion, StreamAppend},
    batch::StoredEvent,
    error::EventLogError,
    validate::{Limits, PreparedEvent, prepare},
};

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportResult {
    /// Events written.
    pub imported: usize,
    /// Events already in the log with the same content (not written again).
    pub skipped: usize,
    /// Events whose position could not be kept (the target had already used it).
    pub renumbered: usize,
    /// The highest position written (0 when nothing was).
    pub last_position: i64,
}

/// A validated event to import, serialized once.
#[derive(Debug, Clone)]
pub(crate) struct PreparedImport {
    pub recorded: RecordedEvent,
    pub prepared: PreparedEvent,
}

/// Validate every event as an append would, and refuse an id given twice.
pub(crate) fn prepare_import(
    events: Vec<RecordedEvent>,
    limits: &Limits,
) -> Result<Vec<PreparedImport>, EventLogError> {
    let mut seen = std::collections::HashSet::with_capacity(events.len());
    let mut out = Vec::with_capacity(events.len());
    for recorded in events {
        if !seen.insert(recorded.event_id) {
            return Err(crate::error::ValidationError::DuplicateEventId(recorded.event_id).into());
        }
        let event = NewEvent {
            event_id: recorded.event_id,
            event_type: recorded.event_type.clone(),
            schema_version: recorded.schema_version,
            payload: recorded.payload.clone(),
            metadata: recorded.metadata.clone(),
        };
        let mut prepared = prepare(StreamAppend::new(&recorded.stream_id, ExpectedVersion::Any, vec![event]), limits)?;
        let prepared = prepared.pop().ok_or(crate::error::ValidationError::NoEvents)?;
        out.push(PreparedImport { recorded, prepared });
    }
    Ok(out)
}

/// A row to insert: the event with the position it gets.
#[derive(Debug)]
pub(crate) struct ImportRow<'a> {
    pub position: i64,
    pub event: &'a PreparedImport,
}

/// What an import will insert, and its answer.
#[derive(Debug)]
pub(crate) struct ImportPlan<'a> {
    pub rows: Vec<ImportRow<'a>>,
    pub result: ImportResult,
}

/// Judge an import against what the database holds: `stored` (events with the import's ids),
/// `versions` (current versions of its streams) and `last` (the last position handed out).
pub(crate) fn plan_import<'a>(
    events: &'a [PreparedImport],
    stored: &HashMap<Uuid, StoredEvent>,
    mut versions: HashMap<String, i64>,
    mut last: i64,
) -> Result<ImportPlan<'a>, EventLogError> {
    let mut rows = Vec::new();
    let mut result = ImportResult::default();
    for e in events {
        let r = &e.recorded;
        if let Some(s) = stored.get(&r.event_id) {
            let difference = if s.stream_id != r.stream_id {
                Some(format!("stored in stream `{}`, imported into `{}`", s.stream_id, r.stream_id))
            } else if s.stream_version != r.stream_version {
                Some(format!("stored at version {}, imported at {}", s.stream_version, r.stream_version))
            } else if s.event_type != r.event_type || s.schema_version != r.schema_version {
                Some("event type or schema version differs".into())
            } else if s.payload != r.payload {
                Some("payload differs".into())
            } else if s.metadata.as_ref() != Some(&r.metadata) {
                Some("metadata differs".into())
            } else {
                None
            };
            if let Some(detail) = difference {
                return Err(EventLogError::IdempotencyConflict { event_id: r.event_id, detail });
            }
            result.skipped += 1;
            continue;
        }
        let actual = versions.get(&r.stream_id).copied().unwrap_or(0);
        if r.stream_version != actual + 1 {
            return Err(EventLogError::Conflict {
                stream_id: r.stream_id.clone(),
                expected: ExpectedVersion::from_version(r.stream_version - 1),
                actual,
            });
        }
        versions.insert(r.stream_id.clone(), r.stream_version);
        let position = if r.position > last {
            r.position
        } else {
            result.renumbered += 1;
            last + 1
        };
        last = position;
        result.imported += 1;
        result.last_position = position;
        rows.push(ImportRow { position, event: e });
    }
    Ok(ImportPlan { rows, result })
}

#[cfg(test)]
mod tests {
    use agentlog_domain::envelope::{Actor, EventMetadata};
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use super::*;

    fn recorded(n: u128, stream: &str, version: i64, position: i64) -> RecordedEvent {
        let id = Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + n);
        RecordedEvent {
            position,
            event_id: id,
            stream_id: stream.into(),
            stream_version: version,
            event_type: "test.happened".into(),
            schema_version: 1,
            payload: json!({"n": n as u64}),
            metadata: EventMetadata::source(id, Actor::user("u"), "u", "user:u"),
            recorded_at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap_or_default(),
        }
    }

    fn stored(e: &RecordedEvent) -> StoredEvent {
        StoredEvent {
            position: e.position,
            stream_id: e.stream_id.clone(),
            stream_version: e.stream_version,
            event_type: e.event_type.clone(),
            schema_version: e.schema_version,
            payload: e.payload.clone(),
            metadata: Some(e.metadata.clone()),
        }
    }

    #[test]
    fn keeps_positions_above_the_head_and_renumbers_the_rest_in_order() {
        let events = prepare_import(
            vec![recorded(1, "s-a", 1, 3), recorded(2, "s-a", 2, 9), recorded(3, "s-b", 1, 12)],
            &Limits::default(),
        )
        .unwrap();
        let plan = plan_import(&events, &HashMap::new(), HashMap::new(), 5).unwrap();
        let positions: Vec<i64> = plan.rows.iter().map(|r| r.position).collect();
        assert_eq!(positions, vec![6, 9, 12]);
        assert_eq!(plan.result, ImportResult { imported: 3, skipped: 0, renumbered: 1, last_position: 12 });
    }

    #[test]
    fn skips_what_is_stored_and_refuses_what_differs_or_leaves_a_gap() {
        let a1 = recorded(1, "s-a", 1, 1);
        let a2 = recorded(2, "s-a", 2, 2);
        let known: HashMap<Uuid, StoredEvent> = [(a1.event_id, stored(&a1))].into();
        let versions: HashMap<String, i64> = [("s-a".to_string(), 1)].into();
        let events = prepare_import(vec![a1.clone(), a2.clone()], &Limits::default()).unwrap();
        let plan = plan_import(&events, &known, versions.clone(), 1).unwrap();
        assert_eq!((plan.result.imported, plan.result.skipped), (1, 1));

        let mut changed = a1.clone();
        changed.payload = json!({"n": 99});
        let events = prepare_import(vec![changed], &Limits::default()).unwrap();
        let err = plan_import(&events, &known, versions.clone(), 1).unwrap_err();
        assert!(matches!(err, EventLogError::IdempotencyConflict { .. }), "{err}");

        let gap = recorded(3, "s-a", 3, 3);
        let events = prepare_import(vec![gap], &Limits::default()).unwrap();
        let err = plan_import(&events, &known, versions, 1).unwrap_err();
        assert!(matches!(err, EventLogError::Conflict { actual: 1, .. }), "{err}");
    }

    #[test]
    fn an_id_twice_is_refused_before_the_database() {
        let a = recorded(1, "s-a", 1, 1);
        assert!(prepare_import(vec![a.clone(), a], &Limits::default()).is_err());
    }
}
