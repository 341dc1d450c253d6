//! One read snapshot of the read models: every query through it sees them as of one moment,
//! so an answer built from several queries never shows half of one batch.
//!
//! ```ignore
//! let snapshots = db.snapshots();
//! let reads = snapshots.take();            // a `ReadDb`; nothing is opened yet
//! operations::get(&reads, owner, id).await?;    // opens the read transaction
//! operations::children(&reads, owner, id, &page).await?;   // the same moment
//! drop(reads);                              // ends it, gives the connection back
//! ```
//!
//! The transaction opens at the first query (a snapshot nobody reads costs nothing) and ends
//! when the last clone is dropped. SQLite: a reader of the file's own, in `BEGIN … COMMIT`.
//! PostgreSQL: a pooled connection in a `REPEATABLE READ READ ONLY` transaction.
//!
//! How many snapshots are open at once is bounded apart from single queries: a holder may
//! still run a query outside its snapshot (a token lookup), and that query must never wait
//! for a connection that only the holders could free.

use std::sync::Arc;

use agentlog_sqlite::{Connection, Row, SqlValue};
use futures_util::TryStreamExt;
use sqlx::{PgPool, Postgres, Transaction};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use super::{
    portable::{UntypedNull, bind_all, decode_pg, for_sqlite},
    sqlite::{SqliteDb, failed},
};
use crate::error::ProjectionError;

/// Hands out read snapshots of one read-model database, a bounded number open at once
/// ([`ReadDb::snapshots`](super::ReadDb::snapshots)).
#[derive(Clone, Debug)]
pub struct Snapshots {
    base: Base,
    open: Arc<Semaphore>,
}

/// The database a snapshot reads.
#[derive(Clone, Debug)]
pub(crate) enum Base {
    Sqlite(SqliteDb),
    Postgres(PgPool),
}

impl Snapshots {
    /// Snapshots of `base`: on SQLite as many open at once as the log's readers; on PostgreSQL
    /// half the pool's connections, so single queries always find one.
    pub(crate) fn new(base: Base) -> Self {
        let at_once = match &base {
            Base::Sqlite(s) => s.pool().options().get_max_connections() as usize,
            Base::Postgres(p) => p.options().get_max_connections() as usize / 2,
        };
        Self { base, open: Arc::new(Semaphore::new(at_once.max(1))) }
    }

    /// A snapshot; nothing is opened until its first query.
    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot(Arc::new(Inner { base: self.base.clone(), gate: Arc::clone(&self.open), pinned: Mutex::new(None) }))
    }
}

/// A read snapshot (`ReadDb::Snapshot`); clones share it.
#[derive(Clone, Debug)]
pub struct Snapshot(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    base: Base,
    gate: Arc<Semaphore>,
    pinned: Mutex<Option<Pinned>>,
}

/// The open read transaction.
enum Pinned {
    Sqlite { db: SqliteDb, conn: Option<Connection>, _permit: OwnedSemaphorePermit },
    Postgres { tx: Transaction<'static, Postgres>, _permit: OwnedSemaphorePermit },
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Sqlite { .. } => "Pinned::Sqlite",
            Self::Postgres { .. } => "Pinned::Postgres",
        })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // PostgreSQL: the dropped transaction is rolled back as its connection returns.
        if let Self::Sqlite { db, conn, .. } = self
            && let Some(conn) = conn.take()
        {
            db.end_read(conn);
        }
    }
}

impl Snapshot {
    /// The snapshots this one came from (same database, same bound).
    pub(super) fn snapshots(&self) -> Snapshots {
        Snapshots { base: self.0.base.clone(), open: Arc::clone(&self.0.gate) }
    }

    /// True for PostgreSQL.
    pub(super) fn is_postgres(&self) -> bool {
        matches!(self.0.base, Base::Postgres(_))
    }

    /// Run a query in the snapshot, handing each row to `each`; the number of rows.
    pub(super) async fn for_each_row(
        &self,
        sql: &str,
        args: &[SqlValue],
        each: &mut (dyn FnMut(Row) + Send),
    ) -> Result<u64, ProjectionError> {
        let mut pinned = self.0.pinned.lock().await;
        if pinned.is_none() {
            *pinned = Some(self.open().await?);
        }
        match pinned.as_mut() {
            Some(Pinned::Sqlite { conn: Some(conn), .. }) => {
                conn.for_each_row(&for_sqlite(sql), args, each).map_err(failed("reading a read model"))
            }
            Some(Pinned::Postgres { tx, .. }) => {
                let mut n = 0u64;
                let mut rows = bind_all!(sqlx::query(sql), args, UntypedNull).fetch(&mut **tx);
                while let Some(row) = rows.try_next().await.map_err(ProjectionError::db("reading a read model"))? {
                    each(decode_pg(&row));
                    n += 1;
                }
                Ok(n)
            }
            Some(Pinned::Sqlite { conn: None, .. }) | None => Err(ProjectionError::Stopped),
        }
    }

    /// Begin the read transaction, once a snapshot may be open.
    async fn open(&self) -> Result<Pinned, ProjectionError> {
        let permit = Arc::clone(&self.0.gate).acquire_owned().await.map_err(|_| ProjectionError::Stopped)?;
        Ok(match &self.0.base {
            Base::Sqlite(db) => Pinned::Sqlite { db: db.clone(), conn: Some(db.begin_read().await?), _permit: permit },
            Base::Postgres(p) => {
                let begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
                let tx = p.begin_with(begin).await.map_err(ProjectionError::db("beginning a read transaction"))?;
                Pinned::Postgres { tx, _permit: permit }
            }
        })
    }
}
