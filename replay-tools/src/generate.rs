//! `agentlog-replay generate --events N`: fill an empty log with a synthetic, deterministic
//! workload (users running operations with sub-agents, conversations, tasks, briefs,
//! notifications, cron jobs, groups, signals — `agentlog_projections::workload`), to try the
//! server, the read models and the analytics at a realistic size, or to benchmark them.
//!
//! Only an empty log is filled (nothing is appended to a log that has events). The read models
//! are built by the server when it starts, or by `agentlog-replay rebuild`.

use std::{process::ExitCode, time::Instant};

use agentlog_projections::workload::{Workload, WorkloadConfig};
use anyhow::{Context, bail};
use serde::Serialize;

use crate::{
    Global, output,
    store::{self, Create},
};

/// Arguments of `generate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// At least this many events (running stories finish after it is reached).
    #[arg(long, default_value_t = 100_000)]
    pub events: usize,
    /// Users acting (default: one per 1,000 events, between 6 and 400).
    #[arg(long)]
    pub users: Option<usize>,
    /// Seeds every choice, id and payload: the same seed gives the same log.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// What a generation wrote.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Generated {
    /// Events appended.
    pub events: usize,
    /// The log's head after it.
    pub head: i64,
    /// Users in the workload.
    pub users: usize,
    /// Wall time, in milliseconds (generating and appending).
    pub millis: u64,
    /// Of it, playing the simulation (deciding every event), in milliseconds.
    pub simulating_millis: u64,
}

/// Rounds of the simulation queued together between two progress updates (the log commits
/// many of them per transaction).
const ROUNDS_PER_TICK: usize = 2_000;

/// Run `generate`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    if args.events == 0 {
        bail!("--events must be at least 1");
    }
    let users = args.users.unwrap_or((args.events / 1_000).clamp(6, 400));
    if users == 0 {
        bail!("--users must be at least 1");
    }
    let store = store::open(&global.database, Create::Yes).await?;
    let head = store.head_position().await.context("reading the log head")?;
    if head > 0 {
        bail!(
            "the log at {} already has events (head {head}); generate fills only an empty log",
            store::redact(&global.database)
        );
    }
    let started = Instant::now();
    let config = WorkloadConfig { seed: args.seed, users, min_events: args.events, ..WorkloadConfig::default() };
    let workload = Workload::generate(&config).context("generating the workload")?;
    let simulated = started.elapsed();
    // One append per round, in order, so every cause precedes its effects in the log (merging
    // rounds into fewer appends would break that across streams); the rounds are queued
    // together, so the log commits many of them per transaction.
    let rounds = workload.rounds.len();
    let bar = output::progress(u64::try_from(rounds).unwrap_or(0), "append rounds", global.json);
    for start in (0..rounds).step_by(ROUNDS_PER_TICK) {
        let end = (start + ROUNDS_PER_TICK).min(rounds);
        workload.append_rounds(&*store, start..end).await.context("appending the workload")?;
        bar.set_position(u64::try_from(end).unwrap_or(0));
    }
    bar.finish_and_clear();
    let generated = Generated {
        events: workload.stats.events,
        head: store.head_position().await.context("reading the log head")?,
        users,
        millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        simulating_millis: u64::try_from(simulated.as_millis()).unwrap_or(u64::MAX),
    };
    store.close().await;
    if global.json {
        output::print_json(&generated)?;
    } else {
        output::print_text(&format!(
            "generated {} events for {} users in {:.1} s ({:.1} s simulating, the rest appending; head {}); the \
             server builds the read models when it starts",
            generated.events,
            generated.users,
            generated.millis as f64 / 1000.0,
            generated.simulating_millis as f64 / 1000.0,
            generated.head
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
