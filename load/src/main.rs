//! `agentlog-load`: the command line over [`agentlog_load::run`].

use std::{io::IsTerminal, path::PathBuf, process::ExitCode, time::Duration};

use agentlog_load::{Config, Scenario};
use anyhow::Context;
use clap::Parser;

/// Drive a running agentlog server (on this machine only) with a realistic mix of clients,
/// workers and subscribers over GraphQL, and print throughput and latency per mutation type.
/// Exits 1 when the server failed a subscriber (an event twice or out of order, or a normal
/// subscriber short of the head when the drain ended), 2 on an error.
#[derive(Debug, Parser)]
#[command(name = "agentlog-load", version)]
struct Cli {
    /// The server (loopback only: 127.0.0.0/8, ::1 or localhost).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Further instances of the same server on the same database (repeatable): requests go
    /// to each instance in turn, subscribers are spread over them.
    #[arg(long = "also-url")]
    also_url: Vec<String>,
    /// Bearer token; an admin's lets each client be a user of its own.
    #[arg(long, env = "AGENTLOG_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Concurrent clients (0: only the subscribers, following for --duration what others append).
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Subscribers following the whole log over websockets.
    #[arg(long, default_value_t = 1)]
    subscribers: usize,
    /// How many of the subscribers read slowly (they pause --slow-ms after each message).
    #[arg(long, default_value_t = 0)]
    slow_subscribers: usize,
    /// A slow subscriber's pause after each message, in milliseconds.
    #[arg(long, default_value_t = 200)]
    slow_ms: u64,
    /// Longest wait, after the load, for the subscribers to reach the log's head (slow ones
    /// need about events × --slow-ms); also how long a client waits for a server that is down.
    #[arg(long, default_value_t = 30)]
    drain_secs: u64,
    /// Subscribers start at the log's head as the run begins (only the run's events) instead
    /// of position 0 (the whole log).
    #[arg(long)]
    subscribe_from_head: bool,
    /// How long to run, in seconds (10 when neither this nor --max-mutations is given).
    #[arg(long)]
    duration: Option<f64>,
    /// Stop after sending this many mutations (retries included).
    #[arg(long)]
    max_mutations: Option<u64>,
    /// Send this many mutations per second, all clients together, on a fixed schedule (each
    /// client one every clients / rate seconds, catching up after a delay), so two runs do the
    /// same work whatever their servers' speed. Without it each client sends its next mutation
    /// as soon as the last is answered.
    #[arg(long)]
    rate: Option<f64>,
    /// Write every acknowledged mutation to this file (JSON lines).
    #[arg(long)]
    record: Option<PathBuf>,
    /// What the clients do.
    #[arg(long, value_enum, default_value_t = Scenario::Mixed)]
    scenario: Scenario,
    /// `--scenario write`: steps per request (1: `reportStep`; more: one `reportBatch`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=500))]
    batch: u64,
    /// Seed of the clients' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("AGENTLOG_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agentlog-load: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let duration = match (cli.duration, cli.max_mutations) {
        (Some(secs), _) => {
            anyhow::ensure!(secs.is_finite() && secs > 0.0, "--duration must be a positive number of seconds");
            Some(Duration::from_secs_f64(secs))
        }
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(10)),
    };
    let mut config = Config::new(cli.url, cli.token.unwrap_or_default());
    config.more_urls = cli.also_url;
    config.clients = cli.clients;
    config.subscribers = cli.subscribers;
    config.slow_subscribers = cli.slow_subscribers;
    config.slow_delay = Duration::from_millis(cli.slow_ms);
    config.subscribe_from_head = cli.subscribe_from_head;
    config.drain_timeout = Duration::from_secs(cli.drain_secs);
    config.duration = duration;
    config.max_mutations = cli.max_mutations;
    config.rate = cli.rate;
    config.record = cli.record;
    config.scenario = cli.scenario;
    config.seed = cli.seed;
    config.batch = usize::try_from(cli.batch).unwrap_or(1);
    config.progress = !cli.json && std::io::stderr().is_terminal();
    let report = agentlog_load::run(config).await?;
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&report).context("printing the report")?);
    } else {
        print!("{report}");
    }
    Ok(if report.subscribers_failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
