//! Command-handler benchmark: a worker reporting the steps of a long run, one command each,
//! with the handler's states in memory and without them (every load from the stream's
//! snapshot and the events after it), in the same process, each in a fresh log, interleaved.
//!
//! ```text
//! cargo bench -p agentlog-eventlog --bench commands       # SQLite; PostgreSQL too when
//! AGENTLOG_BENCH_PG_URL=postgres://… cargo bench …       # a server URL is given
//! ```
//! `AGENTLOG_BENCH_STEPS` steps per run (default 400), `AGENTLOG_BENCH_RUNS` runs (default 5).

mod support;

use std::time::Instant;

use agentlog_domain::{
    context::Context,
    envelope::Actor,
    operations::{CreateOperation, Operation, OperationCommand, OperationKind, Phase, StepReport, lease_token},
    values::{AgentRef, Usage},
};
use agentlog_eventlog::CommandHandler;
use chrono::Utc;
use uuid::Uuid;

use support::open;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn ctx() -> Context {
    Context::new(Utc::now(), Uuid::now_v7(), Actor::user("u1"), "u1")
}

/// Steps reported per second over `runs` runs of `steps` steps, through `h`.
async fn report_steps(h: &CommandHandler, runs: usize, steps: usize) -> f64 {
    let agent = AgentRef { agent_id: "a".into(), config_version: 1, model: None, provider: None };
    let start = Instant::now();
    for r in 0..runs {
        let id = format!("run{r}");
        let create = OperationCommand::Create(CreateOperation::new(&id, OperationKind::Task, agent.clone()));
        h.execute_of::<Operation>("u1", &id, &create, &ctx()).await.unwrap();
        let claim = ctx();
        h.execute_of::<Operation>(
            "u1",
            &id,
            &OperationCommand::Claim { worker_id: "w".into(), lease_secs: 600 },
            &claim,
        )
        .await
        .unwrap();
        let token = lease_token(&claim);
        for i in 0..steps {
            let step = OperationCommand::RecordStep(StepReport {
                phase: Phase::Acting,
                tool_calls: Vec::new(),
                usage: Usage { input_tokens: Some(i as u64), ..Usage::default() },
                budgets: Vec::new(),
            });
            h.execute_of::<Operation>("u1", &id, &step, &ctx().with_lease_token(Some(token.clone()))).await.unwrap();
        }
    }
    (runs * steps) as f64 / start.elapsed().as_secs_f64()
}

async fn run(pg_url: Option<&str>) {
    let backend = if pg_url.is_some() { "postgres" } else { "sqlite" };
    let (runs, steps) = (env("AGENTLOG_BENCH_RUNS", 5), env("AGENTLOG_BENCH_STEPS", 400));
    let (mut cached, mut uncached) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let (store, _g) = open(pg_url).await;
        uncached.push(report_steps(&CommandHandler::new(store).with_state_cache(0), runs, steps).await);
        let (store, _g) = open(pg_url).await;
        cached.push(report_steps(&CommandHandler::new(store), runs, steps).await);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "| {backend} | {runs} runs × {steps} steps, one command each | {:.0} | {:.0} | {:.2} |",
        mean(&cached),
        mean(&uncached),
        mean(&cached) / mean(&uncached)
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    println!("| backend | scenario | steps/s, states in memory | steps/s, from the snapshot | ratio |");
    println!("|---|---|---:|---:|---:|");
    run(None).await;
    if let Ok(url) = std::env::var("AGENTLOG_BENCH_PG_URL") {
        run(Some(&url)).await;
    }
}
