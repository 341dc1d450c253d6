//! Where each reactor has got to in the log (`reactor_checkpoints`).

use agentlog_eventlog::{REACTIONS_FLOOR, REACTOR_CHECKPOINT_UPSERT};
use agentlog_projections::{ReadDb, SqlValue};
use chrono::Utc;

use crate::reactors::error::ReactorError;

/// The position reactor `name` has reacted up to: its own, or the log's reactions floor when
/// that is higher (a log made by `agentlog-replay generate` has its reactions in it already;
/// `agentlog_eventlog::REACTIONS_FLOOR`); 0 when it never ran.
pub async fn load(db: &ReadDb, name: &str) -> Result<i64, ReactorError> {
    let rows = db
        .fetch(
            "SELECT MAX(position) FROM reactor_checkpoints WHERE name = $1 OR name = $2",
            &[name.into(), REACTIONS_FLOOR.into()],
        )
        .await?;
    Ok(rows.first().and_then(|r| r.i64(0)).unwrap_or(0))
}

/// Record that `name` has got up to `position`, durably: for a follower whose effects outside
/// agentlog cannot be taken back (the OTLP exporter's spans). Never moves backwards: two
/// processes running the same follower both advance it.
pub async fn save(db: &ReadDb, name: &str, position: i64) -> Result<(), ReactorError> {
    let args = args(name, position);
    db.execute(REACTOR_CHECKPOINT_UPSERT, &args).await?;
    Ok(())
}

/// [`save`] for a reactor, without waiting for the disk, like a read model's rows
/// ([`ReadDb::begin`]): a crash of the machine or the database may undo the last saves, and the
/// reactor then reacts again to facts it had handled, which appends nothing (its events' ids are
/// derived from the fact).
pub async fn save_replayable(db: &ReadDb, name: &str, position: i64) -> Result<(), ReactorError> {
    let args = args(name, position);
    let mut tx = db.begin().await?;
    tx.execute(REACTOR_CHECKPOINT_UPSERT, &args).await?;
    tx.commit().await?;
    Ok(())
}

fn args(name: &str, position: i64) -> [SqlValue; 3] {
    [name.into(), position.into(), Utc::now().timestamp_micros().into()]
}
