//! The read-model database: the same SQLite file or PostgreSQL database as the log, reached
//! through one small portable layer so each projection writes its SQL once.
//!
//! Portable SQL here means: `$1, $2 …` placeholders (rewritten to `?1, ?2 …` for SQLite),
//! `INSERT … ON CONFLICT (…) DO UPDATE SET col = excluded.col`, and only the column types
//! `BIGINT`/`INTEGER`, `DOUBLE PRECISION`/`REAL` and `TEXT` (JSON is stored as TEXT, times as
//! epoch microseconds).

use futures_util::TryStreamExt;
use sqlx::{PgPool, Postgres, Transaction};

use crate::error::ProjectionError;

use self::{
    arrays::ColumnArrays,
    portable::{UntypedNull, bind_all, decode_pg, for_sqlite},
};

mod arrays;
mod portable;
mod records;
mod snapshot;
mod sqlite;

pub use agentlog_sqlite::{Row, SqlValue};
pub use snapshot::{Snapshot, Snapshots};
pub use sqlite::{SharedSqliteTx, SqliteDb, SqliteTx};

/// The read-model database.
#[derive(Debug, Clone)]
pub enum ReadDb {
    /// SQLite (the log's file).
    Sqlite(SqliteDb),
    /// PostgreSQL (the log's database).
    Postgres(PgPool),
    /// One read snapshot of either ([`Snapshots::take`]): reads only.
    Snapshot(Snapshot),
}

impl From<agentlog_eventlog::DatabasePool> for ReadDb {
    fn from(pool: agentlog_eventlog::DatabasePool) -> Self {
        match pool {
            agentlog_eventlog::DatabasePool::Sqlite(p) => Self::Sqlite(SqliteDb::new(p)),
            agentlog_eventlog::DatabasePool::Postgres(p) => Self::Postgres(p),
        }
    }
}

/// A write transaction on the read-model database.
pub enum ReadTx {
    /// SQLite, on the file's writer connection, begun IMMEDIATE (takes the write lock up front).
    Sqlite(SqliteTx),
    /// PostgreSQL.
    Postgres(Transaction<'static, Postgres>),
    /// A share of one SQLite transaction that several projections write at once (a bulk load's
    /// batch, [`ReadTx::share`]); only the last share commits.
    Shared(SharedSqliteTx),
}

impl ReadDb {
    /// Begin a read-model transaction: rows derived from the log, committed with their
    /// checkpoints. It commits without waiting for the disk (SQLite `synchronous = NORMAL`,
    /// PostgreSQL `synchronous_commit = off`): still atomic and in order, so a crash may undo
    /// the last ones but never part of one, and the runner applies those again from the log.
    /// A mutation then waits for one durable commit (its events'), not two. Writes the log
    /// does not hold (API tokens) go through [`execute`](Self::execute), durable.
    pub async fn begin(&self) -> Result<ReadTx, ProjectionError> {
        Ok(match self {
            Self::Sqlite(db) => ReadTx::Sqlite(db.begin().await?),
            Self::Postgres(p) => {
                // One round trip: a statement without arguments goes over the simple protocol.
                let begin = "BEGIN; SET LOCAL synchronous_commit = off";
                ReadTx::Postgres(p.begin_with(begin).await.map_err(ProjectionError::db("beginning a transaction"))?)
            }
            Self::Snapshot(_) => return Err(read_only()),
        })
    }

    /// Run a query outside any transaction and return its rows.
    pub async fn fetch(&self, sql: &str, args: &[SqlValue]) -> Result<Vec<Row>, ProjectionError> {
        Ok(match self {
            Self::Sqlite(db) => {
                let mut rows = Vec::new();
                db.for_each_row(&for_sqlite(sql), args, &mut |row| rows.push(row)).await?;
                rows
            }
            Self::Postgres(p) => bind_all!(sqlx::query(sql), args, UntypedNull)
                .fetch_all(p)
                .await
                .map_err(ProjectionError::db("reading a read model"))?
                .iter()
                .map(decode_pg)
                .collect(),
            Self::Snapshot(snapshot) => {
                let mut rows = Vec::new();
                snapshot.for_each_row(sql, args, &mut |row| rows.push(row)).await?;
                rows
            }
        })
    }

