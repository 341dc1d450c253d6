//! `agentlog-replay budget-spend` and `budget-crossings`: a budget's spend against its limit
//! over time, and which runs made it cross its warning threshold and its limit, with the
//! refusals that followed — all folded from the log in one pass, no read model needed.
//!
//! Spend is counted as the server counts it: the usage of every `operation.step_recorded` of a
//! run in the budget's scope (the run's owner, agent, task or group; every run for a global
//! budget), in the budget's periods (days or calendar months in its zone; a total budget is
//! shown per day with its running total). A budget's latest terms apply to its whole history.

use std::{
    collections::{BTreeMap, HashMap},
    process::ExitCode,
};

use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    budgets::{Budget, BudgetEvent, BudgetPeriod, BudgetScopeKind, BudgetSpec, Spend},
    envelope::RecordedEvent,
    operations::{Operation, OperationEvent},
    streams::StreamKind,
};
use agentlog_eventlog::{EventFilter, EventStore};
use agentlog_projections::budgets::period_window;
use anyhow::Context;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::{
    options::Global,
    output::{self, Table},
    store,
};

/// Arguments of `budget-spend`.
#[derive(Debug, clap::Args)]
pub struct SpendArgs {
    /// Only this budget (default: every budget in the log).
    #[arg(long)]
    pub budget: Option<String>,
    /// The user whose budget `--budget` is, when several users hold one with that id.
    #[arg(long)]
    pub owner: Option<String>,
}

/// Arguments of `budget-crossings`.
#[derive(Debug, clap::Args)]
pub struct CrossingsArgs {
    /// The budget.
    pub budget: String,
    /// The user whose budget it is, when several users hold one with that id.
    #[arg(long)]
    pub owner: Option<String>,
}

/// A step's usage, where it is in the log.
#[derive(Debug, Clone)]
struct StepFact {
    position: i64,
    at: DateTime<Utc>,
    operation_id: String,
    /// The run's stream (operation ids are per owner).
    run_stream: String,
    step_index: u32,
    spend: Spend,
}

/// What the log holds about budgets: their terms (and owners), the runs, their steps and the
/// LIMIT refusals.
#[derive(Debug, Default)]
pub struct BudgetLog {
    /// Each budget by its stream (ids are per owner): its spec and its owner.
    budgets: BTreeMap<String, (BudgetSpec, String)>,
    /// Each run by its stream.
    runs: HashMap<String, Operation>,
    steps: Vec<StepFact>,
    refusals: Vec<RecordedEvent>,
}

/// One period of a budget's spend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeriodSpend {
    /// The budget.
    pub budget_id: String,
    /// Its owner.
    pub owner: String,
    /// The period's first instant (a total budget: the day's).
    pub start: Option<DateTime<Utc>>,
    /// Spent in it.
    pub spent: Spend,
    /// What counts against the limit at its end (a total budget: the running total).
    pub counted: Spend,
    /// The cost limit.
    pub limit_cost_micros: Option<u64>,
    /// The token limit.
    pub limit_tokens: Option<u64>,
    /// At or past the warning threshold.
    pub warned: bool,
    /// At or past a limit.
    pub reached: bool,
}

/// A step that made a budget cross its warning threshold or its limit in a period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Crossing {
    /// The period's first instant (absent for a total budget).
    pub period_start: Option<DateTime<Utc>>,
    /// `warning` or `limit`.
    pub what: &'static str,
    /// The run whose step crossed it.
    pub operation_id: String,
    /// The step.
    pub step_index: u32,
    /// The step's position in the log.
    pub position: i64,
    /// Counted before the step.
    pub before: Spend,
    /// Counted after it.
    pub after: Spend,
    /// Every run that spent in the period up to and with this step, with what it spent.
    pub runs: Vec<(String, Spend)>,
}

/// A LIMIT refusal naming the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusalRow {
    /// Its position.
    pub position: i64,
    /// When.
    pub at: DateTime<Utc>,
    /// What was refused (`cron.fire`, `task.start_run`, `operation.dispatch_members`, …).
    pub command: String,
    /// The stream that refused it.
    pub target_stream_id: String,
    /// The fact it answered (its stream).
    pub fact_stream_id: String,
    /// Its chain.
    pub chain_id: String,
}

