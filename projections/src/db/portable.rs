//! What both backends' statements share: `$n` placeholders rewritten for SQLite, values bound
//! for PostgreSQL, and PostgreSQL rows read into portable [`Row`]s.

use std::borrow::Cow;

use agentlog_sqlite::{Row, SqlValue};
use sqlx::{Column, Postgres, Row as _, TypeInfo, postgres::PgRow};

/// Rewrite `$n` placeholders for SQLite: plain `?` when they run 1, 2, 3 … in order, each once,
/// else `?n`. (SQLite reads `$1` as a parameter *named* `$1`, numbered by first appearance, not
/// as parameter 1; values are bound by number.)
pub(crate) fn for_sqlite(sql: &str) -> Cow<'_, str> {
    if !sql.contains('$') {
        return Cow::Borrowed(sql);
    }
    let bytes = sql.as_bytes();
    let mut numbers = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let start = i + 1;
            let mut end = start;
            while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            numbers.push((i, end, sql[start..end].parse::<usize>().unwrap_or(0)));
            i = end;
        } else {
            i += 1;
        }
    }
    let in_order = numbers.iter().enumerate().all(|(k, &(_, _, n))| n == k + 1);
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    for &(at, end, _) in &numbers {
        out.push_str(&sql[copied..at]);
        out.push('?');
        if !in_order {
            out.push_str(&sql[at + 1..end]);
        }
        copied = end;
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
}

pub(crate) fn decode_pg(row: &PgRow) -> Row {
    let mut out = Vec::with_capacity(row.columns().len());
    for (i, col) in row.columns().iter().enumerate() {
        let value = match col.type_info().name() {
            "INT8" => row.try_get::<Option<i64>, _>(i).ok().flatten().map(SqlValue::Int),
            "INT4" => row.try_get::<Option<i32>, _>(i).ok().flatten().map(|v| SqlValue::Int(v.into())),
            "INT2" => row.try_get::<Option<i16>, _>(i).ok().flatten().map(|v| SqlValue::Int(v.into())),
            "BOOL" => row.try_get::<Option<bool>, _>(i).ok().flatten().map(|v| SqlValue::Int(v.into())),
            "FLOAT8" => row.try_get::<Option<f64>, _>(i).ok().flatten().map(SqlValue::Float),
            "FLOAT4" => row.try_get::<Option<f32>, _>(i).ok().flatten().map(|v| SqlValue::Float(v.into())),
            "NUMERIC" => row.try_get::<Option<f64>, _>(i).ok().flatten().map(SqlValue::Float),
            "UUID" => row.try_get::<Option<uuid::Uuid>, _>(i).ok().flatten().map(|v| SqlValue::Text(v.to_string())),
            "JSONB" | "JSON" => row
                .try_get::<Option<sqlx::types::Json<serde_json::Value>>, _>(i)
                .ok()
                .flatten()
                .map(|v| SqlValue::Text(v.0.to_string())),
            _ => row.try_get::<Option<String>, _>(i).ok().flatten().map(SqlValue::Text),
        };
        out.push(value.unwrap_or(SqlValue::Null));
    }
    Row(out)
}

/// A NULL whose type PostgreSQL infers from where it is used (parameter type 0, unspecified).
///
/// sqlx caches a prepared statement by its SQL text alone, with the parameter types of its first
/// use: a NULL bound as a typed `None` would fix that column's parameter type for every later
/// use of the statement, and a later non-NULL value of the column's real type would then be
/// refused ("incorrect binary data format").
pub(crate) struct UntypedNull;

impl sqlx::Type<Postgres> for UntypedNull {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        sqlx::postgres::PgTypeInfo::with_oid(sqlx::postgres::types::Oid(0))
    }
}

impl sqlx::Encode<'_, Postgres> for UntypedNull {
    fn encode_by_ref(
        &self,
        _buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        Ok(sqlx::encode::IsNull::Yes)
    }
}

macro_rules! bind_all {
    ($q:expr, $args:expr, $null:expr) => {{
        let mut q = $q;
        for a in $args {
            q = match a {
                SqlValue::Null => q.bind($null),
                SqlValue::Int(v) => q.bind(*v),
                SqlValue::Float(v) => q.bind(*v),
                SqlValue::Text(v) => q.bind(v.as_str()),
            };
        }
        q
    }};
}

/// Bind every value of `args` to a sqlx query, NULL as `$null`.
pub(crate) use bind_all;

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_rewritten_for_sqlite() {
        assert_eq!(super::for_sqlite("SELECT $1, $12 FROM t WHERE a = '$x'"), "SELECT ?1, ?12 FROM t WHERE a = '$x'");
        assert_eq!(super::for_sqlite("INSERT INTO t VALUES ($1, $2), ($3, $4)"), "INSERT INTO t VALUES (?, ?), (?, ?)");
        assert_eq!(super::for_sqlite("SELECT $1 WHERE a = $2 OR b = $1"), "SELECT ?1 WHERE a = ?2 OR b = ?1");
        assert_eq!(super::for_sqlite("SELECT 1"), "SELECT 1");
    }
}
