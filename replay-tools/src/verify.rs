//! `agentlog-replay verify`: check the log's invariants and that every read model equals a
//! fresh rebuild, and report each difference.
//!
//! The log is read as raw rows (not through the store's decoder), so a row that was tampered
//! with — even into something the store cannot decode — is reported, not fatal. Checks:
//! - positions are positive and strictly increasing;
//! - each stream's versions are 1, 2, 3 … in position order (no gap, repeat or swap);
//! - every `parentNodeId` names an earlier event of the same chain, and every `rootSourceId`
//!   names a source event (its own root, without a parent) at or before it;
//! - the indexed copies (`root_source_id`, `parent_node_id`, `user_id` columns) agree with the
//!   metadata; event ids and metadata parse;
//! - every payload decodes at its schema_version (upcasts included), and its event type belongs
//!   to its stream's kind.
//!
//! The read models are compared by [`crate::verify_projections`].

use std::{
    collections::{HashMap, HashSet},
    process::ExitCode,
    sync::Arc,
};

use agentlog_domain::{
    aggregate::StreamKind,
    envelope::EventMetadata,
    events::{decode_any, stream_kind_of},
};
use agentlog_eventlog::{DatabasePool, EventStore};
use anyhow::Context;
use indicatif::ProgressBar;
use serde::Serialize;
use sqlx::Row;
use uuid::Uuid;

use crate::{Global, output, store, verify_projections};

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check the log only, not the read models.
    #[arg(long)]
    pub log_only: bool,
}

/// Which check found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Positions positive and increasing.
    Positions,
    /// Stream versions contiguous.
    StreamVersions,
    /// parentNodeId / rootSourceId resolve.
    ChainLinks,
    /// Columns agree with the metadata; ids and metadata parse.
    Envelope,
    /// The payload decodes at its schema version.
    Payload,
    /// A read model differs from a fresh rebuild (or could not be rebuilt).
    ReadModel,
}

/// One difference found.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The check.
    pub check: Check,
    /// The stream, for log problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_id: Option<String>,
    /// The event's position, for log problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    /// The projection and table, for read-model problems (`projection.table`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// What is wrong.
    pub detail: String,
}

impl Problem {
    fn log(check: Check, row: &RawEvent, detail: impl Into<String>) -> Self {
        Self {
            check,
            stream_id: Some(row.stream_id.clone()),
            position: Some(row.position),
            table: None,
            detail: detail.into(),
        }
    }
}

/// What `verify` found.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Events read.
    pub events: u64,
    /// Streams seen.
    pub streams: u64,
    /// The last position read.
    pub head: i64,
    /// Read models compared with a rebuild, with the position compared at.
    pub projections: Vec<verify_projections::Compared>,
    /// Every difference.
    pub problems: Vec<Problem>,
    /// Things worth knowing that are not problems of the data.
    pub notes: Vec<String>,
}

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

const RAW_PAGE: i64 = 5_000;

async fn read_raw(db: &DatabasePool, after: i64) -> anyhow::Result<Vec<RawEvent>> {
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
            .bind(RAW_PAGE)
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
            .bind(RAW_PAGE)
            .fetch_all(pool)
            .await
            .context("reading the events table")?;
            decode!(rows)
        }
    })
}

/// The log checks, fed one row at a time in position order.
#[derive(Default)]
struct LogChecker {
    last_position: i64,
    /// stream → (version, position) of its last event.
    streams: HashMap<String, (i64, i64)>,
    /// event id → (position, root, is a source).
    events: HashMap<Uuid, (i64, Uuid, bool)>,
    /// (child row, root) whose root was not seen yet.
    pending_roots: Vec<(RawEvent, Uuid)>,
    /// (child row, parent) whose parent was not seen yet.
    pending_parents: Vec<(RawEvent, Uuid)>,
    problems: Vec<Problem>,
    count: u64,
}

fn parse_id(text: Option<&str>) -> Option<Uuid> {
    text.and_then(|t| Uuid::parse_str(t).ok())
}

