//! `agentlog-replay rebuild [--projection NAME]`: empty one read model (or all) and apply the
//! log again from position 0 as a bulk load (`ProjectionRunner::rebuild_bulk`: batches of
//! 50,000, secondary indexes dropped and created again at the end, projections in parallel —
//! on SQLite in one transaction per 200,000 events), with a progress bar. A running server
//! notices the checkpoint move back and applies along from the committed checkpoints (each
//! event once), but its queries see the read model empty and filling meanwhile, and on SQLite
//! its appends wait for each of the rebuild's transactions (a second or two): stop it first
//! for a quiet rebuild.

use std::{process::ExitCode, sync::Arc, time::Instant};

use agentlog_eventlog::EventStore;
use agentlog_projections::{ProjectionRunner, ReadDb, RunnerOptions, all_projections};
use anyhow::{Context, bail};
use serde::Serialize;

use crate::{options::Global, output, store};

/// Arguments of `rebuild`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this read model (default: all); an unknown name is refused with the list of them.
    #[arg(long)]
    pub projection: Option<String>,
}

/// What a rebuild did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rebuilt {
    /// The read models rebuilt.
    pub projections: Vec<String>,
    /// The position they reached (the log's head when it started).
    pub position: i64,
    /// Wall time, in milliseconds.
    pub millis: u64,
    /// Where the time went: waiting for the log reader, committing, each read model's `apply`
    /// and creating the dropped indexes again (milliseconds).
    pub spent: Spent,
}

/// Where a rebuild's time went, in milliseconds.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spent {
    /// Waiting for pages of the log.
    pub reading_log: u64,
    /// Writing checkpoints and committing.
    pub committing: u64,
    /// Creating the indexes dropped for the bulk load again (and, on SQLite, emptying the WAL).
    pub finishing: u64,
    /// In each read model's `apply`, with the events it handled.
    pub applying: Vec<Applying>,
}

/// One read model's share of a rebuild.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applying {
    /// The read model.
    pub projection: String,
    /// Events it handled.
    pub events: u64,
    /// Milliseconds in its `apply`.
    pub millis: u64,
}

/// Rebuild `projection` (all when `None`) up to the log's head.
pub async fn rebuild(store: Arc<dyn EventStore>, projection: Option<&str>, json: bool) -> anyhow::Result<Rebuilt> {
    let all = all_projections();
    known_projection(projection)?;
    let names: Vec<String> =
        all.iter().filter(|p| projection.is_none_or(|n| n == p.name())).map(|p| p.name().to_string()).collect();
    let started = Instant::now();
    let head = store.head_position().await.context("reading the log head")?;
    let db = ReadDb::from(store.database());
    let runner = ProjectionRunner::new(store, db, all, RunnerOptions::bulk());
    let bar = output::progress(u64::try_from(head).unwrap_or(0), "rebuild", json);
    let mut progress = runner.watch_position();
    let watcher_bar = bar.clone();
    let watcher = tokio::spawn(async move {
        while progress.changed().await.is_ok() {
            let p = *progress.borrow_and_update();
            if p != i64::MAX {
                watcher_bar.set_position(u64::try_from(p).unwrap_or(0));
            }
        }
    });
    // A bulk load: the emptied tables' secondary indexes are dropped, then created again.
    let reached = runner.rebuild_bulk(projection).await;
    watcher.abort();
    bar.finish_and_clear();
    let reached = reached.context("rebuilding the read models")?;
    let failed: Vec<String> =
        runner.status().into_iter().filter_map(|s| s.failed.map(|reason| format!("{}: {reason}", s.name))).collect();
    if !failed.is_empty() {
        bail!("rebuild failed for {}", failed.join("; "));
    }
    let timings = runner.timings();
    let spent = Spent {
        reading_log: timings.read_wait_micros / 1_000,
        committing: timings.commit_micros / 1_000,
        finishing: timings.finish_micros / 1_000,
        applying: runner
            .status()
            .into_iter()
            .filter(|s| names.iter().any(|n| n == s.name))
            .map(|s| Applying {
                projection: s.name.to_string(),
                events: s.applied_events,
                millis: s.apply_micros / 1_000,
            })
            .collect(),
    };
    Ok(Rebuilt { projections: names, position: reached, millis: started.elapsed().as_millis() as u64, spent })
}

/// Refuse a read model's name that is none of them, naming them all.
fn known_projection(projection: Option<&str>) -> anyhow::Result<()> {
    let all = all_projections();
    if let Some(name) = projection
        && !all.iter().any(|p| p.name() == name)
    {
        let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
        bail!("no read model `{name}`; there are: {}", names.join(", "));
    }
    Ok(())
}

/// Run `rebuild`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    // Before the log is opened for writing (which migrates it): a refused name changes nothing.
    known_projection(args.projection.as_deref())?;
    let store = store::open(&global.database, store::Access::Write).await?;
    let result = rebuild(Arc::clone(&store), args.projection.as_deref(), global.json).await;
    store.close().await;
    let r = result?;
    if global.json {
        output::print_json(&r)?;
    } else {
        let mut text =
            format!("rebuilt {} up to position {} in {} ms\n", r.projections.join(", "), r.position, r.millis);
        let mut table = output::Table::new(["SPENT ON", "EVENTS", "MS"]);
        table.row(["reading the log (waiting)".to_string(), String::new(), r.spent.reading_log.to_string()]);
        table.row(["committing".to_string(), String::new(), r.spent.committing.to_string()]);
        table.row(["creating indexes again".to_string(), String::new(), r.spent.finishing.to_string()]);
        for a in &r.spent.applying {
            table.row([format!("apply {}", a.projection), a.events.to_string(), a.millis.to_string()]);
        }
        text.push_str(&table.render());
        output::print_text(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
