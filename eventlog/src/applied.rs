//! Finding what an earlier attempt of a command wrote.
//!
//! A command's events get ids derived from its command id (`Context::first_event_id` and the
//! ids after it), so a client that resends a request whose answer it lost — same `requestId`,
//! same command id — can be answered from the log instead of deciding again. Deciding again
//! is wrong for most commands: the first attempt changed the state, so the retry would be
//! refused (a resolved brief cannot be resolved twice) although the request succeeded.

use std::collections::HashMap;

use agentlog_domain::context::Context;
use sqlx::Row;
use uuid::Uuid;

use crate::{append::AppendResult, error::EventLogError, store::DatabasePool};

/// Ids are looked up this many at a time; a command that wrote more is read chunk by chunk
/// until a chunk finds none.
const CHUNK: u32 = 64;

/// The appends an earlier attempt of `ctx`'s command made, one per stream in log order
/// (each marked `duplicate`), or `None` when no event of that command is in the log.
///
/// Events whose ids come from an idempotency key are not found here; they dedupe themselves
/// when appended again.
pub async fn applied_command(db: &DatabasePool, ctx: &Context) -> Result<Option<Vec<AppendResult>>, EventLogError> {
    let mut found: Vec<(i64, String, i64)> = Vec::new();
    let mut start = 0u32;
    loop {
        let ids: Vec<Uuid> = (start..start + CHUNK).map(|n| ctx.nth_event_id(n)).collect();
        let rows = locate(db, &ids).await?;
        if rows.is_empty() {
            break;
        }
        found.extend(rows);
        start += CHUNK;
    }
    if found.is_empty() {
        return Ok(None);
    }
    found.sort_unstable_by_key(|(position, _, _)| *position);
    let mut order: Vec<String> = Vec::new();
    let mut by_stream: HashMap<String, AppendResult> = HashMap::new();
    for (position, stream_id, version) in found {
        let entry = by_stream.entry(stream_id.clone()).or_insert_with(|| {
            order.push(stream_id.clone());
            AppendResult { stream_id, positions: Vec::new(), stream_version: 0, duplicate: true }
        });
        entry.positions.push(position);
        entry.stream_version = entry.stream_version.max(version);
    }
    Ok(Some(order.iter().filter_map(|s| by_stream.remove(s)).collect()))
}

/// Is an event of `ctx`'s command in the log (its first event id)?
pub(crate) async fn command_seen(db: &DatabasePool, ctx: &Context) -> Result<bool, EventLogError> {
    Ok(!locate(db, &[ctx.first_event_id()]).await?.is_empty())
}

/// (position, stream, stream version) of those of `ids` that are in the log.
async fn locate(db: &DatabasePool, ids: &[Uuid]) -> Result<Vec<(i64, String, i64)>, EventLogError> {
    let context = "looking up a command's earlier events";
    match db {
        DatabasePool::Sqlite(pool) => {
            let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "SELECT position, stream_id, stream_version FROM events WHERE event_id IN (",
            );
            let mut list = q.separated(", ");
            for id in ids {
                list.push_bind(id.to_string());
            }
            q.push(")");
            let rows = q.build().fetch_all(pool).await.map_err(EventLogError::db(context))?;
            rows.iter().map(|r| row_triple(r.try_get(0), r.try_get(1), r.try_get(2))).collect()
        }
        DatabasePool::Postgres(pool) => {
            let rows = sqlx::query("SELECT position, stream_id, stream_version FROM events WHERE event_id = ANY($1)")
                .bind(ids)
                .fetch_all(pool)
                .await
                .map_err(EventLogError::db(context))?;
            rows.iter().map(|r| row_triple(r.try_get(0), r.try_get(1), r.try_get(2))).collect()
        }
    }
}

fn row_triple(
    position: Result<i64, sqlx::Error>,
    stream_id: Result<String, sqlx::Error>,
    version: Result<i64, sqlx::Error>,
) -> Result<(i64, String, i64), EventLogError> {
    let decode = || EventLogError::db("decoding a command's earlier event");
    Ok((position.map_err(decode())?, stream_id.map_err(decode())?, version.map_err(decode())?))
}
