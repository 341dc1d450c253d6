//! Where each reactor has got to in the log (`reactor_checkpoints`).

use agentlog_projections::{ReadDb, SqlValue};
use chrono::Utc;

use crate::reactors::error::ReactorError;

/// The position reactor `name` has reacted up to (0 when it never ran).
pub async fn load(db: &ReadDb, name: &str) -> Result<i64, ReactorError> {
    let rows = db.fetch("SELECT position FROM reactor_checkpoints WHERE name = $1", &[name.into()]).await?;
    Ok(rows.first().and_then(|r| r.i64(0)).unwrap_or(0))
}

/// Record that reactor `name` has reacted up to `position`. Never moves backwards: two
/// processes running the same reactor both advance it. Saved like a read model's rows, without
/// waiting for the disk ([`ReadDb::begin`]): a crash may undo the last save, and the reactor then
/// reacts again to events it had handled, which appends nothing (its events' ids are
/// deterministic).
pub async fn save(db: &ReadDb, name: &str, position: i64) -> Result<(), ReactorError> {
    let args: [SqlValue; 3] = [name.into(), position.into(), Utc::now().timestamp_micros().into()];
    let mut tx = db.begin().await?;
    tx.execute(
        "INSERT INTO reactor_checkpoints (name, position, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at \
         WHERE reactor_checkpoints.position < excluded.position",
        &args,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
