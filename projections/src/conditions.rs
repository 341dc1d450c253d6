//! A `WHERE` clause built from optional filters, with its bound values, for the query functions:
//! portable `$n` placeholders, numbered in the order conditions are added.
//!
//! ```ignore
//! let mut w = Conditions::default();
//! w.eq("status", Some("running"));
//! w.owner(owner);                                   // `user_id = $n` unless admin (None)
//! w.beyond(&cursor, "created_at", "id", Order::Desc, Side::After, false);
//! let sql = format!("SELECT … FROM operations {} ORDER BY created_at DESC, id DESC LIMIT {}", w.sql(), n);
//! db.fetch(&sql, w.args()).await?;
//! ```

use crate::{db::SqlValue, page::Cursor};

/// Which way a list runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Smallest sort key first.
    Asc,
    /// Largest sort key first.
    Desc,
}

impl Order {
    /// `ASC` / `DESC`.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Self::Asc => "ASC",
            Self::Desc => "DESC",
        }
    }

    /// The other way round.
    pub(crate) fn reversed(self) -> Self {
        match self {
            Self::Asc => Self::Desc,
            Self::Desc => Self::Asc,
        }
    }
}

/// Which side of a cursor, in list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Later in the list.
    After,
    /// Earlier in the list.
    Before,
}

/// Conditions joined by `AND`, and their values.
#[derive(Debug, Default, Clone)]
pub(crate) struct Conditions {
    clauses: Vec<String>,
    args: Vec<SqlValue>,
}

impl Conditions {
    /// The next placeholder, bound to `value`.
    pub(crate) fn bind(&mut self, value: impl Into<SqlValue>) -> String {
        self.args.push(value.into());
        format!("${}", self.args.len())
    }

    /// Add a raw condition (its placeholders come from [`bind`](Self::bind)).
    pub(crate) fn push(&mut self, clause: String) {
        self.clauses.push(clause);
    }

    /// `column = value`, when a value is given.
    pub(crate) fn eq(&mut self, column: &str, value: Option<impl Into<SqlValue>>) {
        if let Some(v) = value {
            let p = self.bind(v);
            self.clauses.push(format!("{column} = {p}"));
        }
    }

    /// `column >= value`, when given.
    pub(crate) fn at_least(&mut self, column: &str, value: Option<i64>) {
        if let Some(v) = value {
            let p = self.bind(v);
            self.clauses.push(format!("{column} >= {p}"));
        }
    }

    /// `column < value`, when given.
    pub(crate) fn below(&mut self, column: &str, value: Option<i64>) {
        if let Some(v) = value {
            let p = self.bind(v);
            self.clauses.push(format!("{column} < {p}"));
        }
    }

    /// Only the owner's rows, unless the caller is an admin (`owner = None`).
    pub(crate) fn owner(&mut self, column: &str, owner: Option<&str>) {
        self.eq(column, owner);
    }

    /// The rows on `side` of `cursor` in a list ordered by `(sort_column, id_column)` in
    /// `order`; with `inclusive`, the cursor's own row too.
    pub(crate) fn beyond(
        &mut self,
        cursor: &Cursor,
        sort_column: &str,
        id_column: &str,
        order: Order,
        side: Side,
        inclusive: bool,
    ) {
        let op = match (order, side) {
            (Order::Asc, Side::After) | (Order::Desc, Side::Before) => ">",
            (Order::Asc, Side::Before) | (Order::Desc, Side::After) => "<",
        };
        let id_op = if inclusive { format!("{op}=") } else { op.to_string() };
        let key = self.bind(cursor.sort_key);
        let key_again = self.bind(cursor.sort_key);
        let id = self.bind(cursor.id.as_str());
        self.clauses
            .push(format!("({sort_column} {op} {key} OR ({sort_column} = {key_again} AND {id_column} {id_op} {id}))"));
    }

    /// `WHERE …` (empty when there is no condition).
    pub(crate) fn sql(&self) -> String {
        if self.clauses.is_empty() { String::new() } else { format!("WHERE {}", self.clauses.join(" AND ")) }
    }

    /// The bound values, in placeholder order.
    pub(crate) fn args(&self) -> &[SqlValue] {
        &self.args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_number_their_placeholders() {
        let mut w = Conditions::default();
        w.eq("status", Some("running"));
        w.eq("kind", None::<&str>);
        w.owner("user_id", Some("u1"));
        w.beyond(&Cursor::new(7, "x"), "created_at", "id", Order::Desc, Side::After, false);
        assert_eq!(
            w.sql(),
            "WHERE status = $1 AND user_id = $2 AND (created_at < $3 OR (created_at = $4 AND id < $5))"
        );
        assert_eq!(w.args().len(), 5);
        let mut back = Conditions::default();
        back.beyond(&Cursor::new(7, "x"), "seq", "id", Order::Asc, Side::Before, true);
        assert_eq!(back.sql(), "WHERE (seq < $1 OR (seq = $2 AND id <= $3))");
        assert_eq!(Conditions::default().sql(), "");
    }
}
