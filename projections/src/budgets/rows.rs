//! The budget row: a budget's terms as `budgets` keeps them.

use agentlog_domain::budgets::{BudgetAction, BudgetPeriod, BudgetScopeKind, BudgetSpec};
use chrono::{DateTime, Utc};

use crate::{
    columns::{Columns, from_wire_name, micros, wire_name},
    db::{Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A budget as it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetRow {
    /// Owner.
    pub user_id: String,
    /// The terms.
    pub spec: BudgetSpec,
    /// First set (log time).
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
}

fn int(v: Option<u64>) -> SqlValue {
    v.map(|n| i64::try_from(n).unwrap_or(i64::MAX)).into()
}

fn unsigned(v: Option<i64>) -> Option<u64> {
    v.map(|n| u64::try_from(n).unwrap_or(0))
}

impl TableRow for BudgetRow {
    /// `(user_id, budget_id)`: budget ids are per owner.
    type Key = (String, String);
    const TABLE: &'static str = "budgets";
    const COLUMNS: &'static [&'static str] = &[
        "budget_id",
        "user_id",
        "scope",
        "scope_id",
        "period",
        "time_zone",
        "limit_cost_micros",
        "limit_tokens",
        "warn_percent",
        "action",
        "created_at",
        "updated_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "budget_id"];

    fn key(&self) -> (String, String) {
        (self.user_id.clone(), self.spec.budget_id.clone())
    }
    fn key_values(key: &(String, String)) -> Vec<SqlValue> {
        vec![key.0.as_str().into(), key.1.as_str().into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        let s = &self.spec;
        vec![
            s.budget_id.as_str().into(),
            self.user_id.as_str().into(),
            s.scope.as_str().into(),
            s.scope_id.as_deref().into(),
            wire_name(&s.period).into(),
            s.time_zone.as_str().into(),
            int(s.limit_cost_micros),
            int(s.limit_tokens),
            i64::from(s.warn_percent).into(),
            wire_name(&s.action).into(),
            micros(self.created_at),
            micros(self.updated_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        let budget_id = c.text()?;
        let user_id = c.text()?;
        let scope: BudgetScopeKind = from_wire_name(Self::TABLE, &c.text()?)?;
        let scope_id = c.opt_text();
        let period: BudgetPeriod = from_wire_name(Self::TABLE, &c.text()?)?;
        let time_zone = c.text()?;
        let limit_cost_micros = unsigned(c.opt_int());
        let limit_tokens = unsigned(c.opt_int());
        let warn_percent = u8::try_from(c.int()?).unwrap_or(100);
        let action: BudgetAction = from_wire_name(Self::TABLE, &c.text()?)?;
        Ok(Self {
            user_id,
            spec: BudgetSpec {
                budget_id,
                scope,
                scope_id,
                period,
                time_zone,
                limit_cost_micros,
                limit_tokens,
                warn_percent,
                action,
            },
            created_at: c.time()?,
            updated_at: c.time()?,
        })
    }
}