    /// Run a query outside any transaction and hand each row to `each` as it arrives: memory
    /// stays one row, however many the query returns (checksums of whole tables).
    pub async fn for_each_row(
        &self,
        sql: &str,
        args: &[SqlValue],
        mut each: impl FnMut(Row) + Send,
    ) -> Result<u64, ProjectionError> {
        let mut n = 0u64;
        match self {
            Self::Sqlite(db) => n = db.for_each_row(&for_sqlite(sql), args, &mut each).await?,
            Self::Postgres(p) => {
                let mut rows = bind_all!(sqlx::query(sql), args, UntypedNull).fetch(p);
                while let Some(row) = rows.try_next().await.map_err(ProjectionError::db("reading a read model"))? {
                    each(decode_pg(&row));
                    n += 1;
                }
            }
            Self::Snapshot(snapshot) => n = snapshot.for_each_row(sql, args, &mut each).await?,
        }
        Ok(n)
    }

    /// Run a statement outside any transaction.
    pub async fn execute(&self, sql: &str, args: &[SqlValue]) -> Result<u64, ProjectionError> {
        Ok(match self {
            Self::Sqlite(db) => db.execute(&for_sqlite(sql), args).await?,
            Self::Postgres(p) => bind_all!(sqlx::query(sql), args, UntypedNull)
                .execute(p)
                .await
                .map_err(ProjectionError::db("writing a read model"))?
                .rows_affected(),
            Self::Snapshot(_) => return Err(read_only()),
        })
    }

    /// Read snapshots of this database ([`Snapshots::take`]), bounded among those this call
    /// hands out (a server makes one); of a snapshot, the snapshots it came from.
    pub fn snapshots(&self) -> Snapshots {
        match self {
            Self::Sqlite(db) => Snapshots::new(snapshot::Base::Sqlite(db.clone())),
            Self::Postgres(p) => Snapshots::new(snapshot::Base::Postgres(p.clone())),
            Self::Snapshot(s) => s.snapshots(),
        }
    }

    /// True for PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        match self {
            Self::Sqlite(_) => false,
            Self::Postgres(_) => true,
            Self::Snapshot(s) => s.is_postgres(),
        }
    }
}

impl Snapshots {
    /// A snapshot, as a [`ReadDb`] that only reads: opened at its first query, ended when its
    /// last clone is dropped.
    pub fn take(&self) -> ReadDb {
        ReadDb::Snapshot(self.snapshot())
    }
}

/// A write asked of a read snapshot.
fn read_only() -> ProjectionError {
    ProjectionError::Invalid("a read snapshot only reads".into())
}

/// Most keys in one `OR` chain: SQLite parses a chain as a tree one level deeper per term and
/// refuses trees deeper than 1,000.
const MAX_OR_TERMS: usize = 400;

/// Most values in one `IN (…)` list (well below both backends' limits).
const MAX_IN_VALUES: usize = 5_000;

/// How many keys of `columns` one statement of [`key_terms`] takes.
fn keys_per_statement(columns: &[&str]) -> usize {
    if columns.len() == 1 { MAX_IN_VALUES } else { MAX_OR_TERMS }
}

/// `$1, $2, … $n`.
pub(crate) fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 6);
    for i in 1..=n {
        if i > 1 {
            s.push_str(", ");
        }
        s.push('$');
        s.push_str(&i.to_string());
    }
    s
}

/// `n` keys of columns `key`: `k IN ($1, $2, …)` for one column, else
/// `(k1 = $1 AND k2 = $2) OR (k1 = $3 AND k2 = $4) OR …`.
fn key_terms(key: &[&str], n: usize) -> String {
    if let [column] = key {
        return format!("{column} IN ({})", placeholders(n));
    }
    let mut next = 0;
    let terms: Vec<String> = (0..n)
        .map(|_| {
            let parts: Vec<String> = key
                .iter()
                .map(|c| {
                    next += 1;
                    format!("{c} = ${next}")
                })
                .collect();
            format!("({})", parts.join(" AND "))
        })
        .collect();
    terms.join(" OR ")
}

/// Most bound parameters one statement may carry (SQLite's limit is 32,766).
const MAX_PARAMS: usize = 30_000;

/// `?, ?, … ?`: `n` parameters of a one-row SQLite statement.
fn sqlite_params(n: usize) -> String {
    let mut s = String::with_capacity(n * 3);
    for i in 0..n {
        s.push_str(if i == 0 { "?" } else { ", ?" });
    }
    s
}

impl ReadTx {
    /// True for PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// A SQLite transaction made shareable (clones of the answer write into it), or this
    /// transaction back unchanged when it cannot be shared (PostgreSQL runs one statement at
    /// a time per connection and applies projections in transactions of their own instead).
    pub fn share(self) -> Result<SharedSqliteTx, Self> {
        match self {
            Self::Sqlite(tx) => Ok(SharedSqliteTx::new(tx)),
            Self::Shared(tx) => Ok(tx),
            other => Err(other),
        }
    }

