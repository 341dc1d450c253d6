//! The pure part of a group commit: given what the database already holds, decide for every
//! queued append whether it is new, an idempotent repeat, or refused, and which rows to insert.
//!
//! Appends are judged in arrival order; an accepted append moves its streams' versions forward
//! for the appends behind it in the same batch, exactly as if each had committed alone.

use std::collections::HashMap;

use agentlog_domain::envelope::EventMetadata;
use uuid::Uuid;

use crate::{
    append::AppendResult,
    error::EventLogError,
    validate::{PreparedAppend, PreparedEvent},
};

/// An event the database already holds, as far as idempotency needs it.
#[derive(Debug, Clone)]
pub(crate) struct StoredEvent {
    pub position: i64,
    pub stream_id: String,
    pub stream_version: i64,
    pub event_type: String,
    pub schema_version: i32,
    pub payload: serde_json::Value,
    pub metadata: Option<EventMetadata>,
}

impl StoredEvent {
    /// What differs between this stored event and `e` (None when they are the same event).
    fn difference(&self, e: &PreparedEvent) -> Option<&'static str> {
        let n = &e.event;
        if self.event_type != n.event_type {
            Some("event type differs")
        } else if self.schema_version != n.schema_version {
            Some("schema version differs")
        } else if self.payload != n.payload {
            Some("payload differs")
        } else if self.metadata.as_ref() != Some(&n.metadata) {
            Some("metadata differs")
        } else {
            None
        }
    }
}

/// What differs between two events of one batch with the same id.
fn batch_difference(a: &PreparedEvent, b: &PreparedEvent) -> Option<&'static str> {
    let (a, b) = (&a.event, &b.event);
    if a.event_type != b.event_type || a.schema_version != b.schema_version {
        Some("event type or schema version differs")
    } else if a.payload != b.payload {
        Some("payload differs")
    } else if a.metadata != b.metadata {
        Some("metadata differs")
    } else {
        None
    }
}

/// A row to insert.
#[derive(Debug)]
pub(crate) struct NewRow<'a> {
    pub stream_id: &'a str,
    pub stream_version: i64,
    pub event: &'a PreparedEvent,
}

/// How one append of the batch ends, before positions are known.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Refused; nothing of it is inserted.
    Refused(EventLogError),
    /// Its rows are in `Plan::rows`; positions are filled in after the insert.
    Accepted,
    /// Every event is already in the log (or earlier in this batch).
    Duplicate,
}

/// What to insert and how each append ends.
#[derive(Debug)]
pub(crate) struct Plan<'a> {
    pub rows: Vec<NewRow<'a>>,
    pub verdicts: Vec<Verdict>,
}

/// All event ids of a batch (for the idempotency lookup).
pub(crate) fn event_ids(batch: &[&PreparedAppend]) -> Vec<Uuid> {
    batch.iter().flat_map(|a| a.iter()).flat_map(|p| p.events.iter()).map(|e| e.event.event_id).collect()
}

/// All distinct stream ids of a batch (for the version lookup).
pub(crate) fn stream_ids(batch: &[&PreparedAppend]) -> Vec<String> {
    let mut ids: Vec<String> = batch.iter().flat_map(|a| a.iter()).map(|p| p.stream_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Judge every append of the batch against the stored state.
pub(crate) fn plan<'a>(
    batch: &[&'a PreparedAppend],
    stored: &HashMap<Uuid, StoredEvent>,
    mut versions: HashMap<String, i64>,
) -> Plan<'a> {
    let mut rows = Vec::new();
    let mut verdicts = Vec::with_capacity(batch.len());
    // ids accepted earlier in this batch: id -> (stream, event)
    let mut in_batch: HashMap<Uuid, (&str, &PreparedEvent)> = HashMap::new();
    for append in batch {
        let verdict = judge(append, stored, &in_batch, &versions);
        if let Verdict::Accepted = verdict {
            for part in append.iter() {
                let mut v = versions.get(&part.stream_id).copied().unwrap_or(0);
                for e in &part.events {
                    v += 1;
                    rows.push(NewRow { stream_id: &part.stream_id, stream_version: v, event: e });
                    in_batch.insert(e.event.event_id, (&part.stream_id, e));
                }
                versions.insert(part.stream_id.clone(), v);
            }
        }
        verdicts.push(verdict);
    }
    Plan { rows, verdicts }
}

fn judge(
    append: &PreparedAppend,
    stored: &HashMap<Uuid, StoredEvent>,
    in_batch: &HashMap<Uuid, (&str, &PreparedEvent)>,
    versions: &HashMap<String, i64>,
) -> Verdict {
    let (mut known, mut fresh) = (0usize, 0usize);
    for part in append {
        for e in &part.events {
            let id = e.event.event_id;
            let seen = match stored.get(&id) {
                Some(s) => Some((s.stream_id.as_str(), s.difference(e))),
                None => in_batch.get(&id).map(|(s, earlier)| (*s, batch_difference(earlier, e))),
            };
            match seen {
                None => fresh += 1,
                Some((stream, difference)) => {
                    if stream != part.stream_id {
                        return Verdict::Refused(EventLogError::IdempotencyConflict {
                            event_id: id,
                            detail: format!("stored in stream `{stream}`, re-appended to `{}`", part.stream_id),
                        });
                    }
                    if let Some(difference) = difference {
                        return Verdict::Refused(EventLogError::IdempotencyConflict {
                            event_id: id,
                            detail: difference.into(),
                        });
                    }
                    known += 1;
                }
            }
        }
    }
    if known > 0 && fresh > 0 {
        return Verdict::Refused(EventLogError::IdempotencyConflict {
            event_id: append
                .iter()
                .flat_map(|p| p.events.iter())
                .map(|e| e.event.event_id)
                .find(|id| stored.contains_key(id) || in_batch.contains_key(id))
                .unwrap_or_default(),
            detail: format!("{known} of the append's events are already in the log and {fresh} are not"),
        });
    }
    if known > 0 {
        return Verdict::Duplicate;
    }
    for part in append {
        let actual = versions.get(&part.stream_id).copied().unwrap_or(0);
        if !part.expected.admits(actual) {
            return Verdict::Refused(EventLogError::Conflict {
                stream_id: part.stream_id.clone(),
                expected: part.expected,
                actual,
            });
        }
    }
    Verdict::Accepted
}

/// Where an inserted or already stored event is: (position, stream_version).
pub(crate) type Located = HashMap<Uuid, (i64, i64)>;

/// Turn verdicts into answers once the inserted rows have positions.
pub(crate) fn answers(
    batch: &[&PreparedAppend],
    verdicts: Vec<Verdict>,
    located: &Located,
) -> Vec<Result<Vec<AppendResult>, EventLogError>> {
    batch
        .iter()
        .zip(verdicts)
        .map(|(append, verdict)| {
            let duplicate = match verdict {
                Verdict::Refused(e) => return Err(e),
                Verdict::Accepted => false,
                Verdict::Duplicate => true,
            };
            append
                .iter()
                .map(|part| {
                    let mut positions = Vec::with_capacity(part.events.len());
                    let mut stream_version = 0;
                    for e in &part.events {
                        let (pos, ver) =
                            located.get(&e.event.event_id).copied().ok_or_else(|| EventLogError::Corrupt {
                                position: 0,
                                reason: format!("event {} vanished during its append", e.event.event_id),
                            })?;
                        positions.push(pos);
                        stream_version = ver;
                    }
                    Ok(AppendResult { stream_id: part.stream_id.clone(), positions, stream_version, duplicate })
                })
                .collect()
        })
        .collect()
}
