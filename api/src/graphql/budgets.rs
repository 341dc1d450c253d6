//! Budgets: limits on what a user, an agent, a task, a group or everything (admin) may spend
//! per day, calendar month or in total, with what was spent in the current period.

use crate::graphql::request::commands;
use agentlog_domain::budgets::{BudgetSpec, DEFAULT_WARN_PERCENT, Spend};
use agentlog_projections::budgets::{self, BudgetRow};
use async_graphql::{ComplexObject, Context, Enum, InputObject, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};

use super::paging::{connection, page_request};
use super::request::{app, caller, reads};
use crate::{
    commands::budgets::period_window,
    error::{ApiError, GqlResult},
};

/// What a budget limits.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::budgets::BudgetScopeKind")]
pub enum BudgetScope {
    /// Every run of one user (`scopeId` the user; the owner when absent).
    User,
    /// Every run of one of the owner's agents.
    Agent,
    /// Every run of one of the owner's tasks.
    Task,
    /// Every run in one of the owner's chat groups (the supervisor and the members it dispatches).
    Group,
    /// Every run of every user (admin only; no `scopeId`).
    Global,
}

/// The period a budget counts over.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::budgets::BudgetPeriod")]
pub enum BudgetPeriod {
    /// A calendar day in the budget's time zone.
    Day,
    /// A calendar month in the budget's time zone.
    Month,
    /// Everything ever spent; never resets.
    Total,
}

/// What happens at the limit.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(remote = "agentlog_domain::budgets::BudgetAction")]
pub enum BudgetAction {
    /// New runs of the scope are refused with LIMIT (`startOperation`, `spawnSubagent`,
    /// `runTask`, `startGroupRun`, cron fires, heartbeat and scheduled ticks, group dispatches);
    /// running runs go on.
    Refuse,
    /// Also: a running run whose `reportStep` makes the scope reach the limit is ended after that
    /// step with completion reason `cost_limit`, which the step's answer shows.
    Interrupt,
}

/// A budget's terms.
#[derive(InputObject)]
pub struct BudgetInput {
    /// Its id (1 to 128 characters, no spaces).
    pub id: String,
    /// What it limits.
    pub scope: BudgetScope,
    /// The user, agent, task or group limited (absent for `GLOBAL`; the owner for `USER` when
    /// absent). Someone else's agent, task or group is NOT_FOUND.
    pub scope_id: Option<String>,
    /// The period.
    pub period: BudgetPeriod,
    /// The IANA zone whose days and months the period follows (default `UTC`).
    pub time_zone: Option<String>,
    /// The most cost, in micro-units, the scope may spend in a period.
    pub limit_cost_micros: Option<i64>,
    /// The most tokens the scope may use in a period (a step's total, else input + output).
    pub limit_tokens: Option<i64>,
    /// Percent of a limit at which the owner is warned (1 to 100, default 80).
    pub warn_percent: Option<i32>,
    /// What happens at the limit (default `REFUSE`).
    pub action: Option<BudgetAction>,
}

fn unsigned(field: &str, v: Option<i64>) -> Result<Option<u64>, ApiError> {
    v.map(|n| u64::try_from(n).map_err(|_| ApiError::validation(field, "must not be negative"))).transpose()
}