/// What `budget-crossings` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Crossings {
    /// The budget.
    pub budget_id: String,
    /// Its owner.
    pub owner: String,
    /// The crossings, in log order.
    pub crossings: Vec<Crossing>,
    /// The refusals that followed, in log order.
    pub refusals: Vec<RefusalRow>,
}

/// A period's first instant (`None`: a total budget's only period).
type PeriodStart = Option<DateTime<Utc>>;

/// What runs spent in a period: the sum, and each run's share in the order they spent.
type PeriodRuns = (Spend, Vec<(String, Spend)>);

fn add(a: Spend, b: Spend) -> Spend {
    Spend { cost_micros: a.cost_micros.saturating_add(b.cost_micros), tokens: a.tokens.saturating_add(b.tokens) }
}

impl BudgetLog {
    /// Fold the whole log.
    pub async fn read(store: &dyn EventStore, json: bool) -> anyhow::Result<Self> {
        let mut log = Self::default();
        let mut states: HashMap<String, Budget> = HashMap::new();
        let head = store.head_position().await.context("reading the log head")?;
        let bar = output::progress(u64::try_from(head).unwrap_or(0), "budgets", json);
        store::for_each_page(store, 0, None, &EventFilter::all(), async |page| {
            if let Some(last) = page.last() {
                bar.set_position(u64::try_from(last.position).unwrap_or(0));
            }
            for e in &page {
                let decoding = || format!("decoding {} at position {}", e.event_type, e.position);
                if let Some((StreamKind::Budget, _)) = StreamKind::parse(&e.stream_id) {
                    let typed =
                        BudgetEvent::decode(&e.event_type, e.schema_version, &e.payload).with_context(decoding)?;
                    // Folded and kept per stream: budget ids are per owner.
                    let state = states.remove(&e.stream_id).unwrap_or_default().evolve(&typed);
                    if let Some(spec) = &state.spec {
                        log.budgets.insert(e.stream_id.clone(), (spec.clone(), state.user_id.clone()));
                    }
                    states.insert(e.stream_id.clone(), state);
                } else if let Some((StreamKind::Operation, id)) = StreamKind::parse(&e.stream_id) {
                    let typed =
                        OperationEvent::decode(&e.event_type, e.schema_version, &e.payload).with_context(decoding)?;
                    if let OperationEvent::StepRecorded(step) = &typed {
                        log.steps.push(StepFact {
                            position: e.position,
                            at: step.at,
                            operation_id: id.to_string(),
                            run_stream: e.stream_id.clone(),
                            step_index: step.step_index,
                            spend: Spend::default().plus(step.usage),
                        });
                    }
                    // Folded per stream: operation ids are per owner.
                    let op = log.runs.remove(&e.stream_id).unwrap_or_default();
                    log.runs.insert(e.stream_id.clone(), op.evolve(&typed));
                } else if e.event_type == "reactor.command_refused" && e.payload["code"] == "LIMIT" {
                    log.refusals.push(e.clone());
                }
            }
            Ok(())
        })
        .await?;
        bar.finish_and_clear();
        Ok(log)
    }

    /// Does the run in `run_stream` count against budget `spec` owned by `owner`?
    fn counts(&self, spec: &BudgetSpec, owner: &str, run_stream: &str) -> bool {
        let Some(op) = self.runs.get(run_stream) else { return false };
        let Some(run) = &op.spec else { return false };
        let scope = spec.scope_id.as_deref();
        let mine = op.user_id == owner;
        match spec.scope {
            BudgetScopeKind::Global => true,
            BudgetScopeKind::User => mine && scope == Some(op.user_id.as_str()),
            BudgetScopeKind::Agent => mine && scope == Some(run.agent.agent_id.as_str()),
            BudgetScopeKind::Task => mine && scope.is_some() && scope == run.task_id.as_deref(),
            BudgetScopeKind::Group => mine && scope.is_some() && scope == run.group_id.as_deref(),
        }
    }

    /// The steps counted against `budget_id`, in log order, each with its period's start.
    fn counted(&self, budget_id: &str) -> Option<(&BudgetSpec, Vec<(PeriodStart, &StepFact)>)> {
        let (spec, owner) = self.budgets.get(budget_id)?;
        let steps = self
            .steps
            .iter()
            .filter(|s| self.counts(spec, owner, &s.run_stream))
            .map(|s| (period_window(spec, s.at).start, s))
            .collect();
        Some((spec, steps))
    }

