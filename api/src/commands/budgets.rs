//! Budget use cases: set and remove a budget (ownership of the scope checked against the truth,
//! the scope's own stream), the standings the rules decide with, read with the read models settled to the log's head.
//!
//! Why settled to the head: a check must see every step committed before it began, on any
//! instance, or a lagging read model would let runs spend on. What it cannot see is a step
//! committed while it runs, so concurrent workers can overspend by at most one step each.

use agentlog_domain::{
    agents::Agent,
    briefs::{Brief, BriefCommand},
    budgets::{
        Budget, BudgetAction, BudgetCommand, BudgetScopeKind, BudgetSpec, BudgetStanding, period_key, period_name,
        warning,
    },
    context::Context,
    envelope::Actor,
    error::DomainError,
    groups::Group,
    ids::derived_id,
    notifications::CreateNotification,
    operations::{Operation, OperationCommand},
    tasks::Task,
};
use agentlog_eventlog::{CommandError, CommandOutcome, EventLogError};
use agentlog_projections::budgets::{self, BudgetRow, RunScope};
pub use agentlog_projections::budgets::{PeriodWindow, period_window};
use chrono::{DateTime, Utc};

use super::aggregates::Outcome;
use super::aggregates::Owned;
use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::commands::checks::check_time_zone;
use crate::{error::ApiError, state::App};

impl Owned for Budget {
    const WHAT: &'static str = "budget";
    fn owner(&self) -> Option<&str> {
        self.exists().then_some(self.user_id.as_str())
    }
}

/// A budget that applies, with its period and what its scope spent in it.
#[derive(Debug, Clone)]
pub struct Standing {
    /// The budget as the read model has it.
    pub row: BudgetRow,
    /// Its current period.
    pub window: PeriodWindow,
    /// The rules' fact.
    pub standing: BudgetStanding,
}

/// The budgets a run of `run` counts against at `now` (only `interrupt` ones when
/// `interrupt_only`), each with what its scope spent in its period. When any applies, the read
/// models are first settled to the log's head (bounded by the read-your-writes wait; past it the
/// check answers UNAVAILABLE rather than decide on lagging numbers).
pub async fn standings(
    state: &App,
    run: &RunScope,
    now: DateTime<Utc>,
    interrupt_only: bool,
) -> Result<Vec<Standing>, ApiError> {
    standings_among(state, run, &of_run(state, run).await?, now, interrupt_only).await
}

/// The budgets a run of `run` counts against, as the read model has them now.
pub async fn of_run(state: &App, run: &RunScope) -> Result<Vec<BudgetRow>, ApiError> {
    Ok(budgets::budgets_of_run(&state.db, run).await?)
}

/// [`standings`] with `run`'s budgets as [`of_run`] answered them (read again, settled, when
/// any applies).
pub async fn standings_among(
    state: &App,
    run: &RunScope,
    rows: &[BudgetRow],
    now: DateTime<Utc>,
    interrupt_only: bool,
) -> Result<Vec<Standing>, ApiError> {
    let wanted = |r: &BudgetRow| !interrupt_only || r.spec.action == BudgetAction::Interrupt;
    if !rows.iter().any(wanted) {
        return Ok(Vec::new());
    }
    let head = state.store.head_position().await?;
    if state
        .runner
        .wait_for_projections(&["operations", "budgets"], head, state.settings.read_your_writes)
        .await
        .is_err()
    {
        return Err(ApiError::Behind { position: head, reached: state.runner.position() });
    }
    let mut out = Vec::new();
    for row in budgets::budgets_of_run(&state.db, run).await?.into_iter().filter(wanted) {
        let window = period_window(&row.spec, now);
        let spent = budgets::spent(&state.db, &row, window.start).await?;
        out.push(Standing { standing: BudgetStanding { spec: row.spec.clone(), spent }, row, window });
    }
    Ok(out)
}

/// The rules' facts of [`standings`].
pub fn facts(standings: &[Standing]) -> Vec<BudgetStanding> {
    standings.iter().map(|s| s.standing.clone()).collect()
}

/// The scopes whose budgets a run counts against (none before it is created).
pub fn run_scope(run: &Operation) -> Option<RunScope> {
    run.spec.as_ref().map(|spec| RunScope {
        user_id: run.user_id.clone(),
        agent_id: spec.agent.agent_id.clone(),
        task_id: spec.task_id.clone(),
        group_id: spec.group_id.clone(),
    })
}

/// After the steps of the run in `stream` were appended (with `ctx`): steps of other runs committed beside them
/// may have reached a limit unseen, so read the standings again, these steps included, and let
/// the run's rules end it now rather than after its next step. So each worker overspends by at
/// most the one report it sent. The run after the check.
pub async fn stop_at_limit(
    state: &App,
    stream: &str,
    run: &RunScope,
    ctx: &Context,
) -> Result<CommandOutcome<Operation>, ApiError> {
    let after = facts(&standings(state, run, ctx.now, true).await?);
    let mut stop_ctx = Context::new(
        ctx.now,
        derived_id("budget-stop", &ctx.command_id.to_string(), ctx.now.timestamp_millis()),
        Actor::system("budgets"),
        &run.user_id,
    );
    stop_ctx.correlation_id = ctx.correlation_id.clone();
    let stop = OperationCommand::StopAtBudget { budgets: after };
    Ok(state.handler.execute_stream::<Operation>(stream, &stop, &stop_ctx).await?)
}

/// May a run of `run` start now? LIMIT when one of its budgets is at its limit.
pub async fn check_start(state: &App, run: &RunScope, now: DateTime<Utc>) -> Result<(), ApiError> {
    let standings = standings(state, run, now, false).await?;
    agentlog_domain::budgets::refuse_start(&facts(&standings))?;
    Ok(())
}

