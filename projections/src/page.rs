//! One page of a keyset-paginated list, and its opaque cursor.
//!
//! A cursor is `<sort key>:<id>` — the sort key (an integer, usually a time in epoch µs or a
//! version) and the id of the last item of the page. Clients must treat it as opaque; the query
//! functions decode it with [`Cursor::parse`] and continue strictly after it.
//!
//! ```
//! use agentlog_projections::page::Cursor;
//! let c = Cursor::new(1_700_000_000_000_000, "op-1");
//! assert_eq!(Cursor::parse(&c.to_string()).unwrap(), c);
//! ```

use std::fmt;

use serde::Serialize;

use crate::error::ProjectionError;

/// The most items one page may hold; larger requests are cut to it.
pub const MAX_PAGE_SIZE: usize = 500;

/// One page of results (Relay's `edges`/`pageInfo` reduced to what the API needs).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The items, in the list's order.
    pub items: Vec<T>,
    /// The cursor of the last item, to ask for the next page (`None` when the page is empty).
    pub end_cursor: Option<String>,
    /// Whether more items follow.
    pub has_next_page: bool,
}

impl<T> Page<T> {
    /// Build a page from up to `first + 1` fetched items (the extra one only tells that more
    /// follow), with `cursor_of` giving each item's cursor.
    pub fn from_fetched(mut items: Vec<T>, first: usize, cursor_of: impl Fn(&T) -> Cursor) -> Self {
        let has_next_page = items.len() > first;
        items.truncate(first);
        let end_cursor = items.last().map(|item| cursor_of(item).to_string());
        Self { items, end_cursor, has_next_page }
    }

    /// An empty page.
    pub fn empty() -> Self {
        Self { items: Vec::new(), end_cursor: None, has_next_page: false }
    }
}

/// A position in a list ordered by `(sort_key, id)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The sort key of the item.
    pub sort_key: i64,
    /// The id of the item (breaks ties).
    pub id: String,
}

impl Cursor {
    /// The cursor of an item.
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

/// The page size to fetch for a request of `first` items: at least 1, at most
/// [`MAX_PAGE_SIZE`].
pub fn clamp_page_size(first: usize) -> usize {
    first.clamp(1, MAX_PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_ids_may_hold_colons() {
        let c = Cursor::new(-5, "a:b");
        assert_eq!(Cursor::parse(&c.to_string()).unwrap(), c);
        assert!(Cursor::parse("nope").is_err());
        assert!(Cursor::parse("x:1").is_err());
    }

    #[test]
    fn a_page_knows_whether_more_follow() {
        let page = Page::from_fetched(vec![1, 2, 3], 2, |i| Cursor::new(*i, "x"));
        assert_eq!(page.items, vec![1, 2]);
        assert!(page.has_next_page);
        assert_eq!(page.end_cursor.as_deref(), Some("2:x"));
        let last = Page::from_fetched(vec![1], 2, |i| Cursor::new(*i, "x"));
        assert!(!last.has_next_page);
    }
}