    /// Spend per period of `budget_id` (a total budget: per day, with the running total).
    pub fn spend(&self, budget_id: &str) -> Vec<PeriodSpend> {
        let Some((spec, owner)) = self.budgets.get(budget_id) else { return Vec::new() };
        let mut days = spec.clone();
        days.period = BudgetPeriod::Day;
        let total = spec.period == BudgetPeriod::Total;
        let by = if total { &days } else { spec };
        let mut periods: BTreeMap<Option<DateTime<Utc>>, Spend> = BTreeMap::new();
        for (_, step) in self.counted(budget_id).map(|(_, s)| s).unwrap_or_default() {
            let start = period_window(by, step.at).start;
            let sum = periods.entry(start).or_default();
            *sum = add(*sum, step.spend);
        }
        let mut running = Spend::default();
        periods
            .into_iter()
            .map(|(start, spent)| {
                running = add(running, spent);
                let counted = if total { running } else { spent };
                PeriodSpend {
                    budget_id: spec.budget_id.clone(),
                    owner: owner.clone(),
                    start,
                    spent,
                    counted,
                    limit_cost_micros: spec.limit_cost_micros,
                    limit_tokens: spec.limit_tokens,
                    warned: spec.warned(counted),
                    reached: spec.reached(counted),
                }
            })
            .collect()
    }

    /// The steps that made `budget_id` cross its warning threshold and its limit, per period,
    /// with the runs that spent up to them, and the LIMIT refusals naming it after the first
    /// crossing of the limit. `None` when the log holds no such budget.
    pub fn crossings(&self, budget_id: &str) -> Option<Crossings> {
        let (spec, steps) = self.counted(budget_id)?;
        let mut crossings = Vec::new();
        let mut periods: BTreeMap<PeriodStart, PeriodRuns> = BTreeMap::new();
        let mut first_limit: Option<i64> = None;
        for (period_start, step) in steps {
            let (sum, runs) = periods.entry(period_start).or_default();
            let before = *sum;
            *sum = add(before, step.spend);
            match runs.iter_mut().find(|(id, _)| *id == step.operation_id) {
                Some((_, spent)) => *spent = add(*spent, step.spend),
                None => runs.push((step.operation_id.clone(), step.spend)),
            }
            for (what, was, is) in [
                ("warning", spec.warned(before), spec.warned(*sum)),
                ("limit", spec.reached(before), spec.reached(*sum)),
            ] {
                if is && !was {
                    if what == "limit" {
                        first_limit.get_or_insert(step.position);
                    }
                    crossings.push(Crossing {
                        period_start,
                        what,
                        operation_id: step.operation_id.clone(),
                        step_index: step.step_index,
                        position: step.position,
                        before,
                        after: *sum,
                        runs: runs.clone(),
                    });
                }
            }
        }
        let (spec, owner) = self.budgets.get(budget_id)?;
        let named = format!("budget {} ", spec.budget_id);
        // A global budget refuses every user's runs; another its owner's only.
        let global = spec.scope == BudgetScopeKind::Global;
        let refusals = self
            .refusals
            .iter()
            .filter(|r| first_limit.is_some_and(|p| r.position > p))
            .filter(|r| global || r.metadata.user_id == *owner)
            .filter(|r| r.payload["message"].as_str().is_some_and(|m| m.starts_with(&named)))
            .map(|r| RefusalRow {
                position: r.position,
                at: r.recorded_at,
                command: r.payload["command"].as_str().unwrap_or_default().to_string(),
                target_stream_id: r.payload["targetStreamId"].as_str().unwrap_or_default().to_string(),
                fact_stream_id: r.payload["fact"]["streamId"].as_str().unwrap_or_default().to_string(),
                chain_id: r.metadata.chain.chain_id.clone(),
            })
            .collect();
        Some(Crossings { budget_id: spec.budget_id.clone(), owner: owner.clone(), crossings, refusals })
    }

    /// The budget named `id` (of `owner`, when given): its key here, or why there is none or
    /// several.
    pub fn resolve(&self, id: &str, owner: Option<&str>) -> anyhow::Result<String> {
        let mut found = self
            .budgets
            .iter()
            .filter(|(_, (spec, held_by))| spec.budget_id == id && owner.is_none_or(|o| o == held_by))
            .map(|(key, _)| key.clone());
        match (found.next(), found.next()) {
            (Some(key), None) => Ok(key),
            (Some(_), Some(_)) => anyhow::bail!("several users hold a budget {id}: name its owner with --owner"),
            (None, _) => anyhow::bail!("no budget {id} in the log"),
        }
    }

