//! Rows turned into one PostgreSQL array per column: `INSERT … SELECT FROM UNNEST(…)` and
//! `(…) IN (SELECT * FROM UNNEST(…))` carry any number of rows in one statement whose text, and
//! so its prepared plan, does not change with the count.

use sqlx::Postgres;

use agentlog_sqlite::SqlValue;

/// Rows turned into one PostgreSQL array per column, for `INSERT … SELECT FROM UNNEST(…)`.
enum ColumnArray {
    /// Every value NULL: written as a literal `NULL`, which takes the column's type.
    Null,
    /// `bigint[]`.
    Int(Vec<Option<i64>>),
    /// `double precision[]` (integers in a column that also holds floats are widened).
    Float(Vec<Option<f64>>),
    /// `text[]`.
    Text(Vec<Option<String>>),
}

pub(super) struct ColumnArrays(Vec<ColumnArray>);

impl ColumnArrays {
    /// The arrays of `rows`, or `None` when a column mixes text and numbers (then the caller
    /// falls back to `VALUES`).
    pub(super) fn of(width: usize, rows: &[Vec<SqlValue>]) -> Option<Self> {
        let mut out = Vec::with_capacity(width);
        for c in 0..width {
            let column = rows.iter().map(|r| &r[c]);
            let (mut ints, mut floats, mut texts) = (false, false, false);
            for v in column.clone() {
                match v {
                    SqlValue::Null => {}
                    SqlValue::Int(_) => ints = true,
                    SqlValue::Float(_) => floats = true,
                    SqlValue::Text(_) => texts = true,
                }
            }
            out.push(match (ints, floats, texts) {
                (false, false, false) => ColumnArray::Null,
                (_, _, true) if ints || floats => return None,
                (_, _, true) => ColumnArray::Text(column.map(|v| v.as_str().map(str::to_string)).collect()),
                (_, true, _) => ColumnArray::Float(column.map(SqlValue::as_f64).collect()),
                (true, false, false) => ColumnArray::Int(column.map(SqlValue::as_i64).collect()),
            });
        }
        // Rows of NULLs only (or no rows) have no array to count the rows by: leave them to `VALUES`.
        if out.iter().all(|a| matches!(a, ColumnArray::Null)) {
            return None;
        }
        Some(Self(out))
    }

    pub(super) fn insert_sql(&self, table: &str, columns: &[&str], tail: &str) -> String {
        let mut arrays = Vec::new();
        let mut select = Vec::new();
        for (i, array) in self.0.iter().enumerate() {
            let ty = match array {
                ColumnArray::Null => {
                    select.push("NULL".to_string());
                    continue;
                }
                ColumnArray::Int(_) => "bigint",
                ColumnArray::Float(_) => "double precision",
                ColumnArray::Text(_) => "text",
            };
            arrays.push(format!("${}::{ty}[]", arrays.len() + 1));
            select.push(format!("u.c{i}"));
        }
        let names: Vec<String> = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, a)| !matches!(a, ColumnArray::Null))
            .map(|(i, _)| format!("c{i}"))
            .collect();
        format!(
            "INSERT INTO {table} ({}) SELECT {} FROM UNNEST({}) AS u({}){tail}",
            columns.join(", "),
            select.join(", "),
            arrays.join(", "),
            names.join(", ")
        )
    }

    /// `(c1, c2, …) IN (SELECT * FROM UNNEST($1::text[], $2::bigint[], …))`: rows whose `columns`
    /// equal one of these rows (keys). `None` when a column's values are all NULL (no key is).
    pub(super) fn in_sql(&self, columns: &[&str]) -> Option<String> {
        let mut arrays = Vec::with_capacity(self.0.len());
        for (i, array) in self.0.iter().enumerate() {
            let ty = match array {
                ColumnArray::Null => return None,
                ColumnArray::Int(_) => "bigint",
                ColumnArray::Float(_) => "double precision",
                ColumnArray::Text(_) => "text",
            };
            arrays.push(format!("${}::{ty}[]", i + 1));
        }
        Some(format!("({}) IN (SELECT * FROM UNNEST({}))", columns.join(", "), arrays.join(", ")))
    }

    pub(super) fn bind<'q>(
        &'q self,
        mut q: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        for array in &self.0 {
            q = match array {
                ColumnArray::Null => q,
                ColumnArray::Int(v) => q.bind(v),
                ColumnArray::Float(v) => q.bind(v),
                ColumnArray::Text(v) => q.bind(v),
            };
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::{ColumnArrays, SqlValue};

    #[test]
    fn keys_become_one_array_per_column() {
        let keys = vec![vec![SqlValue::from("u1"), SqlValue::Int(3)], vec![SqlValue::from("u2"), SqlValue::Int(4)]];
        let arrays = ColumnArrays::of(2, &keys).map(|a| a.in_sql(&["user_id", "seq"]));
        assert_eq!(
            arrays,
            Some(Some("(user_id, seq) IN (SELECT * FROM UNNEST($1::text[], $2::bigint[]))".to_string()))
        );
        // A column mixing text and numbers has no array type; an all-NULL one matches nothing.
        assert!(ColumnArrays::of(1, &[vec![SqlValue::from("a")], vec![SqlValue::Int(1)]]).is_none());
        let nulls = vec![vec![SqlValue::from("u1"), SqlValue::Null]];
        assert_eq!(ColumnArrays::of(2, &nulls).map(|a| a.in_sql(&["user_id", "seq"])), Some(None));
    }
}
