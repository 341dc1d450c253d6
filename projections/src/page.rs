//! Pages of read-model lists with keyset cursors (Relay-style: `first`/`after` forward,
//! `last`/`before` backward, `startCursor`/`endCursor`, true `hasPreviousPage`/`hasNextPage`),
//! shared by every query.
//!
//! A cursor is `<sort key>:<id>` — the sort key (an integer: a time in epoch µs, a sequence
//! number, a version) and the id of the last item of the page. Callers treat it as opaque; the
//! queries continue strictly after it, with an index seek (never an `OFFSET` scan), so pages
//! stay fast and stable while rows are added. A backward page seeks the same index in the
//! other direction and is handed back in list order, so paging back over a set gives the
//! items paging forward gave.
//!
//! ```
//! use agentlog_projections::page::{Cursor, PageRequest};
//! let cursor = Cursor::new(1_700_000_000, "t-1").to_string();
//! let request = PageRequest::first(20).after(Some(cursor));
//! assert_eq!(request.cursor().unwrap().unwrap().id, "t-1");
//! ```

use std::fmt;

use serde::Serialize;

use crate::error::ProjectionError;

/// Most rows one page may hold; larger requests are cut to it.
pub const MAX_PAGE_SIZE: usize = 500;

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The rows, in list order.
    pub items: Vec<T>,
    /// Each row's cursor, in list order (a page can be resumed after any row).
    pub cursors: Vec<String>,
    /// The cursor of the last row (pass it as `after` for the next page; `None` when empty).
    pub end_cursor: Option<String>,
    /// More rows follow.
    pub has_next_page: bool,
    /// Rows come before this page's first (pass `start_cursor` as `before` for them).
    pub has_previous_page: bool,
}

impl<T> Page<T> {
    /// An empty page.
    pub fn empty() -> Self {
        Self {
            items: Vec::new(),
            cursors: Vec::new(),
            end_cursor: None,
            has_next_page: false,
            has_previous_page: false,
        }
    }

    /// The cursor of the first row (pass it as `before` for the page before; `None` when empty).
    pub fn start_cursor(&self) -> Option<&str> {
        self.cursors.first().map(String::as_str)
    }
}

/// Which page to read: the rows strictly between `after` and `before` (each optional), the first
/// `size` of them, or the last `size` when `backward`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Page size (clamped to 0..=[`MAX_PAGE_SIZE`]).
    pub size: usize,
    /// Take the last `size` rows rather than the first (Relay's `last`).
    pub backward: bool,
    /// Only rows after this cursor (the `endCursor` of the page before).
    pub after: Option<String>,
    /// Only rows before this cursor (the `startCursor` of the page after).
    pub before: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self::first(50)
    }
}

impl PageRequest {
    /// The first `n` rows.
    pub fn first(n: usize) -> Self {
        Self { size: n, backward: false, after: None, before: None }
    }

    /// The last `n` rows.
    pub fn last(n: usize) -> Self {
        Self { size: n, backward: true, after: None, before: None }
    }

    /// The same request, after `cursor`.
    pub fn after(mut self, cursor: Option<String>) -> Self {
        self.after = cursor;
        self
    }

    /// The same request, before `cursor`.
    pub fn before(mut self, cursor: Option<String>) -> Self {
        self.before = cursor;
        self
    }

    /// The page size to use.
    pub fn limit(&self) -> usize {
        clamp_page_size(self.size)
    }

    /// The decoded `after` cursor.
    pub fn cursor(&self) -> Result<Option<Cursor>, ProjectionError> {
        Cursor::parse_opt(self.after.as_deref())
    }

    /// The decoded `before` cursor.
    pub fn before_cursor(&self) -> Result<Option<Cursor>, ProjectionError> {
        Cursor::parse_opt(self.before.as_deref())
    }
}

/// A position in a list ordered by `(sort_key, id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The sort key of the row.
    pub sort_key: i64,
    /// The id of the row (breaks ties).
    pub id: String,
}

impl Cursor {
    /// The cursor at (`sort_key`, `id`).
    pub fn new(sort_key: i64, id: impl Into<String>) -> Self {
        Self { sort_key, id: id.into() }
    }

    /// Read a cursor a previous page handed out.
    pub fn parse(text: &str) -> Result<Self, ProjectionError> {
        let invalid = || ProjectionError::Invalid(format!("`{text}` is not a cursor this list handed out"));
        let (key, id) = text.split_once(':').ok_or_else(invalid)?;
        let sort_key = key.parse::<i64>().map_err(|_| invalid())?;
        Ok(Self { sort_key, id: id.to_string() })
    }

    /// Read an optional cursor.
    pub fn parse_opt(text: Option<&str>) -> Result<Option<Self>, ProjectionError> {
        text.map(Self::parse).transpose()
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.sort_key, self.id)
    }
}

/// The page size to fetch for a request of `first` rows: at most [`MAX_PAGE_SIZE`]; 0 reads no
/// row (Relay's `first: 0`: only whether there are any, `hasNextPage`).
pub fn clamp_page_size(first: usize) -> usize {
    first.min(MAX_PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        for c in [Cursor::new(0, "a"), Cursor::new(-5, "x:y:z"), Cursor::new(i64::MAX, "ünï")] {
            assert_eq!(Cursor::parse(&c.to_string()).unwrap(), c);
        }
        for bad in ["", "nope", "x:1", ":a"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn page_size_is_clamped() {
        assert_eq!(PageRequest::first(0).limit(), 0);
        assert_eq!(PageRequest::first(10_000).limit(), MAX_PAGE_SIZE);
        assert!(PageRequest::last(3).backward && !PageRequest::first(3).backward);
    }
}
