//! A small builder for the read models' list queries over [`Conditions`]: owner scoping, filters
//! and a keyset page (`ORDER BY sort, id` with a `(sort, id)` seek past the cursor).
//!
//! ```ignore
//! let mut q = Select::new(TaskRow::COLUMNS, "tasks");
//! q.owner(owner).eq("status", "running");
//! let page = q.page(db, "created_at", "task_id", Order::Asc, &request, TaskRow::from_row, |t| …).await?;
//! ```

use crate::{
    conditions::Conditions,
    db::{ReadDb, Row, SqlValue},
    error::ProjectionError,
    page::{Cursor, Page, PageRequest},
};

pub(crate) use crate::conditions::Order;

/// A SELECT under construction: columns, a table and a [`Conditions`] clause.
pub(crate) struct Select {
    columns: String,
    from: String,
    conditions: Conditions,
}

impl Select {
    /// `SELECT columns FROM from`.
    pub(crate) fn new(columns: &[&str], from: &str) -> Self {
        Self { columns: columns.join(", "), from: from.to_string(), conditions: Conditions::default() }
    }

    /// Bind a value; returns its placeholder.
    pub(crate) fn bind(&mut self, v: impl Into<SqlValue>) -> String {
        self.conditions.bind(v)
    }

    /// Add a raw condition (binds already made with [`Select::bind`]).
    pub(crate) fn condition(&mut self, sql: impl Into<String>) -> &mut Self {
        self.conditions.push(sql.into());
        self
    }

    /// `column = value`.
    pub(crate) fn eq(&mut self, column: &str, v: impl Into<SqlValue>) -> &mut Self {
        self.conditions.eq(column, Some(v));
        self
    }

    /// `column = value` when a value is given.
    pub(crate) fn eq_opt<V: Into<SqlValue>>(&mut self, column: &str, v: Option<V>) -> &mut Self {
        self.conditions.eq(column, v);
        self
    }

    /// Only the owner's rows (`None`: an admin sees all).
    pub(crate) fn owner(&mut self, owner: Option<&str>) -> &mut Self {
        self.conditions.owner("user_id", owner);
        self
    }

    fn sql(&self, tail: &str) -> String {
        format!("SELECT {} FROM {} {}{tail}", self.columns, self.from, self.conditions.sql())
    }

    /// All matching rows in the given order.
    pub(crate) async fn all(&self, db: &ReadDb, order_by: &str) -> Result<Vec<Row>, ProjectionError> {
        db.fetch(&self.sql(&format!(" ORDER BY {order_by}")), self.conditions.args()).await
    }

    /// At most one row.
    pub(crate) async fn one(&self, db: &ReadDb) -> Result<Option<Row>, ProjectionError> {
        Ok(db.fetch(&self.sql(" LIMIT 1"), self.conditions.args()).await?.into_iter().next())
    }

    /// One keyset page ordered by (`sort`, `id`) in `order`.
    #[allow(clippy::too_many_arguments)] // one call shape for every list; a struct would only rename the arguments
    pub(crate) async fn page<T>(
        mut self,
        db: &ReadDb,
        sort: &str,
        id: &str,
        order: Order,
        request: &PageRequest,
        read: impl Fn(&Row) -> Result<T, ProjectionError>,
        cursor_of: impl Fn(&T) -> Cursor,
    ) -> Result<Page<T>, ProjectionError> {
        self.conditions.after(request.cursor()?.as_ref(), sort, id, order);
        let limit = request.limit();
        let dir = order.sql();
        let tail = format!(" ORDER BY {sort} {dir}, {id} {dir} LIMIT {}", limit + 1);
        let rows = db.fetch(&self.sql(&tail), self.conditions.args()).await?;
        let items = rows.iter().take(limit + 1).map(read).collect::<Result<Vec<T>, _>>()?;
        Ok(Page::from_fetched(items, limit, cursor_of))
    }
}
