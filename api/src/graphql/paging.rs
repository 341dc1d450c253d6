//! Relay paging over read-model pages: arguments in, connections out.

use agentlog_projections::page::{Page, PageRequest};
use async_graphql::{
    Context, OutputType,
    connection::{Connection, Edge},
};

use super::request::app;
use crate::error::ApiError;

/// A read-model page request from Relay arguments (`first` within limits, `after` opaque).
pub fn page_request(ctx: &Context<'_>, first: Option<i32>, after: Option<String>) -> Result<PageRequest, ApiError> {
    Ok(PageRequest::first(page_size(ctx, first)?).after(after))
}

/// A page size within limits.
pub fn page_size(ctx: &Context<'_>, first: Option<i32>) -> Result<usize, ApiError> {
    let max = app(ctx).limits.max_page_size;
    match first {
        None => Ok(50.min(max)),
        Some(n) if n < 0 => Err(ApiError::validation("first", "must not be negative")),
        Some(n) if n as usize > max => Err(ApiError::Limit(format!("first may be at most {max}"))),
        Some(n) => Ok(n as usize),
    }
}

/// A Relay connection over a read-model page, each row mapped to its GraphQL type.
pub fn connection<R, T: OutputType>(page: Page<R>, had_cursor: bool, node: impl Fn(R) -> T) -> Connection<String, T> {
    let mut c = Connection::new(had_cursor, page.has_next_page);
    c.edges.extend(page.items.into_iter().zip(page.cursors).map(|(row, cursor)| Edge::new(cursor, node(row))));
    c
}
