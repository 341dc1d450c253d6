//! Bulk loading: a rebuild from position 0 into emptied tables writes faster without their
//! secondary indexes, and creates each index once at the end from the loaded rows (a sort)
//! instead of keeping it up to date row by row.
//!
//! Only plain secondary indexes are dropped: primary keys and unique indexes stay, since the
//! projections' upserts need them. What was dropped is recorded in `projection_dropped_indexes`
//! in the same transaction as the `DROP INDEX`, and [`restore`] creates every recorded index
//! again and forgets it in one transaction. The runner restores before it loads its checkpoints
//! (a server starting, the next rebuild), so a bulk rebuild that dies midway leaves no table
//! without its indexes once the read models are opened again.
//!
//! Both take every projection's checkpoint row first, as a runner's batch does before it
//! writes: on PostgreSQL, `DROP INDEX`/`CREATE INDEX` lock whole tables, and taking them while
//! another instance's batch holds some of those tables deadlocks (40P01). Behind the checkpoint
//! locks they wait for the batch instead.

use crate::{
    db::{ReadDb, ReadTx, SqlValue, placeholders},
    error::ProjectionError,
    runner_state::lock_checkpoints,
};

/// A secondary index: its name, its table, and the statement that creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SecondaryIndex {
    pub name: String,
    pub table: String,
    pub create_sql: String,
}

/// The plain (not unique, not backing a constraint) indexes of `tables`, in name order.
async fn secondary_indexes(tx: &mut ReadTx, tables: &[&str]) -> Result<Vec<SecondaryIndex>, ProjectionError> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let args: Vec<SqlValue> = tables.iter().map(|t| SqlValue::from(*t)).collect();
    let sql = if tx.is_postgres() {
        format!(
            "SELECT i.relname::TEXT, t.relname::TEXT, pg_get_indexdef(i.oid) \
             FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid \
             JOIN pg_namespace n ON n.oid = t.relnamespace \
             WHERE n.nspname = current_schema() AND NOT x.indisunique AND NOT x.indisprimary \
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) \
             AND t.relname IN ({}) ORDER BY i.relname",
            placeholders(tables.len())
        )
    } else {
        // `sql` is NULL for the indexes SQLite makes itself (primary keys, UNIQUE constraints).
        format!(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL \
             AND tbl_name IN ({}) ORDER BY name",
            placeholders(tables.len())
        )
    };
    let rows = tx.fetch(&sql, &args).await?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let create_sql = r.str(2)?;
            // Unique indexes stay: an upsert's conflict target may be one.
            plain_create(create_sql)?;
            Some(SecondaryIndex {
                name: r.str(0)?.to_string(),
                table: r.str(1)?.to_string(),
                create_sql: create_sql.to_string(),
            })
        })
        .collect())
}

/// The rest of a `CREATE INDEX …` statement after `CREATE INDEX`; `None` for any other (unique).
fn plain_create(sql: &str) -> Option<&str> {
    let head = "CREATE INDEX ";
    (sql.len() > head.len() && sql[..head.len()].eq_ignore_ascii_case(head)).then(|| &sql[head.len()..])
}

/// Drop the secondary indexes of `tables` but those in `kept`, recording each to be restored.
/// Returns how many.
pub(crate) async fn drop_indexes(db: &ReadDb, tables: &[&str], kept: &[&str]) -> Result<usize, ProjectionError> {
    let mut tx = db.begin().await?;
    lock_checkpoints(&mut tx, None).await?;
    let mut indexes = secondary_indexes(&mut tx, tables).await?;
    indexes.retain(|i| !kept.contains(&i.name.as_str()));
    for index in &indexes {
        tx.execute(
            "INSERT INTO projection_dropped_indexes (index_name, table_name, create_sql) VALUES ($1, $2, $3) \
             ON CONFLICT (index_name) DO NOTHING",
            &[index.name.as_str().into(), index.table.as_str().into(), index.create_sql.as_str().into()],
        )
        .await?;
        tx.execute(&format!("DROP INDEX {}", quoted(&index.name)), &[]).await?;
    }
    tx.commit().await?;
    Ok(indexes.len())
}

/// Create every index a bulk load dropped and forget it, in one transaction (two runners
/// restoring at once: the second finds nothing left). Returns how many.
pub(crate) async fn restore(db: &ReadDb) -> Result<usize, ProjectionError> {
    let mut tx = db.begin().await?;
    lock_checkpoints(&mut tx, None).await?;
    let lock = if tx.is_postgres() {
        // Building an index on a large table may take longer than a server's per-statement
        // bound, and it must finish.
        tx.execute("SET LOCAL statement_timeout = 0", &[]).await?;
        " FOR UPDATE"
    } else {
        ""
    };
    let rows = tx
        .fetch(&format!("SELECT index_name, create_sql FROM projection_dropped_indexes ORDER BY index_name{lock}"), &[])
        .await?;
    for row in &rows {
        let (Some(name), Some(create_sql)) = (row.str(0), row.str(1)) else {
            return Err(ProjectionError::Invalid("projection_dropped_indexes: a row without name or statement".into()));
        };
        let Some(rest) = plain_create(create_sql) else {
            return Err(ProjectionError::Invalid(format!(
                "projection_dropped_indexes: `{name}` is not a CREATE INDEX"
            )));
        };
        // Someone may have created it meanwhile (by hand, or an older build's migration).
        tx.execute(&format!("CREATE INDEX IF NOT EXISTS {rest}"), &[]).await?;
        tx.execute("DELETE FROM projection_dropped_indexes WHERE index_name = $1", &[name.into()]).await?;
    }
    tx.commit().await?;
    if !rows.is_empty() {
        tracing::info!(indexes = rows.len(), "read-model indexes created again after a bulk load");
    }
    Ok(rows.len())
}

/// An identifier quoted for SQL (both backends use double quotes).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_plain_indexes_are_dropped() {
        assert_eq!(super::plain_create("CREATE INDEX a ON t (x)"), Some("a ON t (x)"));
        assert_eq!(super::plain_create("create index a ON t (x)"), Some("a ON t (x)"));
        assert_eq!(super::plain_create("CREATE UNIQUE INDEX a ON t (x)"), None);
    }
}
