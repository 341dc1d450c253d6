//! `agentlog-replay stats`: figures computed straight from the log in one pass (no read model
//! needs to be current): events by type and by day (of `recordedAt`, UTC); cost and tokens by
//! agent, model and provider; run duration percentiles; completion reasons; the agents whose
//! runs fail most.
//!
//! Runs are folded with the domain's own `Operation::evolve`. A run's duration is
//! `completedAt − startedAt` (the decisions' own times, as the analytics read model counts it);
//! a run that never started has none. Percentiles are exact (nearest rank), not histogram
//! estimates. Token and cost sums stay absent until some run measured them, never 0.

use std::{
    collections::{BTreeMap, HashMap},
    process::ExitCode,
};

use agentlog_domain::values::Usage;
use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    operations::{Operation, OperationEvent, OperationStatus},
    streams::StreamKind,
};
use agentlog_eventlog::{EventFilter, EventStore};
use anyhow::Context;
use serde::Serialize;

use crate::{options::Global, output, store};

/// Arguments of `stats`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How many agents to list under "fail most".
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

/// Tokens and cost summed over runs; a field is absent until some run measured it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageSum {
    /// Runs counted.
    pub runs: u64,
    /// Summed input tokens.
    pub input_tokens: Option<u64>,
    /// Summed output tokens.
    pub output_tokens: Option<u64>,
    /// Summed total tokens.
    pub total_tokens: Option<u64>,
    /// Summed cost, in millionths of the currency unit.
    pub cost_micros: Option<u64>,
}

fn add(sum: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *sum = Some(sum.unwrap_or(0).saturating_add(v));
    }
}

impl UsageSum {
    fn add(&mut self, u: &Usage) {
        self.runs += 1;
        add(&mut self.input_tokens, u.input_tokens);
        add(&mut self.output_tokens, u.output_tokens);
        add(&mut self.total_tokens, u.total_tokens);
        add(&mut self.cost_micros, u.cost_micros);
    }
}

/// Cost and tokens of one (agent, model, provider).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The agent.
    pub agent_id: String,
    /// The model the run was created with (empty when unknown).
    pub model: String,
    /// The provider (empty when unknown).
    pub provider: String,
    /// The sums.
    #[serde(flatten)]
    pub usage: UsageSum,
}

/// Run durations, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Durations {
    /// Runs with a duration.
    pub count: u64,
    /// Median.
    pub p50_ms: Option<i64>,
    /// 95th percentile.
    pub p95_ms: Option<i64>,
    /// 99th percentile.
    pub p99_ms: Option<i64>,
    /// Longest.
    pub max_ms: Option<i64>,
}

/// How one agent's runs ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentFailures {
    /// The agent.
    pub agent_id: String,
    /// Finished runs.
    pub finished: u64,
    /// Of them, failed (status `error`).
    pub failed: u64,
    /// failed / finished.
    pub failure_rate: f64,
}

/// Everything `stats` reports.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Events in the log.
    pub events: u64,
    /// Events per type.
    pub by_type: BTreeMap<String, u64>,
    /// Events per day (YYYY-MM-DD of recordedAt, UTC).
    pub by_day: BTreeMap<String, u64>,
    /// Events per day and type.
    pub by_day_and_type: BTreeMap<String, BTreeMap<String, u64>>,
    /// Operations (runs) in the log.
    pub runs: u64,
    /// Of them, finished.
    pub finished_runs: u64,
    /// Cost and tokens of all runs.
    pub usage: UsageSum,
    /// Cost and tokens by agent, model and provider (most expensive first).
    pub usage_by_agent: Vec<UsageRow>,
    /// Durations of finished runs that started.
    pub durations: Durations,
    /// Finished runs per completion reason.
    pub completion_reasons: BTreeMap<String, u64>,
    /// The agents with the most failed runs.
    pub failing_agents: Vec<AgentFailures>,
}

