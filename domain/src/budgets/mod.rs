//! Budget (stream `budget-<budgetId>`): a spending limit on a scope — a user, an agent, a task, a
//! group, or everything (admin only) — over a period (a day or a calendar month in an IANA time
//! zone, or the total), in cost micro-units and/or tokens, with a warning threshold (80% by
//! default) and what happens at the limit: `refuse` new runs, or also `interrupt` running ones.
//!
//! The budget holds only its terms. What was spent is folded by the `budgets` read model from
//! the usage steps report; the server reads it (settled to the log's head) and hands it to the
//! pure rules here as [`BudgetStanding`] facts: [`refuse_start`] before a run starts, and
//! [`interrupting`] on each reported step of a running run.
//!
//! ```
//! use agentlog_domain::budgets::{BudgetSpec, BudgetStanding, Spend, refuse_start};
//! let spec = BudgetSpec::user("b1", "u1", Some(1_000), None);
//! let standing = BudgetStanding { spec, spent: Spend { cost_micros: 1_000, tokens: 0 } };
//! assert!(refuse_start(&[standing]).is_err());
//! ```

#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::aggregate::Aggregate;
use crate::briefs::{BriefType, CreateBrief};
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::ids::{derived_id, server_id};
use crate::scope::Scope;
use crate::streams::StreamKind;
use crate::values::Usage;

/// The warning threshold when none is given, in percent of the limit.
pub const DEFAULT_WARN_PERCENT: u8 = 80;

/// What a budget limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScopeKind {
    /// Every run of one user (`scopeId` is the user).
    User,
    /// Every run of one agent.
    Agent,
    /// Every run of one task.
    Task,
    /// Every run in one chat group (its supervisor and the members it dispatches).
    Group,
    /// Every run of every user (admin only; no `scopeId`).
    Global,
}

impl BudgetScopeKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Agent => "agent",
            Self::Task => "task",
            Self::Group => "group",
            Self::Global => "global",
        }
    }
}

/// The period a budget's spend is counted over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetPeriod {
    /// A calendar day in the budget's time zone.
    Day,
    /// A calendar month in the budget's time zone.
    Month,
    /// Everything ever spent; never resets.
    Total,
}

/// What happens at the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetAction {
    /// New runs of the scope are refused (LIMIT); running ones go on.
    #[default]
    Refuse,
    /// Also end a running run whose reported step reaches the limit (`cost_limit`).
    Interrupt,
}

fn default_time_zone() -> String {
    "UTC".into()
}

fn default_warn_percent() -> u8 {
    DEFAULT_WARN_PERCENT
}

/// A budget's terms, as `setBudget` gives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetSpec {
    /// Its id.
    pub budget_id: String,
    /// What it limits.
    pub scope: BudgetScopeKind,
    /// The user, agent, task or group limited (absent for `global`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<String>,
    /// The period.
    pub period: BudgetPeriod,
    /// The IANA zone whose days and months the period follows (`UTC` by default).
    #[serde(default = "default_time_zone")]
    pub time_zone: String,
    /// The most cost, in micro-units, the scope may spend in a period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_cost_micros: Option<u64>,
    /// The most tokens the scope may use in a period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_tokens: Option<u64>,
    /// Percent of a limit at which the owner is warned (1 to 100).
    #[serde(default = "default_warn_percent")]
    pub warn_percent: u8,
    /// What happens at the limit.
    #[serde(default)]
    pub action: BudgetAction,
}

impl BudgetSpec {
    /// A total budget on user `user_id` that refuses new runs at the limit.
    pub fn user(
        budget_id: &str,
        user_id: &str,
        limit_cost_micros: Option<u64>,
        limit_tokens: Option<u64>,
    ) -> Self {
        Self {
            budget_id: budget_id.into(),
            scope: BudgetScopeKind::User,
            scope_id: Some(user_id.into()),
            period: BudgetPeriod::Total,
            time_zone: default_time_zone(),
            limit_cost_micros,
            limit_tokens,
            warn_percent: DEFAULT_WARN_PERCENT,
            action: BudgetAction::Refuse,
        }
    }

    /// Has `spent` reached a limit?
    pub fn reached(&self, spent: Spend) -> bool {
        self.limit_cost_micros.is_some_and(|l| spent.cost_micros >= l)
            || self.limit_tokens.is_some_and(|l| spent.tokens >= l)
    }

    /// Has `spent` reached the warning threshold of a limit?
    pub fn warned(&self, spent: Spend) -> bool {
        let threshold =
            |limit: u64| (u128::from(limit) * u128::from(self.warn_percent)).div_ceil(100);
        self.limit_cost_micros.is_some_and(|l| u128::from(spent.cost_micros) >= threshold(l))
            || self.limit_tokens.is_some_and(|l| u128::from(spent.tokens) >= threshold(l))
    }

