//! A small builder for the read models' list queries over [`Conditions`]: owner scoping, filters
//! and a keyset page (`ORDER BY sort, id` with a `(sort, id)` seek past the cursor).
//!
//! ```ignore
//! let mut q = Select::new(TaskRow::COLUMNS, "tasks");
//! q.owner(owner).eq("status", "running");
//! let page = q.page(db, "created_at", "task_id", Order::Asc, &request, TaskRow::from_row, |t| t).await?;
//! ```

use crate::{
    conditions::{Conditions, Side},
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
        self,
        db: &ReadDb,
        sort: &str,
        id: &str,
        order: Order,
        request: &PageRequest,
        read: impl Fn(&Row) -> Result<T, ProjectionError>,
        cursor_of: impl Fn(&T) -> Cursor,
    ) -> Result<Page<T>, ProjectionError> {
        let select = format!("SELECT {} FROM {}", self.columns, self.from);
        let keyset = Keyset { sort, id, order };
        keyset.page(db, &select, self.conditions, request, read, cursor_of).await
    }
}

/// The order of a list: by `sort`, then `id` to break ties, in `order`.
pub(crate) struct Keyset<'a> {
    /// The sort column.
    pub(crate) sort: &'a str,
    /// The tie-breaking id column.
    pub(crate) id: &'a str,
    /// Which way the list runs.
    pub(crate) order: Order,
}

impl Keyset<'_> {
    /// One page of `select` (`SELECT … FROM …`, joins included) under `filters`: the rows
    /// between the request's cursors, the first or (backward) last `size` of them, in list
    /// order. `hasNextPage` / `hasPreviousPage` are true facts: past a cursor the request gave,
    /// one more indexed `LIMIT 1` read tells whether any row lies beyond it.
    pub(crate) async fn page<T>(
        &self,
        db: &ReadDb,
        select: &str,
        filters: Conditions,
        request: &PageRequest,
        read: impl Fn(&Row) -> Result<T, ProjectionError>,
        cursor_of: impl Fn(&T) -> Cursor,
    ) -> Result<Page<T>, ProjectionError> {
        let (after, before) = (request.cursor()?, request.before_cursor()?);
        let Self { sort, id, order } = *self;
        let mut bounded = filters.clone();
        if let Some(c) = &after {
            bounded.beyond(c, sort, id, order, Side::After, false);
        }
        if let Some(c) = &before {
            bounded.beyond(c, sort, id, order, Side::Before, false);
        }
        let limit = request.limit();
        let dir = if request.backward { order.reversed() } else { order }.sql();
        let sql = format!("{select} {} ORDER BY {sort} {dir}, {id} {dir} LIMIT {}", bounded.sql(), limit + 1);
        let rows = db.fetch(&sql, bounded.args()).await?;
        let mut items = rows.iter().take(limit + 1).map(read).collect::<Result<Vec<T>, _>>()?;
        let more = items.len() > limit;
        items.truncate(limit);
        if request.backward {
            items.reverse();
        }
        let beyond = |cursor: Option<Cursor>, side: Side| {
            let mut w = filters.clone();
            async move {
                let Some(c) = cursor else { return Ok(false) };
                w.beyond(&c, sort, id, order, side, true);
                Ok::<_, ProjectionError>(
                    !db.fetch(&format!("{select} {} LIMIT 1", w.sql()), w.args()).await?.is_empty(),
                )
            }
        };
        let has_next_page = (more && !request.backward) || beyond(before, Side::After).await?;
        let has_previous_page = (more && request.backward) || beyond(after, Side::Before).await?;
        let cursors: Vec<String> = items.iter().map(|item| cursor_of(item).to_string()).collect();
        let end_cursor = cursors.last().cloned();
        Ok(Page { items, cursors, end_cursor, has_next_page, has_previous_page })
    }
}