/// The `q` quantile of sorted `values` by nearest rank.
pub fn percentile(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

/// Compute the stats of the whole log.
pub async fn stats(store: &dyn EventStore, top: usize, json: bool) -> anyhow::Result<Stats> {
    let head = store.head_position().await.context("reading the log head")?;
    let bar = output::progress(u64::try_from(head).unwrap_or(0), "stats", json);
    let mut s = Stats::default();
    let mut runs: HashMap<String, Operation> = HashMap::new();
    store::for_each_page(store, 0, Some(head), &EventFilter::all(), async |page| {
        for e in &page {
            s.events += 1;
            let day = e.recorded_at.format("%Y-%m-%d").to_string();
            *s.by_type.entry(e.event_type.clone()).or_default() += 1;
            *s.by_day.entry(day.clone()).or_default() += 1;
            *s.by_day_and_type.entry(day).or_default().entry(e.event_type.clone()).or_default() += 1;
            // Folded per stream: operation ids are per owner.
            if let Some((StreamKind::Operation, _)) = StreamKind::parse(&e.stream_id) {
                let typed = OperationEvent::decode(&e.event_type, e.schema_version, &e.payload)
                    .with_context(|| format!("decoding {} at position {}", e.event_type, e.position))?;
                let op = runs.remove(&e.stream_id).unwrap_or_default();
                runs.insert(e.stream_id.clone(), op.evolve(&typed));
            }
        }
        if let Some(last) = page.last() {
            bar.set_position(u64::try_from(last.position).unwrap_or(0));
        }
        Ok(())
    })
    .await?;
    bar.finish_and_clear();

    let mut by_agent: BTreeMap<(String, String, String), UsageSum> = BTreeMap::new();
    let mut failures: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut durations = Vec::new();
    for op in runs.values().filter(|op| op.exists()) {
        s.runs += 1;
        s.usage.add(&op.usage);
        let agent = op.spec.as_ref().map(|spec| &spec.agent);
        let agent_id = agent.map_or(String::new(), |a| a.agent_id.clone());
        let key = (
            agent_id.clone(),
            agent.and_then(|a| a.model.clone()).unwrap_or_default(),
            agent.and_then(|a| a.provider.clone()).unwrap_or_default(),
        );
        by_agent.entry(key).or_default().add(&op.usage);
        if !op.is_finished() {
            continue;
        }
        s.finished_runs += 1;
        let reason = op
            .completion_reason
            .and_then(|r| serde_json::to_value(r).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| op.status.as_str().to_string());
        *s.completion_reasons.entry(reason).or_default() += 1;
        let f = failures.entry(agent_id).or_default();
        f.0 += 1;
        if op.status == OperationStatus::Error {
            f.1 += 1;
        }
        if let (Some(start), Some(end)) = (op.started_at, op.completed_at) {
            durations.push((end - start).num_milliseconds());
        }
    }
    durations.sort_unstable();
    s.durations = Durations {
        count: durations.len() as u64,
        p50_ms: percentile(&durations, 0.50),
        p95_ms: percentile(&durations, 0.95),
        p99_ms: percentile(&durations, 0.99),
        max_ms: durations.last().copied(),
    };
    s.usage_by_agent = by_agent
        .into_iter()
        .map(|((agent_id, model, provider), usage)| UsageRow { agent_id, model, provider, usage })
        .collect();
    s.usage_by_agent
        .sort_by(|a, b| b.usage.cost_micros.cmp(&a.usage.cost_micros).then(b.usage.runs.cmp(&a.usage.runs)));
    s.failing_agents = failures
        .into_iter()
        .filter(|(_, (_, failed))| *failed > 0)
        .map(|(agent_id, (finished, failed))| AgentFailures {
            agent_id,
            finished,
            failed,
            failure_rate: failed as f64 / finished as f64,
        })
        .collect();
    s.failing_agents.sort_by(|a, b| {
        b.failed.cmp(&a.failed).then(b.failure_rate.total_cmp(&a.failure_rate)).then(a.agent_id.cmp(&b.agent_id))
    });
    s.failing_agents.truncate(top);
    Ok(s)
}

fn opt(v: Option<impl ToString>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn money(micros: Option<u64>) -> String {
    micros.map_or("-".into(), |m| format!("{}.{:06}", m / 1_000_000, m % 1_000_000))
}

fn render(s: &Stats) -> String {
    let mut text = format!("{} events; {} runs, {} finished\n\nEvents by type\n", s.events, s.runs, s.finished_runs);
    let mut t = output::Table::new(["TYPE", "EVENTS"]);
    for (k, v) in &s.by_type {
        t.row([k.clone(), v.to_string()]);
    }
    text.push_str(&t.render());
    text.push_str("\nEvents by day\n");
    let mut t = output::Table::new(["DAY", "EVENTS", "TOP TYPES"]);
    for (day, n) in &s.by_day {
        let mut types: Vec<(&String, &u64)> =
            s.by_day_and_type.get(day).map(|m| m.iter().collect()).unwrap_or_default();
        types.sort_by(|a, b| b.1.cmp(a.1));
        let top: Vec<String> = types.iter().take(3).map(|(t, n)| format!("{t} {n}")).collect();
        t.row([day.clone(), n.to_string(), top.join(", ")]);
    }
    text.push_str(&t.render());
    text.push_str("\nCost and tokens by agent, model and provider\n");
    let mut t = output::Table::new(["AGENT", "MODEL", "PROVIDER", "RUNS", "INPUT", "OUTPUT", "TOTAL", "COST"]);
    for r in &s.usage_by_agent {
        t.row([
            r.agent_id.clone(),
            r.model.clone(),
            r.provider.clone(),
            r.usage.runs.to_string(),
            opt(r.usage.input_tokens),
            opt(r.usage.output_tokens),
            opt(r.usage.total_tokens),
            money(r.usage.cost_micros),
        ]);
    }
    t.row([
        "(all)".to_string(),
        String::new(),
        String::new(),
        s.usage.runs.to_string(),
        opt(s.usage.input_tokens),
        opt(s.usage.output_tokens),
        opt(s.usage.total_tokens),
        money(s.usage.cost_micros),
    ]);
    text.push_str(&t.render());
    let d = &s.durations;
    text.push_str(&format!(
        "\nRun duration ({} runs): p50 {} ms, p95 {} ms, p99 {} ms, max {} ms\n",
        d.count,
        opt(d.p50_ms),
        opt(d.p95_ms),
        opt(d.p99_ms),
        opt(d.max_ms)
    ));
    text.push_str("\nCompletion reasons\n");
    let mut t = output::Table::new(["REASON", "RUNS"]);
    for (k, v) in &s.completion_reasons {
        t.row([k.clone(), v.to_string()]);
    }
    text.push_str(&t.render());
    text.push_str("\nAgents that fail most\n");
    let mut t = output::Table::new(["AGENT", "FAILED", "FINISHED", "RATE"]);
    for a in &s.failing_agents {
        t.row([
            a.agent_id.clone(),
            a.failed.to_string(),
            a.finished.to_string(),
            format!("{:.1}%", a.failure_rate * 100.0),
        ]);
    }
    text.push_str(&t.render());
    text
}

/// Run `stats`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    let store = store::open(&global.database, store::Access::Read).await?;
    let result = stats(&*store, args.top, global.json).await;
    store.close().await;
    let s = result?;
    if global.json {
        output::print_json(&s)?;
    } else {
        output::print_text(&render(&s))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50));
        assert_eq!(percentile(&v, 0.95), Some(95));
        assert_eq!(percentile(&v, 0.99), Some(99));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