impl BudgetInput {
    fn into_spec(self) -> Result<BudgetSpec, ApiError> {
        let warn_percent = match self.warn_percent {
            None => DEFAULT_WARN_PERCENT,
            Some(p) => u8::try_from(p).map_err(|_| ApiError::validation("input.warnPercent", "must be 1 to 100"))?,
        };
        Ok(BudgetSpec {
            budget_id: self.id,
            scope: self.scope.into(),
            scope_id: self.scope_id,
            period: self.period.into(),
            time_zone: self.time_zone.unwrap_or_else(|| "UTC".into()),
            limit_cost_micros: unsigned("input.limitCostMicros", self.limit_cost_micros)?,
            limit_tokens: unsigned("input.limitTokens", self.limit_tokens)?,
            warn_percent,
            action: self.action.map(Into::into).unwrap_or_default(),
        })
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A budget, with what its scope spent in the current period.
#[derive(SimpleObject)]
#[graphql(complex)]
#[graphql(name = "Budget")]
pub struct BudgetNode {
    /// Its id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// What it limits.
    pub scope: BudgetScope,
    /// The user, agent, task or group limited (absent for global).
    pub scope_id: Option<String>,
    /// The period.
    pub period: BudgetPeriod,
    /// The period's time zone.
    pub time_zone: String,
    /// The cost limit per period, micro-units.
    pub limit_cost_micros: Option<i64>,
    /// The token limit per period.
    pub limit_tokens: Option<i64>,
    /// The warning threshold, percent of a limit.
    pub warn_percent: i32,
    /// What happens at the limit.
    pub action: BudgetAction,
    /// When the current period began (absent for a total budget).
    pub period_start: Option<DateTime<Utc>>,
    /// When the next period begins (absent for a total budget).
    pub resets_at: Option<DateTime<Utc>>,
    /// First set.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    #[graphql(skip)]
    row: BudgetRow,
}

impl BudgetNode {
    fn new(row: BudgetRow, now: DateTime<Utc>) -> Self {
        let s = &row.spec;
        let window = period_window(s, now);
        Self {
            id: s.budget_id.clone(),
            user_id: row.user_id.clone(),
            scope: s.scope.into(),
            scope_id: s.scope_id.clone(),
            period: s.period.into(),
            time_zone: s.time_zone.clone(),
            limit_cost_micros: s.limit_cost_micros.map(signed),
            limit_tokens: s.limit_tokens.map(signed),
            warn_percent: i32::from(s.warn_percent),
            action: s.action.into(),
            period_start: window.start,
            resets_at: window.resets_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
            row,
        }
    }
}

/// What a scope spent in a budget's current period, against its limits.
#[derive(SimpleObject, Debug, Clone, PartialEq)]
pub struct BudgetSpend {
    /// Cost spent, micro-units (the usage its runs' steps reported; unmeasured counts 0).
    pub cost_micros: i64,
    /// Tokens used.
    pub tokens: i64,
    /// Cost left before the limit (0 at or past it; absent without a cost limit).
    pub remaining_cost_micros: Option<i64>,
    /// Tokens left before the limit (0 at or past it; absent without a token limit).
    pub remaining_tokens: Option<i64>,
    /// At or past the warning threshold of a limit.
    pub warned: bool,
    /// At or past a limit: new runs of the scope are refused.
    pub reached: bool,
}

#[ComplexObject]
impl BudgetNode {
    /// What the scope spent in the current period, summed from the steps its runs reported.
    #[graphql(complexity = "super::cost::once(super::cost::PAGE, child_complexity)")]
    async fn spent(&self, ctx: &Context<'_>) -> GqlResult<BudgetSpend> {
        let window = period_window(&self.row.spec, Utc::now());
        let spent: Spend = budgets::spent(reads(ctx), &self.row, window.start).await.map_err(ApiError::from)?;
        Ok(standing(&self.row.spec, spent))
    }

    /// What the scope spent per period from `from` to `to` (now when absent), against the
    /// limits: one entry per period with spend, oldest first — the budget's days or months in
    /// its zone, or for a total budget its days with the running total. Summed from the steps
    /// the runs reported (the read model), never a counter. The range spans at most 1,000
    /// periods (a month taken as 31 days): a wider one is VALIDATION, before anything is read.
    #[graphql(complexity = "super::cost::once(super::cost::ANALYTICS, child_complexity)")]
    async fn history(
        &self,
        ctx: &Context<'_>,
        from: DateTime<Utc>,
        to: Option<DateTime<Utc>>,
    ) -> GqlResult<Vec<BudgetPeriodSpend>> {
        let to = to.unwrap_or_else(Utc::now);
        if to <= from {
            return Err(ApiError::validation("to", "must be after from").into());
        }
        if to - from > longest_history(self.row.spec.period) {
            return Err(ApiError::validation("from", "at most 1000 periods: narrow the range").into());
        }
        let db = reads(ctx);
        // A page of step times at a time, bucketed as read: what is held is one page and the
        // periods, however many steps the range holds.
        let mut periods = Periods::new(&self.row.spec);
        let mut after = from;
        loop {
            let steps =
                budgets::spend_over_time(db, &self.row, after, to, HISTORY_PAGE).await.map_err(ApiError::from)?;
            for (at, spend) in &steps {
                periods.add(*at, *spend);
            }
            match steps.last() {
                Some((at, _)) if steps.len() == HISTORY_PAGE => after = *at + chrono::Duration::microseconds(1),
                _ => break,
            }
        }
        // A total budget counts what was spent before the range too.
        let before = if self.row.spec.period == agentlog_domain::budgets::BudgetPeriod::Total {
            let all = budgets::spent(db, &self.row, None).await.map_err(ApiError::from)?;
            let since = budgets::spent(db, &self.row, Some(from)).await.map_err(ApiError::from)?;
            Spend {
                cost_micros: all.cost_micros.saturating_sub(since.cost_micros),
                tokens: all.tokens.saturating_sub(since.tokens),
            }
        } else {
            Spend::default()
        };
        Ok(periods.finish(&self.row.spec, before))
    }
}

/// The longest range `history` reads: 1,000 of the budget's periods (a month taken as 31 days).
fn longest_history(period: agentlog_domain::budgets::BudgetPeriod) -> chrono::Duration {
    let days = if period == agentlog_domain::budgets::BudgetPeriod::Month { 31_000 } else { 1_000 };
    chrono::Duration::days(days)
}

/// Step times read at a time by `history`.
const HISTORY_PAGE: usize = 5_000;

/// One period of a budget's history.
#[derive(SimpleObject, Debug, Clone, PartialEq)]
pub struct BudgetPeriodSpend {
    /// The period's first instant (a total budget: the day's, in its zone).
    pub start: DateTime<Utc>,
    /// When the next period begins.
    pub end: Option<DateTime<Utc>>,
    /// Cost spent in the period, micro-units.
    pub cost_micros: i64,
    /// Tokens used in the period.
    pub tokens: i64,
    /// What counts against the limit at the period's end: the period's spend, or for a total
    /// budget everything spent up to then.
    pub counted: BudgetSpend,
}

/// A budget's periods with spend, oldest first, filled from its step times as they are read.
struct Periods {
    /// The spec whose zone and periods cut the times (a total budget's: its days).
    days: BudgetSpec,
    out: Vec<(DateTime<Utc>, Option<DateTime<Utc>>, Spend)>,
}

impl Periods {
    fn new(spec: &BudgetSpec) -> Self {
        let mut days = spec.clone();
        if days.period == agentlog_domain::budgets::BudgetPeriod::Total {
            days.period = agentlog_domain::budgets::BudgetPeriod::Day;
        }
        Periods { days, out: Vec::new() }
    }

    /// Adds what was spent at `at` (no earlier than any time added before).
    fn add(&mut self, at: DateTime<Utc>, spend: Spend) {
        let window = period_window(&self.days, at);
        let start = window.start.unwrap_or(at);
        match self.out.last_mut() {
            Some((s, _, sum)) if *s == start => *sum = add(*sum, spend),
            _ => self.out.push((start, window.resets_at, spend)),
        }
    }

    /// The periods against `spec`'s limits; a total budget's running total starts at `before`.
    fn finish(self, spec: &BudgetSpec, before: Spend) -> Vec<BudgetPeriodSpend> {
        let total = spec.period == agentlog_domain::budgets::BudgetPeriod::Total;
        let mut running = before;
        self.out
            .into_iter()
            .map(|(start, end, spent)| {
                running = add(running, spent);
                let counted = if total { running } else { spent };
                BudgetPeriodSpend {
                    start,
                    end,
                    cost_micros: signed(spent.cost_micros),
                    tokens: signed(spent.tokens),
                    counted: standing(spec, counted),
                }
            })
            .collect()
    }
}

fn add(a: Spend, b: Spend) -> Spend {
    Spend { cost_micros: a.cost_micros.saturating_add(b.cost_micros), tokens: a.tokens.saturating_add(b.tokens) }
}

/// `spent` against `spec`'s limits.
fn standing(spec: &BudgetSpec, spent: Spend) -> BudgetSpend {
    BudgetSpend {
        cost_micros: signed(spent.cost_micros),
        tokens: signed(spent.tokens),
        remaining_cost_micros: spec.limit_cost_micros.map(|l| signed(l.saturating_sub(spent.cost_micros))),
        remaining_tokens: spec.limit_tokens.map(|l| signed(l.saturating_sub(spent.tokens))),
        warned: spec.warned(spent),
        reached: spec.reached(spent),
    }
}

/// Budget queries.
#[derive(Default)]
pub struct BudgetsQuery;

#[Object]
impl BudgetsQuery {
    /// One budget, `id` among the caller's own (an admin names another owner with `ownerId`),
    /// else a global one of that id (a global budget is everyone's to see: it limits every
    /// user). NOT_FOUND when missing or someone else's.
    async fn budget(&self, ctx: &Context<'_>, id: String, owner_id: Option<String>) -> GqlResult<BudgetNode> {
        let Some(owner) = caller(ctx)?.namespace(owner_id.as_deref()) else {
            return Err(ApiError::not_found("budget", &id).into());
        };
        let row = budgets::budget(reads(ctx), owner, &id).await.map_err(ApiError::from)?;
        Ok(BudgetNode::new(row.ok_or_else(|| ApiError::not_found("budget", &id))?, Utc::now()))
    }

    /// The caller's budgets and the global ones (an admin: every budget), oldest first;
    /// `scope` keeps one kind.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn budgets(
        &self,
        ctx: &Context<'_>,
        scope: Option<BudgetScope>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, BudgetNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let owner = caller(ctx)?.owner();
        let page =
            budgets::budgets(reads(ctx), owner, scope.map(Into::into), &request).await.map_err(ApiError::from)?;
        let now = Utc::now();
        Ok(connection(page, |row| BudgetNode::new(row, now)))
    }
}

/// What a budget mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct BudgetPayload {
    /// The budget it answers for.
    #[graphql(skip)]
    id: String,
    /// Its owner.
    #[graphql(skip)]
    owner: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl BudgetPayload {
    /// The budget after the command (read model, settled; absent once removed).
    async fn budget(&self, ctx: &Context<'_>) -> GqlResult<Option<BudgetNode>> {
        let row = budgets::budget(reads(ctx), &self.owner, &self.id).await.map_err(ApiError::from)?;
        // Its owner's own, not a global one of the same id.
        let row = row.filter(|r| r.user_id == self.owner);
        let reached = app(ctx).runner.position();
        match row {
            Some(row) => Ok(Some(BudgetNode::new(row, Utc::now()))),
            None if reached < self.position => Err(ApiError::Behind { position: self.position, reached }.into()),
            None => Ok(None),
        }
    }
}

/// Budget mutations.
#[derive(Default)]
pub struct BudgetsMutation;

#[Object]
impl BudgetsMutation {
    /// Create or change a budget; every change is a `budget.set` event (the same terms again
    /// write nothing). At least one of `limitCostMicros` / `limitTokens`, each more than 0;
    /// `timeZone` an IANA zone; bad terms are VALIDATION and write nothing. `ownerId` (admin)
    /// sets one for another user; a `GLOBAL` budget is admin-only (FORBIDDEN). Budget ids are
    /// per owner: another user's `id` is no obstacle (the budget made is the owner's own), and
    /// the same `id` again changes the owner's budget.
    async fn set_budget(
        &self,
        ctx: &Context<'_>,
        input: BudgetInput,
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<BudgetPayload> {
        let spec = input.into_spec()?;
        let id = spec.budget_id.clone();
        let out = commands(ctx)?.set_budget(spec, owner_id.as_deref(), request_id.as_deref()).await?;
        Ok(BudgetPayload { id, owner: out.state.user_id, position: out.position })
    }

    /// Remove a budget (`budget.removed`): it limits nothing from now on.
    async fn remove_budget(
        &self,
        ctx: &Context<'_>,
        id: String,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose budget `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<BudgetPayload> {
        let out = commands(ctx)?.owned_by(owner_id.as_deref()).remove_budget(&id, request_id.as_deref()).await?;
        Ok(BudgetPayload { id, owner: out.state.user_id, position: out.position })
    }
}
