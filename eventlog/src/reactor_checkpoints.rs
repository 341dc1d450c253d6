//! `reactor_checkpoints` (migration 0007): each log follower's position, the statement that
//! moves one, and the reactions floor — the position up to which a log's reactions are in it
//! already, for a log whose reactions were not appended by the server's own log followers.
//!
//! The row named [`REACTIONS_FLOOR`] is no follower's: every follower starts at the greater
//! of its own position and the floor. `agentlog-replay generate` sets it at the head of the log it makes
//! (its workload decided each reaction itself, through the domain, under ids of its own; a
//! follower reacting again would append every one a second time), and `copy` carries it to a
//! target that was empty. Clock passes (leases, cards, cron slots, retention) look at state
//! and time, not at positions, and are not held back by it.
//!
//! ```no_run
//! # async fn demo(store: &dyn agentlog_eventlog::EventStore) -> Result<(), agentlog_eventlog::EventLogError> {
//! use agentlog_eventlog::{reactions_floor, set_reactions_floor};
//! let head = store.head_position().await?;
//! set_reactions_floor(&store.database(), head).await?;
//! assert_eq!(reactions_floor(&store.database()).await?, head);
//! # Ok(()) }
//! ```

use crate::{error::EventLogError, store::DatabasePool};

/// The `reactor_checkpoints` row that is the floor of every follower's position.
pub const REACTIONS_FLOOR: &str = "*";

/// Set row `$1`'s position to `$2` (`updated_at` `$3`, epoch microseconds), never moving it
/// backwards: two processes running the same follower both advance it.
pub const REACTOR_CHECKPOINT_UPSERT: &str = "INSERT INTO reactor_checkpoints (name, position, updated_at) \
     VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET position = excluded.position, \
     updated_at = excluded.updated_at WHERE reactor_checkpoints.position < excluded.position";

/// The log's reactions floor (0 when it has none).
pub async fn reactions_floor(pool: &DatabasePool) -> Result<i64, EventLogError> {
    const SQL: &str = "SELECT position FROM reactor_checkpoints WHERE name = $1";
    let db = |source| EventLogError::Database { context: "reading the reactions floor", source };
    let found: Option<i64> = match pool {
        DatabasePool::Sqlite(p) => sqlx::query_scalar(SQL).bind(REACTIONS_FLOOR).fetch_optional(p).await.map_err(db)?,
        DatabasePool::Postgres(p) => {
            sqlx::query_scalar(SQL).bind(REACTIONS_FLOOR).fetch_optional(p).await.map_err(db)?
        }
    };
    Ok(found.unwrap_or(0))
}

/// Raise the log's reactions floor to `position` (never lowers it).
pub async fn set_reactions_floor(pool: &DatabasePool, position: i64) -> Result<(), EventLogError> {
    let db = |source| EventLogError::Database { context: "setting the reactions floor", source };
    let now = chrono::Utc::now().timestamp_micros();
    match pool {
        DatabasePool::Sqlite(p) => {
            sqlx::query(REACTOR_CHECKPOINT_UPSERT)
                .bind(REACTIONS_FLOOR)
                .bind(position)
                .bind(now)
                .execute(p)
                .await
                .map_err(db)?;
        }
        DatabasePool::Postgres(p) => {
            sqlx::query(REACTOR_CHECKPOINT_UPSERT)
                .bind(REACTIONS_FLOOR)
                .bind(position)
                .bind(now)
                .execute(p)
                .await
                .map_err(db)?;
        }
    }
    Ok(())
}
