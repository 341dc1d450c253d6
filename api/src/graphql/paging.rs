//! Relay paging over read-model pages: arguments in, connections out.

use agentlog_projections::page::{Page, PageRequest};
use async_graphql::{
    Context, OutputType,
    connection::{Connection, Edge},
};

use super::request::app;
use crate::error::ApiError;

/// A read-model page request from Relay arguments: `first` rows after `after`, or the `last`
/// rows before `before` (each within limits; at most one of `first` and `last`; cursors opaque).
pub fn page_request(
    ctx: &Context<'_>,
    first: Option<i32>,
    after: Option<String>,
    last: Option<i32>,
    before: Option<String>,
) -> Result<PageRequest, ApiError> {
    let request = match (first, last) {
        (Some(_), Some(_)) => {
            return Err(ApiError::validation("last", "give at most one of first and last"));
        }
        (_, Some(last)) => PageRequest::last(page_size_of(ctx, "last", Some(last))?),
        (first, None) => PageRequest::first(page_size_of(ctx, "first", first)?),
    };
    Ok(request.after(after).before(before))
}

/// A page size within limits.
pub fn page_size(ctx: &Context<'_>, first: Option<i32>) -> Result<usize, ApiError> {
    page_size_of(ctx, "first", first)
}

/// A page size given as argument `field` within limits (50 when absent).
fn page_size_of(ctx: &Context<'_>, field: &str, n: Option<i32>) -> Result<usize, ApiError> {
    let max = app(ctx).limits.max_page_size;
    match n {
        None => Ok(50.min(max)),
        Some(n) if n < 0 => Err(ApiError::validation(field, "must not be negative")),
        Some(n) if n as usize > max => Err(ApiError::Limit(format!("{field} may be at most {max}"))),
        Some(n) => Ok(n as usize),
    }
}

/// A Relay connection over a read-model page, each row mapped to its GraphQL type.
pub fn connection<R, T: OutputType>(page: Page<R>, node: impl Fn(R) -> T) -> Connection<String, T> {
    let mut c = Connection::new(page.has_previous_page, page.has_next_page);
    c.edges.extend(page.items.into_iter().zip(page.cursors).map(|(row, cursor)| Edge::new(cursor, node(row))));
    c
}