/// Tell the owners of a run's budgets (`rows`, as [`of_run`] answered them) whose scope is at
/// or past the warning threshold: one brief per budget and period (its id comes from the budget
/// and the period, and its stream is created once; the brief brings its notification), however
/// many steps cross it, on however many instances. Called after a step was recorded and
/// settled, so the spends include it.
pub async fn warn(state: &App, rows: &[BudgetRow], now: DateTime<Utc>) -> Result<(), ApiError> {
    for row in rows {
        let window = period_window(&row.spec, now);
        let spent = budgets::spent(&state.db, row, window.start).await?;
        if !row.spec.warned(spent) {
            continue;
        }
        let brief = warning(&row.user_id, &row.spec, window.start, spent);
        let command_id = derived_id("budget-warning", &brief.brief_id, 0);
        let ctx = Context::new(now, command_id, Actor::system("budgets"), &row.user_id);
        let loaded = state.handler.load_of::<Brief>(&row.user_id, &brief.brief_id).await?;
        if loaded.state.brief.is_some() {
            continue;
        }
        match state.handler.execute_stream::<Brief>(&loaded.stream_id, &BriefCommand::Create(brief), &ctx).await {
            // Told already: by another step's check, here or on another instance.
            Ok(_)
            | Err(CommandError::Domain(DomainError::AlreadyExists { .. }))
            | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The notification telling `user_id` that budget `budget_id` refused a run at `now`: keyed
/// on the budget and its period (`budget-limit:<budgetId>:<period>`), so the owner hears of it
/// once per period however many cron fires, heartbeat ticks or group dispatches it refuses.
/// The budget is `user_id`'s of that id, else a global one (budget ids are per owner; a global
/// budget limits every user). `None` when the budget is gone (the refusal is then told as any
/// other).
pub async fn limit_notification(
    state: &App,
    budget_id: &str,
    user_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<CreateNotification>, ApiError> {
    let Some(row) = budgets::budget(&state.db, user_id, budget_id).await? else { return Ok(None) };
    let spec = row.spec;
    let window = period_window(&spec, now);
    let until = window.resets_at.map_or_else(
        || "until its limit is raised or it is removed".to_string(),
        |t| format!("until {}", t.format("%Y-%m-%dT%H:%M:%SZ")),
    );
    let scope =
        spec.scope_id.as_deref().map_or_else(|| "everything".to_string(), |id| format!("{} {id}", spec.scope.as_str()));
    Ok(Some(CreateNotification {
        user_id: user_id.to_string(),
        category: "system".into(),
        notification_type: "budget_limit".into(),
        title: format!("Budget {budget_id} is at its limit for {scope}"),
        body: format!(
            "In the period from {}, new runs of {scope} are refused {until}. Each refused run is recorded.",
            period_name(window.start)
        ),
        dedupe_key: Some(format!("budget-limit:{}", period_key(budget_id, window.start))),
        action_url: None,
        metadata: Some(serde_json::json!({"budgetId": budget_id, "period": period_name(window.start)})),
    }))
}

impl Commands<'_> {
    /// Create or change `owner`'s budget `spec.budgetId` (`owner` the caller unless an admin
    /// names another user; budget ids are per owner). A global budget is admin-only (FORBIDDEN); an agent, task or group
    /// budget needs the owner's agent, task or group (NOT_FOUND otherwise); a user budget with
    /// no `scopeId` limits its owner.
    pub async fn set_budget(
        &self,
        mut spec: BudgetSpec,
        owner: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Outcome<Budget>, ApiError> {
        check_id("budgetId", &spec.budget_id)?;
        check_time_zone("input.timeZone", &spec.time_zone)?;
        if spec.scope == BudgetScopeKind::Global && !self.caller.admin {
            return Err(ApiError::Forbidden("only an admin sets a global budget".into()));
        }
        let h = &self.state.handler;
        // Budget ids are per owner: `owner`'s budget of that id is created or changed, whoever
        // else holds one.
        let owner = self.owner_for_new(owner)?;
        let stream_id = h.stream_of::<Budget>(&owner, &spec.budget_id).await?;
        if spec.scope == BudgetScopeKind::User && spec.scope_id.is_none() {
            spec.scope_id = Some(owner.clone());
        }
        // The owner of the agent, task or group limited, read from its own stream.
        let scope_owner = match (spec.scope, spec.scope_id.clone()) {
            (BudgetScopeKind::Agent, Some(id)) => {
                check_id("scopeId", &id)?;
                let a = h.load_of::<Agent>(&owner, &id).await?.state;
                a.exists().then_some(a.user_id)
            }
            (BudgetScopeKind::Task, Some(id)) => {
                check_id("scopeId", &id)?;
                let t = h.load_of::<Task>(&owner, &id).await?.state;
                t.exists().then_some(t.user_id)
            }
            (BudgetScopeKind::Group, Some(id)) => {
                check_id("scopeId", &id)?;
                let g = h.load_of::<Group>(&owner, &id).await?.state;
                g.exists().then_some(g.user_id)
            }
            _ => None,
        };
        let ctx = self.context(&owner, self.user_actor(), request_id)?;
        if request_id.is_some() {
            self.check_request_target(&stream_id, &ctx).await?;
        }
        let outcome = h.execute_stream::<Budget>(&stream_id, &BudgetCommand::Set { spec, scope_owner }, &ctx).await?;
        let position = outcome.last_position();
        self.state.settle(position).await;
        Ok(Outcome { state: outcome.state, position })
    }

    /// Remove budget `id`: it limits nothing from now on.
    pub async fn remove_budget(&self, id: &str, request_id: Option<&str>) -> Result<Outcome<Budget>, ApiError> {
        self.command::<Budget>(id, BudgetCommand::Remove, None, request_id).await
    }
}