    /// Run a statement.
    pub async fn execute(&mut self, sql: &str, args: &[SqlValue]) -> Result<u64, ProjectionError> {
        Ok(match self {
            Self::Sqlite(tx) => tx.execute(&for_sqlite(sql), args)?,
            Self::Shared(tx) => tx.with(|tx| tx.execute(&for_sqlite(sql), args))?,
            Self::Postgres(tx) => bind_all!(sqlx::query(sql), args, UntypedNull)
                .execute(&mut **tx)
                .await
                .map_err(ProjectionError::db("writing a read model"))?
                .rows_affected(),
        })
    }

    /// Run a query and return its rows.
    pub async fn fetch(&mut self, sql: &str, args: &[SqlValue]) -> Result<Vec<Row>, ProjectionError> {
        Ok(match self {
            Self::Sqlite(tx) => tx.fetch(&for_sqlite(sql), args)?,
            Self::Shared(tx) => tx.with(|tx| tx.fetch(&for_sqlite(sql), args))?,
            Self::Postgres(tx) => bind_all!(sqlx::query(sql), args, UntypedNull)
                .fetch_all(&mut **tx)
                .await
                .map_err(ProjectionError::db("reading a read model"))?
                .iter()
                .map(decode_pg)
                .collect(),
        })
    }

