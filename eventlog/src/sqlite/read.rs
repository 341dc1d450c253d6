//! Reading the log on the store's own reader connections (`agentlog_sqlite::Readers`): each
//! query runs on one thread and hands its rows straight to the decoder, where sqlx would pass
//! every row across a channel from its worker thread (a wake-up of the reading task per row,
//! which made reading a run's few hundred events cost more than decoding them).

use agentlog_domain::envelope::RecordedEvent;
use agentlog_sqlite::{Connection, Row, SqlRef, SqlValue};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::write::failed;
use crate::{append::LocatedEvent, error::EventLogError, filter::EventFilter, unparsed::UnparsedEvent};

/// Reads of at most this many rows run on the calling thread (a few milliseconds at most);
/// longer ones on the blocking pool, off the runtime's worker threads.
pub(super) const INLINE_ROWS: usize = 1_000;

/// Reads of at most this many rows (a lookup, a head) read inline without yielding after.
pub(super) const INLINE_LOOKUP_ROWS: usize = 16;

const COLUMNS: &str =
    "position, event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, recorded_at";

/// Events `from_version`… of `stream_id`, at most `limit`.
pub(super) fn stream(
    conn: &mut Connection,
    stream_id: &str,
    from_version: i64,
    limit: usize,
) -> Result<Vec<RecordedEvent>, EventLogError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM events WHERE stream_id = ?1 AND stream_version >= ?2 ORDER BY stream_version LIMIT ?3"
    );
    let args = [SqlValue::Text(stream_id.to_string()), SqlValue::Int(from_version), SqlValue::Int(sql_limit(limit))];
    events(conn, &sql, &args)
}

/// Events after `after` (up to `up_to`) that `filter` keeps, in log order, at most `limit`.
pub(super) fn forward(
    conn: &mut Connection,
    after: i64,
    up_to: Option<i64>,
    filter: &EventFilter,
    limit: usize,
) -> Result<Vec<RecordedEvent>, EventLogError> {
    let (sql, args) = forward_sql(after, up_to, filter, limit);
    events(conn, &sql, &args)
}

/// [`forward`] with each payload as its stored text.
pub(super) fn forward_unparsed(
    conn: &mut Connection,
    after: i64,
    up_to: Option<i64>,
    filter: &EventFilter,
    limit: usize,
) -> Result<Vec<UnparsedEvent>, EventLogError> {
    let (sql, args) = forward_sql(after, up_to, filter, limit);
    // Sized for a full page up front: a catch-up's pages of tens of thousands of events grew
    // by doubling, each growth a copy and fresh pages for the kernel to zero.
    rows(conn, &sql, &args, unparsed, limit.min(PRESIZED_ROWS))
}

/// The most rows a read makes room for before it has them (a rebuild's page).
const PRESIZED_ROWS: usize = 50_000;

/// The statement and arguments of [`forward`].
fn forward_sql(after: i64, up_to: Option<i64>, filter: &EventFilter, limit: usize) -> (String, Vec<SqlValue>) {
    let mut args = vec![SqlValue::Int(after)];
    let mut sql = format!("SELECT {COLUMNS} FROM events WHERE position > ?1");
    if let Some(up_to) = up_to {
        args.push(SqlValue::Int(up_to));
        sql.push_str(&format!(" AND position <= ?{}", args.len()));
    }
    push_filter(&mut sql, &mut args, filter);
    args.push(SqlValue::Int(sql_limit(limit)));
    sql.push_str(&format!(" ORDER BY position LIMIT ?{}", args.len()));
    (sql, args)
}

/// Events between `after` and `before` (both excluded) that `filter` keeps, newest first, at
/// most `limit`.
pub(super) fn backward(
    conn: &mut Connection,
    after: i64,
    before: i64,
    filter: &EventFilter,
    limit: usize,
) -> Result<Vec<RecordedEvent>, EventLogError> {
    let mut args = vec![SqlValue::Int(after), SqlValue::Int(before)];
    let mut sql = format!("SELECT {COLUMNS} FROM events WHERE position > ?1 AND position < ?2");
    push_filter(&mut sql, &mut args, filter);
    args.push(SqlValue::Int(sql_limit(limit)));
    sql.push_str(&format!(" ORDER BY position DESC LIMIT ?{}", args.len()));
    events(conn, &sql, &args)
}

/// The stream's current version (0 when it does not exist).
pub(super) fn stream_version(conn: &mut Connection, stream_id: &str) -> Result<i64, EventLogError> {
    let sql = "SELECT COALESCE(MAX(stream_version), 0) FROM events WHERE stream_id = ?1";
    one_int(conn, sql, &[SqlRef::Text(stream_id)], "reading a stream version")
}

/// The highest committed position (0 for an empty log).
pub(super) fn head(conn: &mut Connection) -> Result<i64, EventLogError> {
    one_int(conn, "SELECT COALESCE(MAX(position), 0) FROM events", &[], "reading the log head")
}