    fn check(&self) -> Result<(), DomainError> {
        let id = &self.budget_id;
        if id.is_empty()
            || id.len() > 128
            || id.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(DomainError::validation(
                "budgetId",
                "must be 1 to 128 characters, no spaces",
            ));
        }
        match (self.scope, &self.scope_id) {
            (BudgetScopeKind::Global, Some(_)) => {
                return Err(DomainError::validation("scopeId", "a global budget names no scope"));
            }
            (BudgetScopeKind::Global, None) => {}
            (_, None) => {
                return Err(DomainError::validation(
                    "scopeId",
                    "names the user, agent, task or group",
                ));
            }
            (_, Some(s)) if s.trim().is_empty() || s.len() > 128 => {
                return Err(DomainError::validation("scopeId", "must be 1 to 128 characters"));
            }
            (_, Some(_)) => {}
        }
        if self.limit_cost_micros.is_none() && self.limit_tokens.is_none() {
            return Err(DomainError::validation(
                "limitCostMicros",
                "a budget needs a cost or a token limit",
            ));
        }
        if self.limit_cost_micros == Some(0) {
            return Err(DomainError::validation("limitCostMicros", "must be more than 0"));
        }
        if self.limit_tokens == Some(0) {
            return Err(DomainError::validation("limitTokens", "must be more than 0"));
        }
        if !(1..=100).contains(&self.warn_percent) {
            return Err(DomainError::validation("warnPercent", "must be 1 to 100"));
        }
        if self.time_zone.is_empty() || self.time_zone.len() > 64 {
            return Err(DomainError::validation("timeZone", "must be an IANA time zone"));
        }
        Ok(())
    }
}

/// What a scope spent in a period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spend {
    /// Cost, micro-units (unmeasured steps count 0).
    pub cost_micros: u64,
    /// Tokens (unmeasured steps count 0).
    pub tokens: u64,
}

impl Spend {
    /// This spend plus a step's usage.
    pub fn plus(self, usage: Usage) -> Spend {
        Spend {
            cost_micros: self.cost_micros.saturating_add(usage.cost_micros.unwrap_or(0)),
            tokens: self.tokens.saturating_add(usage_tokens(usage)),
        }
    }
}

/// The tokens a step used: its total, or input plus output when no total was measured.
pub fn usage_tokens(usage: Usage) -> u64 {
    usage.total_tokens.unwrap_or_else(|| {
        usage.input_tokens.unwrap_or(0).saturating_add(usage.output_tokens.unwrap_or(0))
    })
}

/// A budget that applies to a run, with what its scope spent in the current period: the
/// server's fact for the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetStanding {
    /// The budget.
    pub spec: BudgetSpec,
    /// Spent in the current period, before the command at hand.
    pub spent: Spend,
}

/// May a run start under these budgets? LIMIT naming the first budget whose limit is reached.
pub fn refuse_start(standings: &[BudgetStanding]) -> Result<(), DomainError> {
    match standings.iter().find(|s| s.spec.reached(s.spent)) {
        Some(s) => Err(DomainError::BudgetReached {
            budget_id: s.spec.budget_id.clone(),
            scope: s.spec.scope.as_str(),
        }),
        None => Ok(()),
    }
}

/// The `interrupt` budget a step using `usage` makes reach its limit, if any: the run ends
/// after that step (`cost_limit`).
pub fn interrupting(standings: &[BudgetStanding], usage: Usage) -> Option<&BudgetStanding> {
    standings
        .iter()
        .find(|s| s.spec.action == BudgetAction::Interrupt && s.spec.reached(s.spent.plus(usage)))
}

