//! The log half of `verify`, in memory that does not grow with the log.
//!
//! The events table is read as raw rows a page at a time (a tampered row is reported, not
//! fatal). Each row's own checks need nothing else: position order, event id and metadata
//! parsing, the indexed columns against the metadata, the payload at its schema version, the
//! event type against the stream's kind. What a row refers to — its chain's root, its parent,
//! the previous version of its stream — is looked up by key once the page is read: in the page
//! itself, else in the events table (one indexed query per page for ids, one for versions). So a
//! verify of ten million events holds one page, never a map of every event or stream.
//!
//! A referenced event is judged by its indexed columns (`root_source_id`, `parent_node_id`): its
//! own row's check reports when those disagree with its metadata. A row's own links are read
//! from its metadata (what readers use), or from the columns when the metadata is unreadable.

use std::collections::{HashMap, HashSet};

use agentlog_domain::streams::StreamKind;
use agentlog_domain::{
    envelope::EventMetadata,
    events::{decode_any, stream_kind_of},
};
use agentlog_eventlog::{DatabasePool, EventStore};
use anyhow::Context;
use indicatif::ProgressBar;
use sqlx::Row;
use uuid::Uuid;

use crate::problem::{Check, Problem};

/// One row of the events table as stored, before any decoding.
#[derive(Debug, Clone)]
struct RawEvent {
    position: i64,
    event_id: Option<String>,
    stream_id: String,
    stream_version: i64,
    event_type: String,
    schema_version: i64,
    payload: Option<String>,
    metadata: Option<String>,
    root_source_id: Option<String>,
    parent_node_id: Option<String>,
    user_id: Option<String>,
}

fn problem(check: Check, row: &RawEvent, detail: impl Into<String>) -> Problem {
    Problem {
        check,
        stream_id: Some(row.stream_id.clone()),
        position: Some(row.position),
        table: None,
        detail: detail.into(),
    }
}

async fn read_raw(db: &DatabasePool, after: i64, page: i64) -> anyhow::Result<Vec<RawEvent>> {
    // Text columns are read as optional text: a tampered NULL or number must be reported, not fatal.
    macro_rules! decode {
        ($rows:expr) => {
            $rows
                .iter()
                .map(|r| RawEvent {
                    position: r.try_get(0).unwrap_or(0),
                    event_id: r.try_get(1).ok().flatten(),
                    stream_id: r.try_get::<Option<String>, _>(2).ok().flatten().unwrap_or_default(),
                    stream_version: r.try_get(3).unwrap_or(0),
                    event_type: r.try_get::<Option<String>, _>(4).ok().flatten().unwrap_or_default(),
                    schema_version: r.try_get(5).unwrap_or(0),
                    payload: r.try_get(6).ok().flatten(),
                    metadata: r.try_get(7).ok().flatten(),
                    root_source_id: r.try_get(8).ok().flatten(),
                    parent_node_id: r.try_get(9).ok().flatten(),
                    user_id: r.try_get(10).ok().flatten(),
                })
                .collect()
        };
    }
    Ok(match db {
        DatabasePool::Sqlite(pool) => {
            let rows = sqlx::query(
                "SELECT position, event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, \
                 root_source_id, parent_node_id, user_id FROM events WHERE position > ? ORDER BY position LIMIT ?",
            )
            .bind(after)
            .bind(page)
            .fetch_all(pool)
            .await
            .context("reading the events table")?;
            decode!(rows)
        }
        DatabasePool::Postgres(pool) => {
            let rows = sqlx::query(
                "SELECT position, event_id::text, stream_id, stream_version, event_type, schema_version::int8, \
                 payload::text, metadata::text, root_source_id::text, parent_node_id::text, user_id FROM events \
                 WHERE position > $1 ORDER BY position LIMIT $2",
            )
            .bind(after)
            .bind(page)
            .fetch_all(pool)
            .await
            .context("reading the events table")?;
            decode!(rows)
        }
    })
}