impl LogChecker {
    fn check(&mut self, row: RawEvent) {
        self.count += 1;
        let mut problem = |check, detail: String| self.problems.push(Problem::log(check, &row, detail));
        if row.position <= 0 || row.position <= self.last_position {
            problem(Check::Positions, format!("position {} after {}", row.position, self.last_position));
        }
        self.last_position = self.last_position.max(row.position);

        let (last_version, _) = self.streams.get(&row.stream_id).copied().unwrap_or((0, 0));
        if row.stream_version != last_version + 1 {
            problem(
                Check::StreamVersions,
                format!(
                    "version {} follows version {last_version} (expected {})",
                    row.stream_version,
                    last_version + 1
                ),
            );
        }
        self.streams.insert(row.stream_id.clone(), (row.stream_version.max(last_version), row.position));

        let Some(event_id) = parse_id(row.event_id.as_deref()) else {
            problem(Check::Envelope, format!("event_id {:?} is not a UUID", row.event_id));
            return;
        };
        let metadata: Option<EventMetadata> = match row.metadata.as_deref().map(serde_json::from_str) {
            Some(Ok(m)) => Some(m),
            Some(Err(e)) => {
                problem(Check::Envelope, format!("metadata does not parse: {e}"));
                None
            }
            None => {
                problem(Check::Envelope, "metadata is missing".into());
                None
            }
        };
        let root_col = parse_id(row.root_source_id.as_deref());
        let parent_col = parse_id(row.parent_node_id.as_deref());
        if let Some(m) = &metadata {
            if root_col != Some(m.chain.root_source_id) {
                problem(
                    Check::Envelope,
                    format!(
                        "root_source_id column {:?} but metadata says {}",
                        row.root_source_id, m.chain.root_source_id
                    ),
                );
            }
            if parent_col != m.chain.parent_node_id {
                problem(
                    Check::Envelope,
                    format!(
                        "parent_node_id column {:?} but metadata says {:?}",
                        row.parent_node_id, m.chain.parent_node_id
                    ),
                );
            }
            if row.user_id.as_deref() != Some(m.user_id.as_str()) {
                problem(Check::Envelope, format!("user_id column {:?} but metadata says {:?}", row.user_id, m.user_id));
            }
        }
        // Chain links are checked on the metadata (what readers use), or the columns without it.
        let root = metadata.as_ref().map(|m| m.chain.root_source_id).or(root_col);
        let parent = metadata.as_ref().map_or(parent_col, |m| m.chain.parent_node_id);

        match row.payload.as_deref().map(serde_json::from_str::<serde_json::Value>) {
            Some(Ok(payload)) => {
                let schema = i32::try_from(row.schema_version).unwrap_or(0);
                if let Err(e) = decode_any(&row.event_type, schema, &payload) {
                    problem(Check::Payload, format!("{} v{} does not decode: {e}", row.event_type, row.schema_version));
                }
            }
            Some(Err(e)) => problem(Check::Payload, format!("payload is not JSON: {e}")),
            None => problem(Check::Payload, "payload is missing".into()),
        }
        let stream_kind = StreamKind::parse(&row.stream_id).map(|(k, _)| k);
        if let Some(kind) = stream_kind_of(&row.event_type)
            && stream_kind != Some(kind)
        {
            problem(
                Check::Payload,
                format!("a {} event in a stream that is not `{}-…`", row.event_type, kind.prefix()),
            );
        }

        let is_source = parent.is_none() && root == Some(event_id);
        if self.events.insert(event_id, (row.position, root.unwrap_or(event_id), is_source)).is_some() {
            problem(Check::Envelope, format!("event id {event_id} appears twice"));
        }
        if let Some(root) = root
            && root != event_id
        {
            match self.events.get(&root) {
                Some((_, _, true)) => {}
                Some(_) => problem(Check::ChainLinks, format!("rootSourceId {root} is not a source event")),
                None => self.pending_roots.push((row.clone(), root)),
            }
        } else if root == Some(event_id) && parent.is_some() {
            problem(Check::ChainLinks, "an event with a parent names itself as its root".into());
        }
        if let Some(parent) = parent {
            match self.events.get(&parent) {
                Some((_, parent_root, _)) if Some(*parent_root) != root => problem(
                    Check::ChainLinks,
                    format!("parentNodeId {parent} is in another chain (root {parent_root})"),
                ),
                Some(_) => {}
                None => self.pending_parents.push((row.clone(), parent)),
            }
        }
    }

