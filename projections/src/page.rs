//! Pages of read-model lists with keyset cursors (Relay-style: `first`, `after`, `endCursor`,
//! `hasNextPage`).
//!
//! A cursor is opaque to callers: the hex of the sort key of the last row of a page. Keyset
//! pagination stays fast on any page (an index seek, never an `OFFSET` scan) and stable while
//! rows are added.
//!
//! ```
//! use agentlog_projections::page::{Cursor, PageRequest};
//! let cursor = Cursor::new(1_700_000_000, "t-1").encode();
//! let request = PageRequest::first(20).after(Some(cursor));
//! assert_eq!(request.cursor().unwrap().unwrap().id, "t-1");
//! ```

use serde::Serialize;

use crate::error::ProjectionError;

/// Most rows one page may hold; larger requests are clamped.
pub const MAX_PAGE_SIZE: usize = 500;

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The rows, in list order.
    pub items: Vec<T>,
    /// The cursor of the last row (pass it as `after` for the next page).
    pub end_cursor: Option<String>,
    /// More rows follow.
    pub has_next_page: bool,
}

impl<T> Page<T> {
    /// An empty page.
    pub fn empty() -> Self {
        Self { items: Vec::new(), end_cursor: None, has_next_page: false }
    }
}

/// Which page to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Page size (clamped to 1..=[`MAX_PAGE_SIZE`]).
    pub first: usize,
    /// The `endCursor` of the previous page.
    pub after: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self { first: 50, after: None }
    }
}

impl PageRequest {
    /// The first `n` rows.
    pub fn first(n: usize) -> Self {
        Self { first: n, after: None }
    }

    /// The same request, after `cursor`.
    pub fn after(mut self, cursor: Option<String>) -> Self {
        self.after = cursor;
        self
    }

    /// The page size to use.
    pub fn limit(&self) -> usize {
        self.first.clamp(1, MAX_PAGE_SIZE)
    }

    /// The decoded `after` cursor.
    pub fn cursor(&self) -> Result<Option<Cursor>, ProjectionError> {
        self.after.as_deref().map(Cursor::decode).transpose()
    }
}

/// A keyset position: the sort value and the row id that breaks ties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The sort column's value (a time in microseconds, a sequence number …).
    pub sort: i64,
    /// The row's id.
    pub id: String,
}

impl Cursor {
    /// A cursor at (`sort`, `id`).
    pub fn new(sort: i64, id: impl Into<String>) -> Self {
        Self { sort, id: id.into() }
    }

    /// The opaque text form.
    pub fn encode(&self) -> String {
        let plain = format!("{}:{}", self.sort, self.id);
        plain.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// Read the opaque text form.
    pub fn decode(text: &str) -> Result<Self, ProjectionError> {
        let bad = || ProjectionError::Invalid(format!("`{text}` is not a cursor of this list"));
        if !text.len().is_multiple_of(2) || text.len() > 2048 {
            return Err(bad());
        }
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        let plain = String::from_utf8(bytes).map_err(|_| bad())?;
        let (sort, id) = plain.split_once(':').ok_or_else(bad)?;
        Ok(Self { sort: sort.parse().map_err(|_| bad())?, id: id.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        for c in [Cursor::new(0, "a"), Cursor::new(-5, "x:y:z"), Cursor::new(i64::MAX, "ünï")] {
            assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        }
        for bad in ["", "zz", "abc", "3a", "6162"] {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn page_size_is_clamped() {
        assert_eq!(PageRequest::first(0).limit(), 1);
        assert_eq!(PageRequest::first(10_000).limit(), MAX_PAGE_SIZE);
    }
}