fn parse_id(text: Option<&str>) -> Option<Uuid> {
    text.and_then(|t| Uuid::parse_str(t).ok())
}

/// An event as something else refers to it.
#[derive(Debug, Clone, Copy)]
struct Target {
    position: i64,
    /// Its chain's root (its own id when the column is unreadable).
    root: Uuid,
    /// A source event: no parent, its own root.
    is_source: bool,
}

impl Target {
    fn of(id: Uuid, position: i64, root: Option<&str>, parent: Option<&str>) -> Self {
        let root = parse_id(root).unwrap_or(id);
        Self { position, root, is_source: parent.is_none() && root == id }
    }
}

/// A row's links, checked once its page is complete.
struct Links {
    row: usize,
    event_id: Uuid,
    root: Option<Uuid>,
    parent: Option<Uuid>,
}

/// `(event_id, position, root_source_id, parent_node_id)` as read by [`lookup_events`].
type ReferencedRow = (Option<String>, i64, Option<String>, Option<String>);

/// Look up events by id in the table: id → where it is.
async fn lookup_events(db: &DatabasePool, ids: &HashSet<Uuid>) -> anyhow::Result<HashMap<Uuid, Target>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<ReferencedRow> = match db {
        DatabasePool::Sqlite(pool) => {
            let list = serde_json::to_string(&ids.iter().map(Uuid::to_string).collect::<Vec<_>>())?;
            sqlx::query_as(
                "SELECT event_id, position, root_source_id, parent_node_id FROM events \
                 WHERE event_id IN (SELECT value FROM json_each(?))",
            )
            .bind(list)
            .fetch_all(pool)
            .await
        }
        DatabasePool::Postgres(pool) => {
            let list: Vec<Uuid> = ids.iter().copied().collect();
            sqlx::query_as(
                "SELECT event_id::text, position, root_source_id::text, parent_node_id::text FROM events \
                 WHERE event_id = ANY($1::uuid[])",
            )
            .bind(list)
            .fetch_all(pool)
            .await
        }
    }
    .context("looking up referenced events")?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, position, root, parent)| {
            let id = parse_id(id.as_deref())?;
            Some((id, Target::of(id, position, root.as_deref(), parent.as_deref())))
        })
        .collect())
}

/// Look up stream versions in the table: (stream, version) → position.
async fn lookup_versions(
    db: &DatabasePool,
    keys: &HashSet<(String, i64)>,
) -> anyhow::Result<HashMap<(String, i64), i64>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(String, i64, i64)> = match db {
        DatabasePool::Sqlite(pool) => {
            let list = serde_json::to_string(&keys.iter().collect::<Vec<_>>())?;
            sqlx::query_as(
                "SELECT e.stream_id, e.stream_version, e.position FROM json_each(?) AS k \
                 JOIN events e ON e.stream_id = json_extract(k.value, '$[0]') \
                 AND e.stream_version = json_extract(k.value, '$[1]')",
            )
            .bind(list)
            .fetch_all(pool)
            .await
        }
        DatabasePool::Postgres(pool) => {
            let (streams, versions): (Vec<String>, Vec<i64>) = keys.iter().cloned().unzip();
            sqlx::query_as(
                "SELECT e.stream_id, e.stream_version, e.position FROM UNNEST($1::text[], $2::bigint[]) AS k(s, v) \
                 JOIN events e ON e.stream_id = k.s AND e.stream_version = k.v",
            )
            .bind(streams)
            .bind(versions)
            .fetch_all(pool)
            .await
        }
    }
    .context("looking up stream versions")?;
    Ok(rows.into_iter().map(|(s, v, p)| ((s, v), p)).collect())
}

/// The log checks, a page at a time in position order.
#[derive(Default)]
struct LogChecker {
    last_position: i64,
    problems: Vec<Problem>,
    count: u64,
}

