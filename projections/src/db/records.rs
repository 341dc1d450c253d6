//! Many rows of a table sent to PostgreSQL as one array of the table's own row type:
//! `INSERT … SELECT u.a, u.b … FROM UNNEST($1::t[]) AS u`. PostgreSQL unnests one array of
//! records in about half the time it unnests one array per column when the rows are wide
//! (BENCHMARKS.md, "What the statement's shape costs"): a bulk load's upserts of wide rows.
//!
//! The records are encoded here in PostgreSQL's binary format, every field typed as its
//! column is (read from the catalog in the same transaction, so a column added meanwhile is
//! never missed). Values that do not match their column's type exactly (a float for an integer
//! column, text for a number) are left to the arrays per column ([`super::arrays`]), whose
//! casts decide them as before: the rows written are the same either way.

use sqlx::{
    Encode, Postgres, Type,
    encode::IsNull,
    postgres::{PgArgumentBuffer, PgConnection, PgTypeInfo, types::Oid},
};

use agentlog_sqlite::SqlValue;

use crate::error::ProjectionError;

/// Fewer rows than this go as arrays per column: reading the table's shape costs two round trips.
pub(super) const MIN_ROWS: usize = 256;

/// `bigint`, `integer`, `double precision`, `text`: the column types read models use.
const INT8: u32 = 20;
const INT4: u32 = 23;
const FLOAT8: u32 = 701;
const TEXT: u32 = 25;

/// A table's row type, its array type and its columns in order, with their types.
pub(super) struct Shape {
    row_type: u32,
    array_type: u32,
    columns: Vec<(String, u32)>,
}

impl Shape {
    /// The shape of `table` as the transaction sees it (one round trip); `None` when it has no
    /// row type.
    pub(super) async fn of(conn: &mut PgConnection, table: &str) -> Result<Option<Self>, ProjectionError> {
        let rows: Vec<(i64, i64, String, i64)> = sqlx::query_as(
            "SELECT t.oid::int8, t.typarray::int8, a.attname::text, a.atttypid::int8 \
             FROM pg_class c JOIN pg_type t ON t.oid = c.reltype JOIN pg_attribute a ON a.attrelid = c.oid \
             WHERE c.oid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        )
        .bind(table)
        .fetch_all(conn)
        .await
        .map_err(ProjectionError::db("reading a table's row type"))?;
        let oid = |v: i64| u32::try_from(v).ok();
        let Some(&(row_type, array_type, ..)) = rows.first() else { return Ok(None) };
        let (Some(row_type), Some(array_type)) = (oid(row_type), oid(array_type)) else { return Ok(None) };
        let columns = rows.into_iter().map(|(_, _, name, ty)| oid(ty).map(|ty| (name, ty))).collect::<Option<Vec<_>>>();
        Ok(columns.map(|columns| Self { row_type, array_type, columns }))
    }
}

/// Rows encoded as one array of a table's row type, to bind as one parameter.
pub(super) struct Records {
    bytes: Vec<u8>,
    array_type: u32,
}

impl Records {
    /// `rows` (values in `columns` order) as records of `shape`, the table's other columns
    /// NULL; `None` when a column is not the table's, has a type read models do not use, or a
    /// value does not fit its column's type exactly.
    pub(super) fn encode(shape: &Shape, columns: &[&str], rows: &[Vec<SqlValue>]) -> Option<Self> {
        // For each of the table's columns: where its value sits in a row, if given.
        let mut place = vec![None; shape.columns.len()];
        for (i, name) in columns.iter().enumerate() {
            let at = shape.columns.iter().position(|(c, _)| c == name)?;
            place[at] = Some(i);
        }
        let n = i32::try_from(shape.columns.len()).ok()?;
        let mut bytes = Vec::with_capacity(20 + rows.len() * 64 * shape.columns.len());
        for header in [1, 0, shape.row_type as i32, i32::try_from(rows.len()).ok()?, 1] {
            bytes.extend_from_slice(&header.to_be_bytes());
        }
        for row in rows {
            let start = bytes.len();
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(&n.to_be_bytes());
            for (column, at) in shape.columns.iter().zip(&place) {
                let (_, ty) = column;
                bytes.extend_from_slice(&ty.to_be_bytes());
                let value = at.and_then(|i| row.get(i)).unwrap_or(&SqlValue::Null);
                field(&mut bytes, *ty, value)?;
            }
            let len = i32::try_from(bytes.len() - start - 4).ok()?;
            bytes[start..start + 4].copy_from_slice(&len.to_be_bytes());
        }
        Some(Self { bytes, array_type: shape.array_type })
    }
}

/// One field: its length and its bytes in the column type's binary format (-1: NULL).
fn field(bytes: &mut Vec<u8>, ty: u32, value: &SqlValue) -> Option<()> {
    let mut put = |data: &[u8]| {
        bytes.extend_from_slice(&i32::try_from(data.len()).ok()?.to_be_bytes());
        bytes.extend_from_slice(data);
        Some(())
    };
    match (ty, value) {
        (_, SqlValue::Null) => {
            bytes.extend_from_slice(&(-1i32).to_be_bytes());
            Some(())
        }
        (INT8, SqlValue::Int(v)) => put(&v.to_be_bytes()),
        (INT4, SqlValue::Int(v)) => put(&i32::try_from(*v).ok()?.to_be_bytes()),
        // As PostgreSQL's cast from bigint to double precision rounds it.
        (FLOAT8, SqlValue::Int(v)) => put(&(*v as f64).to_be_bytes()),
        (FLOAT8, SqlValue::Float(v)) => put(&v.to_be_bytes()),
        (TEXT, SqlValue::Text(v)) => put(v.as_bytes()),
        _ => None,
    }
}

impl Type<Postgres> for Records {
    fn type_info() -> PgTypeInfo {
        // `record[]`; each value says its table's array type (`produces`).
        PgTypeInfo::with_oid(Oid(2287))
    }
}

impl Encode<'_, Postgres> for Records {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, sqlx::error::BoxDynError> {
        buf.extend_from_slice(&self.bytes);
        Ok(IsNull::No)
    }

    fn produces(&self) -> Option<PgTypeInfo> {
        Some(PgTypeInfo::with_oid(Oid(self.array_type)))
    }

    fn size_hint(&self) -> usize {
        self.bytes.len()
    }
}

