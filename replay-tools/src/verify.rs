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
//! The log is checked by [`crate::verify_log`], the read models are compared by
//! [`crate::verify_projections`].

use std::{collections::HashSet, process::ExitCode, sync::Arc};

use agentlog_eventlog::EventStore;
use anyhow::Context;
use serde::Serialize;

use crate::problem::Problem;
use crate::{options::Global, output, store, verify_log::verify_log, verify_projections};

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check the log only, not the read models.
    #[arg(long)]
    pub log_only: bool,
    /// Rows of the log read at a time (memory is about one page, whatever the log's size).
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(i64).range(1..=100_000))]
    pub page_size: i64,
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

/// Run every check.
pub async fn verify(store: &Arc<dyn EventStore>, database: &str, args: &Args, json: bool) -> anyhow::Result<Report> {
    let head = store.head_position().await.context("reading the log head")?;
    let bar = output::progress(u64::try_from(head).unwrap_or(0), "log", json);
    // The log's checks only read; they run beside the read models' rebuild, on the other core.
    let log_check = {
        let (store, bar, page_size) = (Arc::clone(store), bar.clone(), args.page_size);
        tokio::spawn(async move { verify_log(&*store, page_size, &bar).await })
    };
    let found = if args.log_only { None } else { Some(verify_projections::compare(store, database, json).await) };
    let (mut problems, events, streams, head) = log_check.await.context("checking the log")??;
    bar.finish_and_clear();
    let mut report = Report { events, streams, head, ..Report::default() };
    if let Some(found) = found {
        let found = found?;
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
    // Three readers: the log's checks, the scratch rebuild's reader of the log, and the
    // checksums of the live tables (the scratch database has its own).
    let store = store::open_with(&global.database, store::Access::Read, 3).await?;
    let result = verify(&store, &global.database, args, global.json).await;
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
