//! `budget_spend_rollups`: what each budget scope spent, per quarter hour and in total, kept by
//! the operations projection as steps are recorded (in the same transaction as the steps, and
//! rebuilt with them from the log). A budget's standing — read at every run's start and after
//! every step — sums the quarter hours of its period: a few thousand rows at most, however many
//! steps the period or the log holds.
//!
//! Every zone's offset from UTC is a whole number of quarter hours, so a budget's days and months
//! in its zone are whole buckets; a period that starts elsewhere reads the steps of its first,
//! partial quarter hour itself.

use std::collections::{BTreeMap, HashMap};

use agentlog_domain::budgets::{BudgetScopeKind, Spend};
use chrono::{DateTime, Utc};

use super::rows::BudgetRow;
use crate::{
    db::{ReadDb, ReadTx, SqlValue},
    error::ProjectionError,
};

/// The table.
pub(crate) const TABLE: &str = "budget_spend_rollups";

/// A bucket's width: a quarter of an hour, µs.
const QUARTER_MICROS: i64 = 15 * 60 * 1_000_000;

const COLUMNS: [&str; 9] = [
    "rollup_key",
    "scope",
    "scope_id",
    "user_id",
    "granularity",
    "bucket_start",
    "cost_micros",
    "tokens",
    "updated_position",
];

/// What one recorded step spent, and the scopes of its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepSpend {
    /// The run's owner.
    pub user_id: String,
    /// The run's agent.
    pub agent_id: String,
    /// The task it runs for.
    pub task_id: Option<String>,
    /// The chat group it runs in.
    pub group_id: Option<String>,
    /// When the step was reported, epoch µs.
    pub at: i64,
    /// Its cost (unmeasured: 0).
    pub cost_micros: i64,
    /// Its tokens: the total, else input plus output (unmeasured: 0).
    pub tokens: i64,
    /// The position of its event.
    pub position: i64,
}

/// A budget's scope as the table keys it: `(scope, scope_id, user_id)`.
fn scope_key(budget: &BudgetRow) -> (&'static str, String, String) {
    let scope_id = budget.spec.scope_id.clone().unwrap_or_default();
    match budget.spec.scope {
        BudgetScopeKind::Global => ("global", String::new(), String::new()),
        BudgetScopeKind::User => ("user", scope_id, budget.user_id.clone()),
        BudgetScopeKind::Agent => ("agent", scope_id, budget.user_id.clone()),
        BudgetScopeKind::Task => ("task", scope_id, budget.user_id.clone()),
        BudgetScopeKind::Group => ("group", scope_id, budget.user_id.clone()),
    }
}

fn rollup_key(scope: &str, scope_id: &str, user_id: &str, granularity: &str, bucket_start: i64) -> String {
    format!("{scope}\u{1f}{user_id}\u{1f}{scope_id}\u{1f}{granularity}\u{1f}{bucket_start}")
}

/// A run's scopes and a quarter hour: `(owner, agent, task, group, bucket start)`.
type RunQuarter<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, i64);

/// Steps summed: their cost, tokens and last position.
#[derive(Debug, Clone, Copy, Default)]
struct Sum {
    cost_micros: i64,
    tokens: i64,
    position: i64,
}

impl Sum {
    fn add(&mut self, cost_micros: i64, tokens: i64, position: i64) {
        self.cost_micros = self.cost_micros.saturating_add(cost_micros);
        self.tokens = self.tokens.saturating_add(tokens);
        self.position = self.position.max(position);
    }
}

/// One rollup row being summed.
#[derive(Debug, Clone, Default)]
struct Cell {
    scope: &'static str,
    scope_id: String,
    user_id: String,
    granularity: &'static str,
    bucket_start: i64,
    cost_micros: i64,
    tokens: i64,
    updated_position: i64,
}

/// Add `steps` (recorded in this batch) to their scopes' quarter-hour and total rows.
pub(crate) async fn count_steps(tx: &mut ReadTx, steps: &[StepSpend]) -> Result<(), ProjectionError> {
    if steps.is_empty() {
        return Ok(());
    }
    // The batch's steps summed per run scope and quarter hour first: a batch holds many steps
    // of few runs, and each sum then meets its ten rows once.
    let mut sums: HashMap<RunQuarter<'_>, Sum> = HashMap::new();
    for step in steps {
        let quarter = step.at.div_euclid(QUARTER_MICROS) * QUARTER_MICROS;
        let key =
            (step.user_id.as_str(), step.agent_id.as_str(), step.task_id.as_deref(), step.group_id.as_deref(), quarter);
        sums.entry(key).or_default().add(step.cost_micros, step.tokens, step.position);
    }
    // What the batch adds to each row; the statement adds it to what the row holds (no read).
    let mut cells: BTreeMap<String, Cell> = BTreeMap::new();
    for ((user_id, agent_id, task_id, group_id, quarter), sum) in sums {
        let mut scopes = vec![("global", "", ""), ("user", user_id, user_id), ("agent", agent_id, user_id)];
        if let Some(task) = task_id {
            scopes.push(("task", task, user_id));
        }
        if let Some(group) = group_id {
            scopes.push(("group", group, user_id));
        }
        for (scope, scope_id, user_id) in scopes {
            for (granularity, bucket_start) in [("quarter", quarter), ("total", 0)] {
                let cell =
                    cells.entry(rollup_key(scope, scope_id, user_id, granularity, bucket_start)).or_insert_with(|| {
                        Cell {
                            scope,
                            scope_id: scope_id.to_string(),
                            user_id: user_id.to_string(),
                            granularity,
                            bucket_start,
                            ..Cell::default()
                        }
                    });
                cell.cost_micros = cell.cost_micros.saturating_add(sum.cost_micros);
                cell.tokens = cell.tokens.saturating_add(sum.tokens);
                cell.updated_position = cell.updated_position.max(sum.position);
            }
        }
    }
    let rows: Vec<Vec<SqlValue>> = cells
        .into_iter()
        .map(|(key, c)| {
            vec![
                key.into(),
                c.scope.into(),
                c.scope_id.into(),
                c.user_id.into(),
                c.granularity.into(),
                c.bucket_start.into(),
                c.cost_micros.into(),
                c.tokens.into(),
                c.updated_position.into(),
            ]
        })
        .collect();
    tx.insert_rows(TABLE, &COLUMNS, &rows, ADD_ON_CONFLICT).await
}

