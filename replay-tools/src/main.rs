//! `agentlog-replay`: audit, replay, verify, rebuild, export/import, stats, budgets, generate.
//!
//! One subcommand per module; `main` only parses arguments, opens the log and dispatches.
//! Every command works on a SQLite file or a PostgreSQL URL (`--database`, or
//! `AGENTLOG_DATABASE_URL`, the same default as the server), prints a table by default and JSON
//! with `--json`, and exits non-zero with a message on stderr when anything fails.

mod allocator;
mod budget;
mod chain;
mod conversation_parse;
mod generate;
mod options;
mod output;
mod problem;
mod rebuild;
mod run;
mod state;
mod stats;
mod store;
mod transfer;
mod verify;
mod verify_log;
mod verify_projections;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use options::Global;

/// Command line of `agentlog-replay`.
#[derive(Debug, Parser)]
#[command(name = "agentlog-replay", version, about)]
struct Cli {
    /// The log: `sqlite:…`, a file path, or `postgres://…` (read models live in the same
    /// database, as with the server).
    #[arg(long, global = true, env = "AGENTLOG_DATABASE_URL", default_value = "sqlite:agentlog.db")]
    database: String,
    /// Print JSON instead of tables (progress bars are then hidden too).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// A run's timeline: its events, its sub-agents', its messages and the signals and actions
    /// in its chain, in log order, with the operation's state after each event.
    Run(run::Args),
    /// The causal tree of a chain: from its source through signals, actions and state changes
    /// to notifications.
    Chain(chain::Args),
    /// An aggregate's state (any stream) as of a position.
    State(state::Args),
    /// Check the log's invariants and that every read model equals a fresh rebuild.
    Verify(verify::Args),
    /// Rebuild one read model (or all) from position 0.
    Rebuild(rebuild::Args),
    /// Write events to NDJSON (one event per line), optionally filtered.
    Export(transfer::ExportArgs),
    /// Append events from NDJSON keeping their ids, versions and times; re-running is a no-op.
    Import(transfer::ImportArgs),
    /// Copy a log to another database (SQLite ↔ PostgreSQL); re-running is a no-op.
    Copy(transfer::CopyArgs),
    /// Event counts by type and day; cost and tokens by agent, model and provider; run
    /// durations; completion reasons; the agents that fail most.
    Stats(stats::Args),
    /// Parse a topic's messages (JSON on stdin) into LobeHub's contextTree, flatList and
    /// messageMap (JSON on stdout).
    ConversationParse(conversation_parse::Args),
    /// Spend against budget per period, from the log: every budget (or `--budget`), its days or
    /// months in its zone (a total budget: days with the running total), against its limits.
    BudgetSpend(budget::SpendArgs),
    /// Which runs made a budget cross its warning threshold and its limit (per period, the step
    /// that crossed it and every run that spent up to it), and the LIMIT refusals that followed
    /// with their chains, from the log.
    BudgetCrossings(budget::CrossingsArgs),
    /// Fill an empty log with a synthetic, deterministic workload of at least `--events`
    /// events (to try or benchmark the server and the read models at a realistic size).
    Generate(generate::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let global = Global { database: cli.database, json: cli.json };
    let result = match cli.command {
        Command::ConversationParse(args) => conversation_parse::run(&args),
        command => match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(rt) => rt.block_on(dispatch(global, command)),
            Err(e) => Err(anyhow::Error::new(e).context("starting the async runtime")),
        },
    };
    match result {
        Ok(code) => code,
        // 2: the command could not run (bad input, a database it cannot reach), as distinct
        // from 1, what a command found (`verify`'s problems).
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(global: Global, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run::run(&global, &args).await,
        Command::Chain(args) => chain::run(&global, &args).await,
        Command::State(args) => state::run(&global, &args).await,
        Command::Verify(args) => verify::run(&global, &args).await,
        Command::Rebuild(args) => {
            allocator::keep_freed_memory();
            rebuild::run(&global, &args).await
        }
        Command::Export(args) => transfer::export(&global, &args).await,
        Command::Import(args) => transfer::import(&global, &args).await,
        Command::Copy(args) => transfer::copy(&global, &args).await,
        Command::Stats(args) => stats::run(&global, &args).await,
        Command::BudgetSpend(args) => budget::spend(&global, &args).await,
        Command::BudgetCrossings(args) => budget::crossings(&global, &args).await,
        Command::ConversationParse(args) => conversation_parse::run(&args),
        Command::Generate(args) => {
            allocator::keep_freed_memory();
            generate::run(&global, &args).await
        }
    }
}