/// The period starting at `period_start` as text (`total` for a total budget).
pub fn period_name(period_start: Option<DateTime<Utc>>) -> String {
    period_start.map_or_else(|| "total".to_string(), |t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// `<budgetId>:<period>`: what is told once per budget and period is keyed on it.
pub fn period_key(budget_id: &str, period_start: Option<DateTime<Utc>>) -> String {
    format!("{budget_id}:{}", period_name(period_start))
}

/// The brief that tells `owner` its budget's scope reached its warning threshold in the period
/// starting at `period_start` (`None`: a total budget). Its id is derived from the owner, the
/// budget and the period (budget ids are per owner), so however many steps cross the
/// threshold, on however many instances, there is one per period; like every brief, it brings
/// its owner one notification (`brief:<briefId>`).
pub fn warning(
    owner: &str,
    spec: &BudgetSpec,
    period_start: Option<DateTime<Utc>>,
    spent: Spend,
) -> CreateBrief {
    let period = period_name(period_start);
    let key = crate::stamp::owned_key(owner, &period_key(&spec.budget_id, period_start));
    let scope = match &spec.scope_id {
        Some(id) => format!("{} {id}", spec.scope.as_str()),
        None => "everything".to_string(),
    };
    let of =
        |used: u64, limit: Option<u64>, unit: &str| limit.map(|l| format!("{used} of {l} {unit}"));
    let used: Vec<String> = [
        of(spent.cost_micros, spec.limit_cost_micros, "cost micro-units"),
        of(spent.tokens, spec.limit_tokens, "tokens"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let title = format!("Budget {} is at {}% for {scope}", spec.budget_id, spec.warn_percent);
    let summary = format!(
        "In the period from {period}, {scope} has used {}. At the limit new runs are refused{}.",
        used.join(" and "),
        if spec.action == BudgetAction::Interrupt { " and running ones are ended" } else { "" }
    );
    let mut brief = CreateBrief::new(
        server_id(derived_id("budget-warning", &key, 0)),
        BriefType::Insight,
        title,
        summary,
    );
    brief.trigger = Some("budget".into());
    brief
}

/// A command to a budget.
#[derive(Debug, Clone, PartialEq)]
pub enum BudgetCommand {
    /// Create it or change its terms (the owner is fixed at creation).
    Set {
        /// The terms.
        spec: BudgetSpec,
        /// The owner of the agent, task or group limited, as the server found it (`None`:
        /// there is none); unused for user and global budgets.
        scope_owner: Option<String>,
    },
    /// Remove it: nothing is limited by it any more.
    Remove,
}

/// `budget.set`: the budget's terms from now on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetSet {
    /// The terms.
    #[serde(flatten)]
    pub spec: BudgetSpec,
    /// Owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `budget.removed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRemoved {
    /// When.
    pub at: DateTime<Utc>,
}

crate::domain_events! {
    /// Everything a budget records.
    pub enum BudgetEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// Created or changed.
        Set(BudgetSet) = "budget.set" v 1,
        /// Removed.
        Removed(BudgetRemoved) = "budget.removed" v 1,
    }
}

/// The state of a budget, folded from `budget-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The terms; `None` while it does not exist or after it was removed.
    pub spec: Option<BudgetSpec>,
    /// The owner (kept after removal: the id stays theirs).
    pub user_id: String,
}

impl Budget {
    /// Does it exist (set and not removed)?
    pub fn exists(&self) -> bool {
        self.spec.is_some()
    }
}

const AGGREGATE: &str = "budget";

impl Aggregate for Budget {
    type Command = BudgetCommand;
    type Event = BudgetEvent;
    const KIND: StreamKind = StreamKind::Budget;

    fn decide(
        &self,
        command: &BudgetCommand,
        ctx: &Context,
    ) -> Result<Vec<BudgetEvent>, DomainError> {
        match command {
            BudgetCommand::Set { spec, scope_owner } => {
                if !self.user_id.is_empty() && self.user_id != ctx.user_id {
                    return Err(DomainError::AlreadyExists {
                        aggregate: AGGREGATE,
                        id: spec.budget_id.clone(),
                    });
                }
                spec.check()?;
                match (spec.scope, spec.scope_id.as_deref()) {
                    // A user budgets only their own runs.
                    (BudgetScopeKind::User, Some(user)) if user != ctx.user_id => {
                        return Err(DomainError::validation(
                            "scopeId",
                            "a user budget limits its owner's runs",
                        ));
                    }
                    (
                        BudgetScopeKind::Agent | BudgetScopeKind::Task | BudgetScopeKind::Group,
                        Some(id),
                    ) if scope_owner.as_deref() != Some(ctx.user_id.as_str()) => {
                        return Err(DomainError::not_found(spec.scope.as_str(), id));
                    }
                    _ => {}
                }
                if self.spec.as_ref() == Some(spec) {
                    return Ok(Vec::new());
                }
                Ok(vec![BudgetEvent::Set(BudgetSet {
                    spec: spec.clone(),
                    user_id: ctx.user_id.clone(),
                    at: ctx.now,
                })])
            }
            BudgetCommand::Remove => match &self.spec {
                Some(_) => Ok(vec![BudgetEvent::Removed(BudgetRemoved { at: ctx.now })]),
                None => Err(DomainError::not_found(AGGREGATE, "")),
            },
        }
    }

    fn evolve(self, event: &BudgetEvent) -> Self {
        match event {
            BudgetEvent::Set(e) => Self { spec: Some(e.spec.clone()), user_id: e.user_id.clone() },
            BudgetEvent::Removed(_) => Self { spec: None, ..self },
        }
    }

    fn scope(&self) -> Scope {
        Scope {
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }
}