/// `INSERT INTO table (columns) SELECT u.c1, … FROM UNNEST($1::table[]) AS u` and `tail`.
pub(super) fn insert_sql(table: &str, columns: &[&str], tail: &str) -> String {
    let select: Vec<String> = columns.iter().map(|c| format!("u.{c}")).collect();
    format!(
        "INSERT INTO {table} ({}) SELECT {} FROM UNNEST($1::{table}[]) AS u{tail}",
        columns.join(", "),
        select.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::{INT4, INT8, Records, Shape, SqlValue, TEXT};

    fn shape() -> Shape {
        Shape {
            row_type: 9,
            array_type: 10,
            columns: vec![("id".into(), TEXT), ("n".into(), INT8), ("small".into(), INT4)],
        }
    }

    #[test]
    fn rows_become_records_of_every_column() {
        let rows = vec![vec![SqlValue::from("a"), SqlValue::Int(7)]];
        let records = Records::encode(&shape(), &["id", "n"], &rows).expect("encodes");
        let mut want: Vec<u8> = Vec::new();
        for v in [1i32, 0, 9, 1, 1] {
            want.extend_from_slice(&v.to_be_bytes());
        }
        let mut record: Vec<u8> = Vec::new();
        record.extend_from_slice(&3i32.to_be_bytes());
        for (ty, data) in [(TEXT, Some(b"a".to_vec())), (INT8, Some(7i64.to_be_bytes().to_vec())), (INT4, None)] {
            record.extend_from_slice(&ty.to_be_bytes());
            match data {
                Some(d) => {
                    record.extend_from_slice(&(d.len() as i32).to_be_bytes());
                    record.extend_from_slice(&d);
                }
                None => record.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        want.extend_from_slice(&(record.len() as i32).to_be_bytes());
        want.extend_from_slice(&record);
        assert_eq!(records.bytes, want);
    }

    #[test]
    fn values_that_do_not_fit_their_column_are_left_to_the_arrays() {
        let s = shape();
        assert!(Records::encode(&s, &["id", "n"], &[vec![SqlValue::Int(1), SqlValue::Int(1)]]).is_none());
        assert!(Records::encode(&s, &["id", "small"], &[vec![SqlValue::from("a"), SqlValue::Int(1 << 40)]]).is_none());
        assert!(Records::encode(&s, &["id", "n"], &[vec![SqlValue::from("a"), SqlValue::Float(1.5)]]).is_none());
        assert!(Records::encode(&s, &["id", "missing"], &[vec![SqlValue::from("a"), SqlValue::Int(1)]]).is_none());
    }
}
