//! Event rows read back from PostgreSQL: parsed, or with each payload as its stored JSON text.

use agentlog_domain::envelope::RecordedEvent;
use sqlx::{
    Decode, Postgres, Row, Type, ValueRef,
    postgres::{PgRow, PgTypeInfo, PgValueFormat, PgValueRef},
    types::Json,
};

use crate::{error::EventLogError, unparsed::UnparsedEvent};

/// The columns every event read selects, in the order [`decode_row`] reads them.
pub(super) const COLUMNS: &str =
    "position, event_id, stream_id, stream_version, event_type, schema_version, payload, metadata, recorded_at";

/// Every row decoded by `decode`, into a vector sized once: collecting `Result`s does not know
/// the count, and a page of 50,000 events grew by doubling, copied about twice over.
pub(super) fn decode_all<T>(
    rows: &[PgRow],
    decode: fn(&PgRow) -> Result<T, EventLogError>,
) -> Result<Vec<T>, EventLogError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(decode(row)?);
    }
    Ok(out)
}

/// An event out of its row, its payload parsed.
pub(super) fn decode_row(row: &PgRow) -> Result<RecordedEvent, EventLogError> {
    let mut event = columns(row)?;
    event.payload = row.try_get::<Json<serde_json::Value>, _>(6).map_err(|e| corrupt(event.position, "payload", e))?.0;
    Ok(event)
}

/// An event out of its row, its payload left as its stored JSON text: a reader decoding
/// payloads into typed events (a rebuild) parses each once, not three times (into a `Value`,
/// back to text, into its type).
pub(super) fn unparsed_row(row: &PgRow) -> Result<UnparsedEvent, EventLogError> {
    let event = columns(row)?;
    let payload = row.try_get::<JsonText, _>(6).map_err(|e| corrupt(event.position, "payload", e))?.0;
    Ok(UnparsedEvent { event, payload })
}

fn corrupt(position: i64, what: &str, e: sqlx::Error) -> EventLogError {
    EventLogError::Corrupt { position, reason: format!("{what}: {e}") }
}

/// Every column but the payload (left null).
fn columns(row: &PgRow) -> Result<RecordedEvent, EventLogError> {
    let position: i64 = row.try_get(0).map_err(EventLogError::db("decoding an event row"))?;
    Ok(RecordedEvent {
        position,
        event_id: row.try_get(1).map_err(|e| corrupt(position, "event_id", e))?,
        stream_id: row.try_get(2).map_err(|e| corrupt(position, "stream_id", e))?,
        stream_version: row.try_get(3).map_err(|e| corrupt(position, "stream_version", e))?,
        event_type: row.try_get(4).map_err(|e| corrupt(position, "event_type", e))?,
        schema_version: row.try_get(5).map_err(|e| corrupt(position, "schema_version", e))?,
        payload: serde_json::Value::Null,
        metadata: row.try_get::<Json<_>, _>(7).map_err(|e| corrupt(position, "metadata", e))?.0,
        recorded_at: row.try_get(8).map_err(|e| corrupt(position, "recorded_at", e))?,
    })
}

/// A `json` value (the log's columns) or a `jsonb` one (an expression's, or the columns of a
/// log not yet migrated) as its JSON text, unparsed.
struct JsonText(String);

/// The first byte of `jsonb`'s binary format: its version, the text after it.
const JSONB_VERSION: u8 = 1;

impl Type<Postgres> for JsonText {
    fn type_info() -> PgTypeInfo {
        <Json<()> as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <Json<()> as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for JsonText {
    fn decode(value: PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let binary_jsonb = value.format() == PgValueFormat::Binary && *value.type_info() == Self::type_info();
        let mut bytes = value.as_bytes()?;
        if binary_jsonb {
            match bytes.split_first() {
                Some((&JSONB_VERSION, text)) => bytes = text,
                Some((version, _)) => return Err(format!("jsonb format version {version}, not {JSONB_VERSION}").into()),
                None => return Err("an empty jsonb value".into()),
            }
        }
        Ok(Self(std::str::from_utf8(bytes)?.to_owned()))
    }
}
