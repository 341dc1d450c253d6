//! `agentlog-replay generate --events N`: fill an empty log with a synthetic, deterministic
//! workload (users running operations with sub-agents, conversations, tasks, briefs,
//! notifications, cron jobs, groups, signals — `agentlog_workload`), to try the
//! server, the read models and the analytics at a realistic size, or to benchmark them.
//!
//! Only an empty log is filled (nothing is appended to a log that has events). The read models
//! are built by the server when it starts, or by `agentlog-replay rebuild`. The log's reactions
//! floor is set at its head: the workload made the reactions to its facts (briefs,
//! notifications, signals, sub-agents' results), so a server on it does not make them again.

use std::{
    collections::VecDeque,
    process::ExitCode,
    time::{Duration, Instant},
};

use agentlog_eventlog::{DatabasePool, QueuedAppends, StoreOptions, StreamAppend};
use agentlog_workload::{Workload, WorkloadConfig, WorkloadError, WorkloadStats};
use anyhow::{Context, bail};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::{
    options::Global,
    output,
    store::{self, Access},
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
    /// Of it, playing the simulation (deciding every event, overlapped with appending), in
    /// milliseconds.
    pub simulating_millis: u64,
}

/// Events of the simulation handed to the log together (whole rounds, so a chunk may hold a
/// little more; the log commits them in a few transactions); also the progress bar's step.
/// Counted in events, not rounds: a round grows with the users, who grow with `--events`, and
/// what is in flight (a chunk being built, two queued, one appending) must not.
const EVENTS_PER_CHUNK: usize = 20_000;

/// Chunks queued in the log beyond the one committing: enough to keep the writer busy while
/// the next chunk is validated.
const CHUNKS_IN_FLIGHT: usize = 1;

/// The most events the log commits in one transaction while generating (the server's
/// default is 5,000): fewer, larger commits write each changed index page once per commit.
const EVENTS_PER_COMMIT: usize = 50_000;

/// SQLite's WAL is copied back into the database file every this many pages while generating
/// (instead of every 1,000), and once more, emptied, at the end.
const WAL_AUTOCHECKPOINT: u32 = 100_000;

/// Play the workload, sending its rounds in chunks. Returns its stats and the time spent
/// simulating (not waiting for the log to take a chunk).
fn simulate(
    config: &WorkloadConfig,
    chunks: mpsc::Sender<Vec<Vec<StreamAppend>>>,
) -> (Result<WorkloadStats, WorkloadError>, Duration) {
    let started = Instant::now();
    let mut waiting = Duration::ZERO;
    let mut chunk = Vec::new();
    let mut events = 0;
    // Once the log side has stopped (an append failed) the rest is played but not sent.
    let mut closed = false;
    let mut send = |chunk: Vec<Vec<StreamAppend>>, closed: &mut bool| {
        let waited = Instant::now();
        *closed = chunks.blocking_send(chunk).is_err();
        waiting += waited.elapsed();
    };
    let stats = Workload::play(config, |round| {
        if closed {
            return;
        }
        events += round.iter().map(|a| a.events.len()).sum::<usize>();
        chunk.push(round);
        if events >= EVENTS_PER_CHUNK {
            events = 0;
            send(std::mem::take(&mut chunk), &mut closed);
        }
    });
    if !closed && !chunk.is_empty() {
        send(chunk, &mut closed);
    }
    (stats, started.elapsed().saturating_sub(waiting))
}

/// Wait for a queued chunk's answers; the first refusal stops the generation.
async fn settle(queued: QueuedAppends) -> anyhow::Result<()> {
    for answer in queued.answers().await {
        answer.context("appending the workload")?;
    }
    Ok(())
}

/// Run `generate`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    if args.events == 0 {
        bail!("--events must be at least 1");
    }
    let users = args.users.unwrap_or((args.events / 1_000).clamp(6, 400));
    if users == 0 {
        bail!("--users must be at least 1");
    }
    let options = StoreOptions {
        max_batch_events: EVENTS_PER_COMMIT,
        sqlite_wal_autocheckpoint: WAL_AUTOCHECKPOINT,
        ..store::options(store::READ_CONNECTIONS)
    };
    // Refused before the log is migrated: a log with events is left as it was.
    if let Some(head) = store::head_unmigrated(&global.database).await?
        && head > 0
    {
        bail!(
            "the log at {} already has events (head {head}); generate fills only an empty log",
            agentlog_eventlog::redact(&global.database)
        );
    }
    let store = store::open_with_options(&global.database, Access::Create, options).await?;
    let started = Instant::now();
    let config = WorkloadConfig { seed: args.seed, users, min_events: args.events, ..WorkloadConfig::default() };
    // The simulation runs on a thread of its own and hands rounds over in chunks while the log
    // appends the previous ones: the two overlap, and the log is never all in memory. One
    // append per round, in order, so every cause precedes its effects in the log (merging
    // rounds into fewer appends would break that across streams); a chunk's rounds are queued
    // together, so the log commits many of them per transaction.
    let (chunks, mut next_chunk) = mpsc::channel::<Vec<Vec<StreamAppend>>>(2);
    let simulation = tokio::task::spawn_blocking(move || simulate(&config, chunks));
    let bar = output::progress(u64::try_from(args.events).unwrap_or(0), "append events", global.json);
    let mut appended = 0u64;
    // Chunks queued in the log and not yet answered: the next chunk is validated and queued
    // while the previous one commits.
    let mut in_flight: VecDeque<(QueuedAppends, usize)> = VecDeque::new();
    while let Some(chunk) = next_chunk.recv().await {
        let events: usize = chunk.iter().flatten().map(|a| a.events.len()).sum();
        in_flight.push_back((store.queue_in_order(chunk).await, events));
        if in_flight.len() > CHUNKS_IN_FLIGHT
            && let Some((queued, events)) = in_flight.pop_front()
        {
            settle(queued).await?;
            appended += u64::try_from(events).unwrap_or(0);
            bar.set_position(appended);
        }
    }
    while let Some((queued, _)) = in_flight.pop_front() {
        settle(queued).await?;
    }
    bar.finish_and_clear();
    let (stats, simulated) = simulation.await.context("the simulation thread")?;
    let stats = stats.context("generating the workload")?;
    let generated = Generated {
        events: stats.events,
        head: store.head_position().await.context("reading the log head")?,
        users,
        millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        simulating_millis: u64::try_from(simulated.as_millis()).unwrap_or(u64::MAX),
    };
    // The workload decided every reaction to its facts itself: the server's followers start
    // after them instead of appending each a second time (`agentlog_eventlog::REACTIONS_FLOOR`).
    agentlog_eventlog::set_reactions_floor(&store.database(), generated.head)
        .await
        .context("recording that the log's reactions are in it")?;
    if let DatabasePool::Sqlite(pool) = store.database() {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&pool).await.context("checkpointing the log")?;
    }
    store.close().await;
    if global.json {
        output::print_json(&generated)?;
    } else {
        output::print_text(&format!(
            "generated {} events for {} users in {:.1} s ({:.1} s of it simulating, beside the appends; head {}); the \
             server builds the read models when it starts\n",
            generated.events,
            generated.users,
            generated.millis as f64 / 1000.0,
            generated.simulating_millis as f64 / 1000.0,
            generated.head
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