    /// The budgets in the log, by their streams.
    pub fn budget_ids(&self) -> Vec<String> {
        self.budgets.keys().cloned().collect()
    }
}

fn period(start: Option<DateTime<Utc>>) -> String {
    start.map_or_else(|| "total".into(), |t| t.format("%Y-%m-%dT%H:%MZ").to_string())
}

fn of(used: u64, limit: Option<u64>) -> String {
    match limit {
        Some(l) => format!("{used} / {l} ({}%)", u128::from(used) * 100 / u128::from(l.max(1))),
        None => used.to_string(),
    }
}

fn spend_table(rows: &[PeriodSpend]) -> String {
    let mut t = Table::new(["BUDGET", "OWNER", "PERIOD", "COST", "TOKENS", "COUNTED COST", "COUNTED TOKENS", "STATE"]);
    for r in rows {
        let state = if r.reached {
            "limit reached"
        } else if r.warned {
            "warned"
        } else {
            "ok"
        };
        t.row([
            r.budget_id.clone(),
            r.owner.clone(),
            period(r.start),
            r.spent.cost_micros.to_string(),
            r.spent.tokens.to_string(),
            of(r.counted.cost_micros, r.limit_cost_micros),
            of(r.counted.tokens, r.limit_tokens),
            state.to_string(),
        ]);
    }
    t.render()
}

fn crossings_text(c: &Crossings) -> String {
    let mut t =
        Table::new(["PERIOD", "CROSSED", "RUN", "STEP", "POSITION", "COST BEFORE → AFTER", "RUNS IN THE PERIOD"]);
    for x in &c.crossings {
        let runs: Vec<String> = x.runs.iter().map(|(id, s)| format!("{id} ({})", s.cost_micros)).collect();
        t.row([
            period(x.period_start),
            x.what.to_string(),
            x.operation_id.clone(),
            x.step_index.to_string(),
            x.position.to_string(),
            format!("{} → {}", x.before.cost_micros, x.after.cost_micros),
            runs.join(", "),
        ]);
    }
    let mut text = format!("Budget {}: the steps that crossed its thresholds\n", c.budget_id);
    text.push_str(&t.render());
    let mut r = Table::new(["POSITION", "AT", "REFUSED", "TARGET", "FACT STREAM", "CHAIN"]);
    for x in &c.refusals {
        r.row([
            x.position.to_string(),
            x.at.to_rfc3339(),
            x.command.clone(),
            x.target_stream_id.clone(),
            x.fact_stream_id.clone(),
            x.chain_id.clone(),
        ]);
    }
    text.push_str(&format!("\nThe refusals that followed ({})\n", c.refusals.len()));
    text.push_str(&r.render());
    text
}

/// Run `budget-spend`.
pub async fn spend(global: &Global, args: &SpendArgs) -> anyhow::Result<ExitCode> {
    let store = store::open(&global.database, store::Access::Read).await?;
    let log = BudgetLog::read(&*store, global.json).await;
    store.close().await;
    let log = log?;
    let ids = match &args.budget {
        Some(id) => vec![log.resolve(id, args.owner.as_deref())?],
        None => log.budget_ids(),
    };
    let rows: Vec<PeriodSpend> = ids.iter().flat_map(|id| log.spend(id)).collect();
    if global.json {
        output::print_json(&rows)?;
    } else {
        output::print_text(&spend_table(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `budget-crossings`.
pub async fn crossings(global: &Global, args: &CrossingsArgs) -> anyhow::Result<ExitCode> {
    let store = store::open(&global.database, store::Access::Read).await?;
    let log = BudgetLog::read(&*store, global.json).await;
    store.close().await;
    let log = log?;
    let key = log.resolve(&args.budget, args.owner.as_deref())?;
    let Some(c) = log.crossings(&key) else { anyhow::bail!("no budget {} in the log", args.budget) };
    if global.json {
        output::print_json(&c)?;
    } else {
        output::print_text(&crossings_text(&c))?;
    }
    Ok(ExitCode::SUCCESS)
}