/// A row already there takes the batch's sums added to its own (both backends' SQL).
const ADD_ON_CONFLICT: &str = " ON CONFLICT (rollup_key) DO UPDATE SET \
    cost_micros = budget_spend_rollups.cost_micros + excluded.cost_micros, \
    tokens = budget_spend_rollups.tokens + excluded.tokens, \
    updated_position = CASE WHEN excluded.updated_position > budget_spend_rollups.updated_position \
    THEN excluded.updated_position ELSE budget_spend_rollups.updated_position END";

/// What `budget`'s scope spent from `from` on (everything when `None`): the usage its runs'
/// steps reported, summed (an unmeasured cost or token count adds 0). From the rollups: the
/// total row, or the quarter hours from `from` on plus, when `from` falls inside a quarter hour,
/// that quarter's steps from `from` read from `operation_steps`.
pub async fn spent(db: &ReadDb, budget: &BudgetRow, from: Option<DateTime<Utc>>) -> Result<Spend, ProjectionError> {
    let (scope, scope_id, user_id) = scope_key(budget);
    let Some(from) = from else {
        let key = rollup_key(scope, &scope_id, &user_id, "total", 0);
        let sql = format!("SELECT cost_micros, tokens FROM {TABLE} WHERE rollup_key = $1");
        let rows = db.fetch(&sql, &[key.into()]).await?;
        return Ok(spend_of(rows.first().map(|r| (r.i64(0), r.i64(1)))));
    };
    let from = from.timestamp_micros();
    let whole = from.div_euclid(QUARTER_MICROS) * QUARTER_MICROS;
    let whole = if whole == from { whole } else { whole + QUARTER_MICROS };
    let sql = format!(
        "SELECT CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT), CAST(COALESCE(SUM(tokens), 0) AS BIGINT) FROM {TABLE} \
         WHERE scope = $1 AND scope_id = $2 AND user_id = $3 AND granularity = 'quarter' AND bucket_start >= $4"
    );
    let args: Vec<SqlValue> = vec![scope.into(), scope_id.as_str().into(), user_id.as_str().into(), whole.into()];
    let rows = db.fetch(&sql, &args).await?;
    let mut spent = spend_of(rows.first().map(|r| (r.i64(0), r.i64(1))));
    if whole > from {
        let part = super::query::spent_between(db, budget, from, whole).await?;
        spent = Spend {
            cost_micros: spent.cost_micros.saturating_add(part.cost_micros),
            tokens: spent.tokens.saturating_add(part.tokens),
        };
    }
    Ok(spent)
}

fn spend_of(sums: Option<(Option<i64>, Option<i64>)>) -> Spend {
    let unsigned = |n: Option<i64>| n.map_or(0, |n| u64::try_from(n).unwrap_or(0));
    sums.map_or_else(Spend::default, |(cost, tokens)| Spend { cost_micros: unsigned(cost), tokens: unsigned(tokens) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_scopes_apart() {
        // An agent named like a user, a task named like an agent: different rows.
        assert_ne!(rollup_key("agent", "u1", "u1", "total", 0), rollup_key("user", "u1", "u1", "total", 0));
        assert_ne!(rollup_key("task", "a", "u1", "quarter", 0), rollup_key("agent", "a", "u1", "quarter", 0));
        assert_ne!(rollup_key("agent", "a", "u1", "total", 0), rollup_key("agent", "a", "u2", "total", 0));
    }

    #[test]
    fn a_zones_midnight_is_a_whole_quarter_hour() {
        // Nepal (+05:45), Chatham (+12:45 / +13:45), India (+05:30): every offset in use.
        for offset_minutes in [345, 765, 825, 330, -210, 0] {
            let midnight =
                chrono::DateTime::parse_from_rfc3339("2026-12-07T00:00:00Z").map(|t| t.timestamp()).unwrap_or(0)
                    - offset_minutes * 60;
            assert_eq!((midnight * 1_000_000).rem_euclid(QUARTER_MICROS), 0, "{offset_minutes}");
        }
    }
}