impl LogChecker {
    /// A row's own checks; answers its links to check with its page.
    fn check_row(&mut self, index: usize, row: &RawEvent) -> Option<Links> {
        self.count += 1;
        let mut report = |check, detail: String| self.problems.push(problem(check, row, detail));
        if row.position <= 0 || row.position <= self.last_position {
            report(Check::Positions, format!("position {} after {}", row.position, self.last_position));
        }
        self.last_position = self.last_position.max(row.position);
        if row.stream_version < 1 {
            report(Check::StreamVersions, format!("version {} (versions start at 1)", row.stream_version));
        }
        let Some(event_id) = parse_id(row.event_id.as_deref()) else {
            report(Check::Envelope, format!("event_id {:?} is not a UUID", row.event_id));
            return None;
        };
        let metadata: Option<EventMetadata> = match row.metadata.as_deref().map(serde_json::from_str) {
            Some(Ok(m)) => Some(m),
            Some(Err(e)) => {
                report(Check::Envelope, format!("metadata does not parse: {e}"));
                None
            }
            None => {
                report(Check::Envelope, "metadata is missing".into());
                None
            }
        };
        let root_col = parse_id(row.root_source_id.as_deref());
        let parent_col = parse_id(row.parent_node_id.as_deref());
        if let Some(m) = &metadata {
            if root_col != Some(m.chain.root_source_id) {
                report(
                    Check::Envelope,
                    format!(
                        "root_source_id column {:?} but metadata says {}",
                        row.root_source_id, m.chain.root_source_id
                    ),
                );
            }
            if parent_col != m.chain.parent_node_id {
                report(
                    Check::Envelope,
                    format!(
                        "parent_node_id column {:?} but metadata says {:?}",
                        row.parent_node_id, m.chain.parent_node_id
                    ),
                );
            }
            if row.user_id.as_deref() != Some(m.user_id.as_str()) {
                report(Check::Envelope, format!("user_id column {:?} but metadata says {:?}", row.user_id, m.user_id));
            }
        }
        match row.payload.as_deref().map(serde_json::from_str::<serde_json::Value>) {
            Some(Ok(payload)) => {
                let schema = i32::try_from(row.schema_version).unwrap_or(0);
                if let Err(e) = decode_any(&row.event_type, schema, &payload) {
                    report(Check::Payload, format!("{} v{} does not decode: {e}", row.event_type, row.schema_version));
                }
            }
            Some(Err(e)) => report(Check::Payload, format!("payload is not JSON: {e}")),
            None => report(Check::Payload, "payload is missing".into()),
        }
        let stream_kind = StreamKind::parse(&row.stream_id).map(|(k, _)| k);
        if let Some(kind) = stream_kind_of(&row.event_type)
            && stream_kind != Some(kind)
        {
            report(Check::Payload, format!("a {} event in a stream that is not `{}-…`", row.event_type, kind.prefix()));
        }
        Some(Links {
            row: index,
            event_id,
            root: metadata.as_ref().map(|m| m.chain.root_source_id).or(root_col),
            parent: metadata.as_ref().map_or(parent_col, |m| m.chain.parent_node_id),
        })
    }

    /// Check one page: each row alone, then every row's links and stream predecessor, looked up
    /// in the page first and in the table for the rest.
    async fn check_page(&mut self, db: &DatabasePool, rows: &[RawEvent]) -> anyhow::Result<()> {
        let mut links = Vec::with_capacity(rows.len());
        let mut here: HashMap<Uuid, Target> = HashMap::with_capacity(rows.len());
        let mut versions_here: HashMap<(&str, i64), i64> = HashMap::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            versions_here.insert((row.stream_id.as_str(), row.stream_version), row.position);
            let Some(l) = self.check_row(i, row) else { continue };
            let target =
                Target::of(l.event_id, row.position, row.root_source_id.as_deref(), row.parent_node_id.as_deref());
            if here.insert(l.event_id, target).is_some() {
                self.problems.push(problem(Check::Envelope, row, format!("event id {} appears twice", l.event_id)));
            }
            links.push(l);
        }
        let wanted: HashSet<Uuid> = links
            .iter()
            .flat_map(|l| [l.root.filter(|r| *r != l.event_id), l.parent])
            .flatten()
            .filter(|id| !here.contains_key(id))
            .collect();
        let found = lookup_events(db, &wanted).await?;
        let wanted_versions: HashSet<(String, i64)> = rows
            .iter()
            .filter(|r| {
                r.stream_version > 1 && !versions_here.contains_key(&(r.stream_id.as_str(), r.stream_version - 1))
            })
            .map(|r| (r.stream_id.clone(), r.stream_version - 1))
            .collect();
        let found_versions = lookup_versions(db, &wanted_versions).await?;