    fn finish(mut self) -> (Vec<Problem>, u64, u64) {
        for (row, root) in std::mem::take(&mut self.pending_roots) {
            let detail = match self.events.get(&root) {
                Some((p, _, _)) => format!("rootSourceId {root} is at a later position ({p})"),
                None => format!("rootSourceId {root} resolves to no event"),
            };
            self.problems.push(Problem::log(Check::ChainLinks, &row, detail));
        }
        for (row, parent) in std::mem::take(&mut self.pending_parents) {
            let detail = match self.events.get(&parent) {
                Some((p, _, _)) => format!("parentNodeId {parent} is at a later position ({p})"),
                None => format!("parentNodeId {parent} resolves to no event"),
            };
            self.problems.push(Problem::log(Check::ChainLinks, &row, detail));
        }
        (self.problems, self.count, self.streams.len() as u64)
    }
}

/// Check the log's invariants (see the module doc); `bar` counts positions read.
pub async fn verify_log(store: &dyn EventStore, bar: &ProgressBar) -> anyhow::Result<(Vec<Problem>, u64, u64, i64)> {
    let db = store.database();
    let mut checker = LogChecker::default();
    let mut after = 0;
    loop {
        let rows = read_raw(&db, after).await?;
        let Some(last) = rows.last().map(|r| r.position) else { break };
        let full = rows.len() as i64 == RAW_PAGE;
        for row in rows {
            checker.check(row);
        }
        bar.set_position(u64::try_from(last).unwrap_or(0));
        after = last;
        if !full {
            break;
        }
    }
    let head = checker.last_position;
    let (problems, events, streams) = checker.finish();
    Ok((problems, events, streams, head))
}

/// Run every check.
pub async fn verify(store: &Arc<dyn EventStore>, database: &str, log_only: bool, json: bool) -> anyhow::Result<Report> {
    let head = store.head_position().await.context("reading the log head")?;
    let bar = output::progress(u64::try_from(head).unwrap_or(0), "log", json);
    let (mut problems, events, streams, head) = verify_log(&**store, &bar).await?;
    bar.finish_and_clear();
    let mut report = Report { events, streams, head, ..Report::default() };
    if !log_only {
        let found = verify_projections::compare(store, database, json).await?;
        problems.extend(found.problems);
        report.projections = found.compared;
        report.notes = found.notes;
    }
    let mut seen = HashSet::new();
    problems.retain(|p| seen.insert(p.clone()));
    report.problems = problems;
    Ok(report)
}

/// Run `verify`: exit 0 when everything holds, 1 with the report when anything differs.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    let store = store::open(&global.database, store::Create::No).await?;
    let result = verify(&store, &global.database, args.log_only, global.json).await;
    store.close().await;
    let report = result?;
    if global.json {
        output::print_json(&report)?;
    } else {
        let mut text =
            format!("log: {} events in {} streams, head at position {}\n", report.events, report.streams, report.head);
        for c in &report.projections {
            text.push_str(&format!("read model {} compared with a rebuild at position {}\n", c.projection, c.position));
        }
        for note in &report.notes {
            text.push_str(&format!("note: {note}\n"));
        }
        if report.problems.is_empty() {
            text.push_str("verify: OK, no differences\n");
        } else {
            let mut table = output::Table::new(["CHECK", "STREAM / TABLE", "POSITION", "DETAIL"]);
            for p in &report.problems {
                let check = serde_json::to_value(p.check).ok().and_then(|v| v.as_str().map(str::to_string));
                table.row([
                    check.unwrap_or_default(),
                    p.stream_id.clone().or_else(|| p.table.clone()).unwrap_or_default(),
                    p.position.map(|p| p.to_string()).unwrap_or_default(),
                    p.detail.clone(),
                ]);
            }
            text.push_str(&table.render());
            text.push_str(&format!("verify: {} problem(s) found\n", report.problems.len()));
        }
        output::print_text(&text)?;
    }
    if report.problems.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        if global.json {
            eprintln!("verify: {} problem(s) found", report.problems.len());
        }
        Ok(ExitCode::FAILURE)
    }
}