    /// The rows of `select` (`SELECT … FROM table`) whose `columns` hold one of `keys` (each in
    /// `columns` order; a leading part of the primary key finds every row under it). On
    /// PostgreSQL one statement for any number of keys, `(…) IN (SELECT * FROM UNNEST(…))`, planned
    /// once as index lookups; on SQLite `col IN (…)`, or `OR` chains of whole keys for several columns.
    pub async fn fetch_keyed(
        &mut self,
        select: &str,
        columns: &[&str],
        keys: &[Vec<SqlValue>],
    ) -> Result<Vec<Row>, ProjectionError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if let Self::Postgres(tx) = self
            && let Some(arrays) = ColumnArrays::of(columns.len(), keys)
            && let Some(condition) = arrays.in_sql(columns)
        {
            let sql = format!("{select} WHERE {condition}");
            let rows = arrays
                .bind(sqlx::query(&sql))
                .fetch_all(&mut **tx)
                .await
                .map_err(ProjectionError::db("reading a read model"))?;
            return Ok(rows.iter().map(decode_pg).collect());
        }
        let mut out = Vec::new();
        for chunk in keys.chunks(keys_per_statement(columns)) {
            let args: Vec<SqlValue> = chunk.iter().flatten().cloned().collect();
            out.extend(self.fetch(&format!("{select} WHERE {}", key_terms(columns, chunk.len())), &args).await?);
        }
        Ok(out)
    }

    /// Delete the rows of `table` whose `columns` hold one of `keys` (as
    /// [`fetch_keyed`](Self::fetch_keyed) finds them). Returns how many.
    pub async fn delete_keyed(
        &mut self,
        table: &str,
        columns: &[&str],
        keys: &[Vec<SqlValue>],
    ) -> Result<u64, ProjectionError> {
        if keys.is_empty() {
            return Ok(0);
        }
        if let Self::Postgres(tx) = self
            && let Some(arrays) = ColumnArrays::of(columns.len(), keys)
            && let Some(condition) = arrays.in_sql(columns)
        {
            let sql = format!("DELETE FROM {table} WHERE {condition}");
            return Ok(arrays
                .bind(sqlx::query(&sql))
                .execute(&mut **tx)
                .await
                .map_err(ProjectionError::db("writing a read model"))?
                .rows_affected());
        }
        let mut n = 0;
        for chunk in keys.chunks(keys_per_statement(columns)) {
            let args: Vec<SqlValue> = chunk.iter().flatten().cloned().collect();
            n += self.execute(&format!("DELETE FROM {table} WHERE {}", key_terms(columns, chunk.len())), &args).await?;
        }
        Ok(n)
    }

    /// Insert `rows` into `table`, replacing the non-key columns of rows whose `key` columns
    /// already exist (see [`insert_rows`](Self::insert_rows) for the statements).
    pub async fn upsert(
        &mut self,
        table: &str,
        columns: &[&str],
        key: &[&str],
        rows: &[Vec<SqlValue>],
    ) -> Result<(), ProjectionError> {
        if rows.is_empty() {
            return Ok(());
        }
        let updates: Vec<String> =
            columns.iter().filter(|c| !key.contains(c)).map(|c| format!("{c} = excluded.{c}")).collect();
        let conflict = if updates.is_empty() {
            format!(" ON CONFLICT ({}) DO NOTHING", key.join(", "))
        } else {
            format!(" ON CONFLICT ({}) DO UPDATE SET {}", key.join(", "), updates.join(", "))
        };
        self.insert_rows(table, columns, rows, &conflict).await
    }

    /// Insert `rows`, with an optional `ON CONFLICT …` tail: on PostgreSQL one
    /// `INSERT … SELECT FROM UNNEST(…)` of one array of the table's row type for many rows
    /// (`records`), else with one array per column (its plan does not grow with the row count;
    /// multi-row `VALUES` when a column mixes text and numbers), on SQLite a one-row
    /// statement prepared once and run per row on the connection's handle (`sqlite_handle`).
    pub async fn insert_rows(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &[Vec<SqlValue>],
        tail: &str,
    ) -> Result<(), ProjectionError> {
        if let Some(row) = rows.iter().find(|r| r.len() != columns.len()) {
            return Err(ProjectionError::Invalid(format!(
                "{table}: row has {} values for {} columns",
                row.len(),
                columns.len()
            )));
        }
        if let Self::Postgres(tx) = self
            && rows.len() >= records::MIN_ROWS
            && let Some(shape) = records::Shape::of(tx, table).await?
            && let Some(records) = records::Records::encode(&shape, columns, rows)
        {
            sqlx::query(&records::insert_sql(table, columns, tail))
                .bind(records)
                .execute(&mut **tx)
                .await
                .map_err(ProjectionError::db("writing a read model"))?;
            return Ok(());
        }
        if let Self::Postgres(tx) = self
            && let Some(arrays) = ColumnArrays::of(columns.len(), rows)
        {
            let sql = arrays.insert_sql(table, columns, tail);
            arrays
                .bind(sqlx::query(&sql))
                .execute(&mut **tx)
                .await
                .map_err(ProjectionError::db("writing a read model"))?;
            return Ok(());
        }
        let one_row =
            || format!("INSERT INTO {table} ({}) VALUES ({}){tail}", columns.join(", "), sqlite_params(columns.len()));
        match self {
            _ if rows.is_empty() => return Ok(()),
            Self::Sqlite(tx) => return tx.run_per_row(&one_row(), rows),
            Self::Shared(tx) => return tx.with(|tx| tx.run_per_row(&one_row(), rows)),
            Self::Postgres(_) => {}
        }
        let per_chunk = (MAX_PARAMS / columns.len().max(1)).max(1);
        for chunk in rows.chunks(per_chunk) {
            let mut sql = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
            let mut n = 0;
            for r in 0..chunk.len() {
                sql.push_str(if r == 0 { "(" } else { ", (" });
                for c in 0..columns.len() {
                    n += 1;
                    if c > 0 {
                        sql.push_str(", ");
                    }
                    sql.push('$');
                    sql.push_str(&n.to_string());
                }
                sql.push(')');
            }
            sql.push_str(tail);
            if let Self::Postgres(tx) = self {
                bind_all!(sqlx::query(&sql), chunk.iter().flatten(), UntypedNull)
                    .execute(&mut **tx)
                    .await
                    .map_err(ProjectionError::db("writing a read model"))?;
            }
        }
        Ok(())
    }

    /// Commit.
    pub async fn commit(self) -> Result<(), ProjectionError> {
        match self {
            Self::Sqlite(tx) => tx.commit(),
            Self::Shared(tx) => tx.into_tx()?.commit(),
            Self::Postgres(tx) => tx.commit().await.map_err(ProjectionError::db("committing read models")),
        }
    }

    /// Roll back.
    pub async fn rollback(self) -> Result<(), ProjectionError> {
        match self {
            Self::Sqlite(tx) => tx.rollback(),
            Self::Shared(tx) => tx.into_tx()?.rollback(),
            Self::Postgres(tx) => tx.rollback().await.map_err(ProjectionError::db("rolling back read models")),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_numbered() {
        assert_eq!(super::placeholders(3), "$1, $2, $3");
        assert_eq!(super::placeholders(0), "");
    }

    #[test]
    fn keys_match_by_in_list_or_or_chain() {
        assert_eq!(super::key_terms(&["id"], 3), "id IN ($1, $2, $3)");
        assert_eq!(super::key_terms(&["u", "id"], 2), "(u = $1 AND id = $2) OR (u = $3 AND id = $4)");
    }
}
