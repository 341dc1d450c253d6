//! Typed reading of a read-model row, column by column in select order, and the conversions
//! every read model shares (times as epoch microseconds, flags as 0/1, JSON as text).
//!
//! A row that does not have the shape its table promises (a NULL in a NOT NULL column, JSON
//! that does not decode) is an error naming the table and column, never a panic.

use chrono::{DateTime, Utc};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    db::{Row, SqlValue},
    error::ProjectionError,
};

/// Reads the columns of one row in order.
pub(crate) struct Columns<'a> {
    row: &'a Row,
    table: &'static str,
    names: &'static [&'static str],
    next: usize,
}

impl<'a> Columns<'a> {
    /// Start at the first column of `row`, selected as `names` from `table`.
    pub(crate) fn new(row: &'a Row, table: &'static str, names: &'static [&'static str]) -> Self {
        Self { row, table, names, next: 0 }
    }

    fn take(&mut self) -> (&'a SqlValue, usize) {
        let i = self.next;
        self.next += 1;
        (self.row.get(i), i)
    }

    fn bad(&self, i: usize, what: &str) -> ProjectionError {
        let column = self.names.get(i).copied().unwrap_or("?");
        ProjectionError::Invalid(format!("{}.{column}: {what}", self.table))
    }

    /// A NOT NULL text column.
    pub(crate) fn text(&mut self) -> Result<String, ProjectionError> {
        let (v, i) = self.take();
        v.as_str().map(str::to_string).ok_or_else(|| self.bad(i, "expected text"))
    }

    /// A nullable text column.
    pub(crate) fn opt_text(&mut self) -> Option<String> {
        self.take().0.as_str().map(str::to_string)
    }

    /// A NOT NULL integer column.
    pub(crate) fn int(&mut self) -> Result<i64, ProjectionError> {
        let (v, i) = self.take();
        v.as_i64().ok_or_else(|| self.bad(i, "expected an integer"))
    }

    /// A nullable integer column.
    pub(crate) fn opt_int(&mut self) -> Option<i64> {
        self.take().0.as_i64()
    }

    /// A NOT NULL 0/1 column.
    pub(crate) fn flag(&mut self) -> Result<bool, ProjectionError> {
        Ok(self.int()? != 0)
    }

    /// A nullable 0/1 column.
    pub(crate) fn opt_flag(&mut self) -> Option<bool> {
        self.opt_int().map(|v| v != 0)
    }

    /// A NOT NULL time column (epoch microseconds).
    pub(crate) fn time(&mut self) -> Result<DateTime<Utc>, ProjectionError> {
        let (v, i) = self.take();
        v.as_i64().and_then(DateTime::from_timestamp_micros).ok_or_else(|| self.bad(i, "expected a time"))
    }

    /// A nullable time column.
    pub(crate) fn opt_time(&mut self) -> Result<Option<DateTime<Utc>>, ProjectionError> {
        let (v, i) = self.take();
        match v {
            SqlValue::Null => Ok(None),
            v => v
                .as_i64()
                .and_then(DateTime::from_timestamp_micros)
                .map(Some)
                .ok_or_else(|| self.bad(i, "expected a time")),
        }
    }

    /// A NOT NULL JSON column.
    pub(crate) fn json<T: DeserializeOwned>(&mut self) -> Result<T, ProjectionError> {
        let (v, i) = self.take();
        let text = v.as_str().ok_or_else(|| self.bad(i, "expected JSON text"))?;
        serde_json::from_str(text).map_err(|e| self.bad(i, &format!("bad JSON: {e}")))
    }

    /// A nullable JSON column.
    pub(crate) fn opt_json<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ProjectionError> {
        let (v, i) = self.take();
        match v {
            SqlValue::Null => Ok(None),
            SqlValue::Text(text) => {
                serde_json::from_str(text).map(Some).map_err(|e| self.bad(i, &format!("bad JSON: {e}")))
            }
            _ => Err(self.bad(i, "expected JSON text")),
        }
    }
}

/// A time as stored: epoch microseconds.
pub(crate) fn micros(t: DateTime<Utc>) -> SqlValue {
    SqlValue::Int(t.timestamp_micros())
}

/// An optional time as stored.
pub(crate) fn opt_micros(t: Option<DateTime<Utc>>) -> SqlValue {
    t.map_or(SqlValue::Null, micros)
}

/// A value as stored JSON text.
pub(crate) fn json_text<T: Serialize>(v: &T) -> SqlValue {
    // Serializing plain data (no maps with non-string keys, no failing impls) cannot fail; a
    // NULL would surface as a read error rather than a panic if it ever did.
    serde_json::to_string(v).map_or(SqlValue::Null, SqlValue::Text)
}

/// An optional value as stored JSON text.
pub(crate) fn opt_json_text<T: Serialize>(v: Option<&T>) -> SqlValue {
    v.map_or(SqlValue::Null, json_text)
}

/// A wire name of a serde enum (`"running"` for `TaskStatus::Running`).
pub(crate) fn wire_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Read a serde enum from its wire name.
pub(crate) fn from_wire_name<T: DeserializeOwned>(table: &str, name: &str) -> Result<T, ProjectionError> {
    serde_json::from_value(serde_json::Value::String(name.to_string()))
        .map_err(|_| ProjectionError::Invalid(format!("{table}: `{name}` is not a known value")))
}