        for row in rows.iter().filter(|r| r.stream_version > 1) {
            let previous = row.stream_version - 1;
            let at = versions_here
                .get(&(row.stream_id.as_str(), previous))
                .or_else(|| found_versions.get(&(row.stream_id.clone(), previous)));
            let detail = match at {
                None => format!("version {} follows no version {previous} (the stream has a gap)", row.stream_version),
                Some(&p) if p >= row.position => {
                    format!("version {} comes before version {previous} (at position {p})", row.stream_version)
                }
                Some(_) => continue,
            };
            self.problems.push(problem(Check::StreamVersions, row, detail));
        }
        for l in &links {
            let row = &rows[l.row];
            let target = |id: &Uuid| here.get(id).or_else(|| found.get(id)).copied();
            if let Some(root) = l.root
                && root != l.event_id
            {
                let detail = match target(&root) {
                    None => Some(format!("rootSourceId {root} resolves to no event")),
                    Some(t) if t.position > row.position => {
                        Some(format!("rootSourceId {root} is at a later position ({})", t.position))
                    }
                    Some(t) if !t.is_source => Some(format!("rootSourceId {root} is not a source event")),
                    Some(_) => None,
                };
                if let Some(d) = detail {
                    self.problems.push(problem(Check::ChainLinks, row, d));
                }
            } else if l.root == Some(l.event_id) && l.parent.is_some() {
                self.problems.push(problem(Check::ChainLinks, row, "an event with a parent names itself as its root"));
            }
            if let Some(parent) = l.parent {
                let detail = match target(&parent) {
                    None => Some(format!("parentNodeId {parent} resolves to no event")),
                    Some(t) if t.position > row.position => {
                        Some(format!("parentNodeId {parent} is at a later position ({})", t.position))
                    }
                    Some(t) if Some(t.root) != l.root => {
                        Some(format!("parentNodeId {parent} is in another chain (root {})", t.root))
                    }
                    Some(_) => None,
                };
                if let Some(d) = detail {
                    self.problems.push(problem(Check::ChainLinks, row, d));
                }
            }
        }
        Ok(())
    }
}

/// Streams in the log (counted by the database).
async fn count_streams(db: &DatabasePool) -> anyhow::Result<u64> {
    let sql = "SELECT COUNT(DISTINCT stream_id) FROM events";
    let n: i64 = match db {
        DatabasePool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
        DatabasePool::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
    }
    .context("counting streams")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Check the log's invariants (see the module doc), reading `page` rows at a time; `bar` counts
/// positions read. Answers the problems, the events and streams read, and the last position.
pub async fn verify_log(
    store: &dyn EventStore,
    page: i64,
    bar: &ProgressBar,
) -> anyhow::Result<(Vec<Problem>, u64, u64, i64)> {
    let db = store.database();
    let mut checker = LogChecker::default();
    let mut after = 0;
    loop {
        let rows = read_raw(&db, after, page).await?;
        let Some(last) = rows.last().map(|r| r.position) else { break };
        let full = rows.len() as i64 == page;
        checker.check_page(&db, &rows).await?;
        bar.set_position(u64::try_from(last).unwrap_or(0));
        after = last;
        if !full {
            break;
        }
    }
    let streams = count_streams(&db).await?;
    Ok((checker.problems, checker.count, streams, checker.last_position))
}
