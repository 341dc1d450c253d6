//! Typed reads of portable rows: the column accessors every query module uses to turn a
//! [`Row`] into a serde struct.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::db::Row;

/// Column readers with the conversions read models need.
pub(crate) trait RowExt {
    /// Text, owned.
    fn text(&self, i: usize) -> Option<String>;
    /// Text, or empty when NULL.
    fn text_or_empty(&self, i: usize) -> String;
    /// An integer, or 0 when NULL.
    fn int_or_zero(&self, i: usize) -> i64;
    /// A 0/1 flag.
    fn flag(&self, i: usize) -> bool;
    /// An epoch-µs time.
    fn time(&self, i: usize) -> Option<DateTime<Utc>>;
    /// An epoch-µs time that is never NULL (the epoch when it is).
    fn time_or_epoch(&self, i: usize) -> DateTime<Utc>;
    /// JSON text, parsed.
    fn json_value(&self, i: usize) -> Option<Value>;
    /// JSON text, parsed into `T` (None when NULL or not a `T`).
    fn json_as<T: serde::de::DeserializeOwned>(&self, i: usize) -> Option<T>;
}

impl RowExt for Row {
    fn text(&self, i: usize) -> Option<String> {
        self.str(i).map(str::to_string)
    }
    fn text_or_empty(&self, i: usize) -> String {
        self.str(i).unwrap_or_default().to_string()
    }
    fn int_or_zero(&self, i: usize) -> i64 {
        self.i64(i).unwrap_or(0)
    }
    fn flag(&self, i: usize) -> bool {
        self.i64(i).is_some_and(|v| v != 0)
    }
    fn time(&self, i: usize) -> Option<DateTime<Utc>> {
        self.i64(i).and_then(DateTime::from_timestamp_micros)
    }
    fn time_or_epoch(&self, i: usize) -> DateTime<Utc> {
        self.time(i).unwrap_or(DateTime::UNIX_EPOCH)
    }
    fn json_value(&self, i: usize) -> Option<Value> {
        self.json(i)
    }
    fn json_as<T: serde::de::DeserializeOwned>(&self, i: usize) -> Option<T> {
        self.str(i).and_then(|s| serde_json::from_str(s).ok())
    }
}
