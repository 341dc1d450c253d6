//! Queries over the budgets read model, owner-scoped (`owner: None` = admin), and a budget's
//! spend in a period.

use agentlog_domain::budgets::{BudgetScopeKind, Spend};
use chrono::{DateTime, Utc};

use super::rows::BudgetRow;
use crate::{
    columns::micros,
    db::{ReadDb, SqlValue},
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
    select::{Order, Select},
    staging::TableRow,
};

/// Only the owner's budgets and the global ones, which limit every user (`None`: an admin sees all).
fn visible(q: &mut Select, owner: Option<&str>) {
    if let Some(owner) = owner {
        let p = q.bind(owner);
        q.condition(format!("(user_id = {p} OR scope = 'global')"));
    }
}

/// `owner`'s budget `budget_id` (budget ids are per owner), else a global one of that id, which
/// limits `owner` too (`None` when neither is there).
pub async fn budget(db: &ReadDb, owner: &str, budget_id: &str) -> Result<Option<BudgetRow>, ProjectionError> {
    let mut q = Select::new(BudgetRow::COLUMNS, BudgetRow::TABLE);
    q.eq("budget_id", budget_id);
    visible(&mut q, Some(owner));
    let mut rows: Vec<BudgetRow> =
        q.all(db, "created_at, user_id").await?.iter().map(BudgetRow::from_row).collect::<Result<_, _>>()?;
    let own = rows.iter().position(|r| r.user_id == owner).unwrap_or(0);
    Ok((own < rows.len()).then(|| rows.swap_remove(own)))
}

/// The owner's budgets and the global ones, oldest first; `scope` keeps one kind of scope.
pub async fn budgets(
    db: &ReadDb,
    owner: Option<&str>,
    scope: Option<BudgetScopeKind>,
    page: &PageRequest,
) -> Result<Page<BudgetRow>, ProjectionError> {
    let mut q = Select::new(BudgetRow::COLUMNS, BudgetRow::TABLE);
    q.eq_opt("scope", scope.map(BudgetScopeKind::as_str));
    visible(&mut q, owner);
    q.page(db, "created_at", "budget_id", Order::Asc, page, BudgetRow::from_row, |b| {
        Cursor::new(b.created_at.timestamp_micros(), &b.spec.budget_id)
    })
    .await
}

/// What a run is counted under: its owner, agent, task and group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunScope {
    /// The owner.
    pub user_id: String,
    /// The agent.
    pub agent_id: String,
    /// The task it runs for.
    pub task_id: Option<String>,
    /// The chat group it runs in.
    pub group_id: Option<String>,
}

/// Every budget a run of `run` counts against: its owner's user budgets, the owner's budgets on
/// its agent, task and group, and the global ones.
pub async fn budgets_of_run(db: &ReadDb, run: &RunScope) -> Result<Vec<BudgetRow>, ProjectionError> {
    let mut args: Vec<SqlValue> = vec![run.user_id.as_str().into()];
    let mut terms = vec!["(scope = 'user' AND scope_id = $1)".to_string()];
    for (kind, id) in [("agent", Some(&run.agent_id)), ("task", run.task_id.as_ref()), ("group", run.group_id.as_ref())]
    {
        if let Some(id) = id {
            args.push(id.as_str().into());
            terms.push(format!("(scope = '{kind}' AND scope_id = ${} AND user_id = $1)", args.len()));
        }
    }
    terms.push("scope = 'global'".into());
    let sql = format!(
        "SELECT {} FROM {} WHERE {} ORDER BY created_at, budget_id",
        BudgetRow::COLUMNS.join(", "),
        BudgetRow::TABLE,
        terms.join(" OR ")
    );
    db.fetch(&sql, &args).await?.iter().map(BudgetRow::from_row).collect()
}

/// What `budget`'s scope spent in `[from, to)` (µs), summed from the steps themselves.
pub(crate) async fn spent_between(
    db: &ReadDb,
    budget: &BudgetRow,
    from: i64,
    to: i64,
) -> Result<Spend, ProjectionError> {
    let (mut args, mut terms) = scope_terms(budget);
    args.push(from.into());
    terms.push(format!("s.at >= ${}", args.len()));
    args.push(to.into());
    terms.push(format!("s.at < ${}", args.len()));
    let sql = format!(
        "SELECT CAST(COALESCE(SUM(COALESCE(s.cost_micros, 0)), 0) AS BIGINT), \
         CAST(COALESCE(SUM({TOKENS}), 0) AS BIGINT) \
         FROM operation_steps s JOIN operations o ON o.user_id = s.user_id AND o.id = s.operation_id WHERE {}",
        terms.join(" AND ")
    );
    let rows = db.fetch(&sql, &args).await?;
    let row = rows.first();
    let read = |i: usize| row.and_then(|r| r.i64(i)).map_or(0, |n| u64::try_from(n).unwrap_or(0));
    Ok(Spend { cost_micros: read(0), tokens: read(1) })
}

/// A step's tokens: its total, else input plus output (unmeasured counts 0).
const TOKENS: &str = "COALESCE(s.total_tokens, COALESCE(s.input_tokens, 0) + COALESCE(s.output_tokens, 0))";

/// What `budget`'s scope spent in `[from, to)`, oldest first, at most `limit` entries: each
/// time its runs' steps were reported with their cost and tokens (steps at the same
/// microsecond summed). The caller buckets them into periods and reads on after the last.
pub async fn spend_over_time(
    db: &ReadDb,
    budget: &BudgetRow,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: usize,
) -> Result<Vec<(DateTime<Utc>, Spend)>, ProjectionError> {
    let (mut args, mut terms) = scope_terms(budget);
    args.push(micros(from));
    terms.push(format!("s.at >= ${}", args.len()));
    args.push(micros(to));
    terms.push(format!("s.at < ${}", args.len()));
    let sql = format!(
        "SELECT s.at, CAST(SUM(COALESCE(s.cost_micros, 0)) AS BIGINT), CAST(SUM({TOKENS}) AS BIGINT) \
         FROM operation_steps s JOIN operations o ON o.user_id = s.user_id AND o.id = s.operation_id WHERE {} GROUP BY s.at ORDER BY s.at LIMIT {limit}",
        terms.join(" AND ")
    );
    let unsigned = |n: Option<i64>| n.map_or(0, |n| u64::try_from(n).unwrap_or(0));
    db.fetch(&sql, &args)
        .await?
        .iter()
        .map(|r| {
            let at = r.i64(0).and_then(DateTime::<Utc>::from_timestamp_micros).unwrap_or_default();
            Ok((at, Spend { cost_micros: unsigned(r.i64(1)), tokens: unsigned(r.i64(2)) }))
        })
        .collect()
}

/// The conditions that keep the steps of `budget`'s scope (none for a global budget).
fn scope_terms(budget: &BudgetRow) -> (Vec<SqlValue>, Vec<String>) {
    let mut args: Vec<SqlValue> = Vec::new();
    let mut terms: Vec<String> = Vec::new();
    let column = match budget.spec.scope {
        BudgetScopeKind::User => Some("o.user_id"),
        BudgetScopeKind::Agent => Some("o.agent_id"),
        BudgetScopeKind::Task => Some("o.task_id"),
        BudgetScopeKind::Group => Some("o.group_id"),
        BudgetScopeKind::Global => None,
    };
    if let Some(column) = column {
        args.push(budget.spec.scope_id.as_deref().unwrap_or_default().into());
        terms.push(format!("{column} = ${}", args.len()));
        args.push(budget.user_id.as_str().into());
        terms.push(format!("o.user_id = ${}", args.len()));
    }
    (args, terms)
}