/// The one integer a query answers.
fn one_int(conn: &mut Connection, sql: &str, args: &[SqlRef<'_>], context: &'static str) -> Result<i64, EventLogError> {
    let mut value = None;
    conn.for_each_row_refs(sql, args, &mut |row| value = row.i64(0)).map_err(failed(context))?;
    value.ok_or_else(|| EventLogError::Corrupt { position: 0, reason: format!("{context}: no integer answered") })
}

/// Where those of the events `ids` (as text) that are stored are.
pub(super) fn locate(conn: &mut Connection, ids: &[String]) -> Result<Vec<LocatedEvent>, EventLogError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // One statement text per number of ids (a command's lookups use one or 64), kept prepared.
    let list = (1..=ids.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT position, stream_id, stream_version FROM events WHERE event_id IN ({list})");
    let args: Vec<SqlRef<'_>> = ids.iter().map(|id| SqlRef::Text(id)).collect();
    let mut out = Vec::new();
    let mut bad = false;
    conn.for_each_row_refs(&sql, &args, &mut |row| match (row.i64(0), row.str(1), row.i64(2)) {
        (Some(position), Some(stream_id), Some(stream_version)) => {
            out.push(LocatedEvent { position, stream_id: stream_id.to_string(), stream_version })
        }
        _ => bad = true,
    })
    .map_err(failed("looking up a command's earlier events"))?;
    if bad {
        return Err(EventLogError::Corrupt {
            position: 0,
            reason: "an event row without its position or stream".into(),
        });
    }
    Ok(out)
}

fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The `AND …` conditions of a log filter, their values appended to `args`.
fn push_filter(sql: &mut String, args: &mut Vec<SqlValue>, filter: &EventFilter) {
    let mut bind = |sql: &mut String, value: SqlValue| {
        args.push(value);
        sql.push_str(&format!("?{}", args.len()));
    };
    if !filter.event_types.is_empty() {
        sql.push_str(" AND event_type IN (");
        for (i, t) in filter.event_types.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            bind(sql, SqlValue::Text(t.clone()));
        }
        sql.push(')');
    }
    if let Some(prefix) = &filter.stream_prefix {
        sql.push_str(&format!(" AND substr(stream_id, 1, {}) = ", prefix.chars().count()));
        bind(sql, SqlValue::Text(prefix.clone()));
    }
    if let Some(root) = filter.root_source_id {
        sql.push_str(" AND root_source_id = ");
        bind(sql, SqlValue::Text(root.to_string()));
    }
    if let Some(user) = &filter.user_id {
        sql.push_str(" AND user_id = ");
        bind(sql, SqlValue::Text(user.clone()));
    }
}

fn events(conn: &mut Connection, sql: &str, args: &[SqlValue]) -> Result<Vec<RecordedEvent>, EventLogError> {
    rows(conn, sql, args, decode, 0)
}

/// The rows of `sql`, each turned into a `T` by `each`, in a vector with room for `expected`
/// from the start; the first row that cannot be turned is the error.
fn rows<T>(
    conn: &mut Connection,
    sql: &str,
    args: &[SqlValue],
    each: fn(Row) -> Result<T, EventLogError>,
    expected: usize,
) -> Result<Vec<T>, EventLogError> {
    let mut out = Vec::with_capacity(expected);
    let mut bad = None;
    conn.for_each_row(sql, args, &mut |row| {
        if bad.is_none() {
            match each(row) {
                Ok(e) => out.push(e),
                Err(e) => bad = Some(e),
            }
        }
    })
    .map_err(failed("reading the log"))?;
    bad.map_or(Ok(out), Err)
}

/// An event out of its row (the columns of [`COLUMNS`], in order).
fn decode(row: Row) -> Result<RecordedEvent, EventLogError> {
    unparsed(row)?.parsed()
}

/// An event out of its row, its payload left as text.
fn unparsed(row: Row) -> Result<UnparsedEvent, EventLogError> {
    let mut values = row.0.into_iter();
    let mut next = || values.next().unwrap_or(SqlValue::Null);
    let position = next().as_i64().ok_or(EventLogError::Corrupt { position: 0, reason: "no position".into() })?;
    let corrupt = |reason: String| EventLogError::Corrupt { position, reason };
    let text = |column: &str, v: SqlValue| match v {
        SqlValue::Text(s) => Ok(s),
        other => Err(corrupt(format!("{column}: not text ({other:?})"))),
    };
    let int = |column: &str, v: SqlValue| match v {
        SqlValue::Int(i) => Ok(i),
        other => Err(corrupt(format!("{column}: not an integer ({other:?})"))),
    };
    let event_id = Uuid::parse_str(&text("event_id", next())?).map_err(|e| corrupt(format!("event_id: {e}")))?;
    let stream_id = text("stream_id", next())?;
    let stream_version = int("stream_version", next())?;
    let event_type = text("event_type", next())?;
    let schema_version =
        i32::try_from(int("schema_version", next())?).map_err(|_| corrupt("schema_version: out of range".into()))?;
    let payload = text("payload", next())?;
    let metadata = serde_json::from_str(&text("metadata", next())?).map_err(|e| corrupt(format!("metadata: {e}")))?;
    let micros = int("recorded_at", next())?;
    let recorded_at: DateTime<Utc> =
        DateTime::from_timestamp_micros(micros).ok_or_else(|| corrupt(format!("recorded_at {micros} out of range")))?;
    let event = RecordedEvent {
        position,
        event_id,
        stream_id,
        stream_version,
        event_type,
        schema_version,
        payload: serde_json::Value::Null,
        metadata,
        recorded_at,
    };
    Ok(UnparsedEvent { event, payload })
}
