//! What fields cost in the complexity limit (`ApiLimits::max_complexity`, 2,000 by default; a
//! plain field costs 1). The engine adds these up over the whole document, aliases included,
//! and refuses (LIMIT) a document that passes the limit before anything runs.
//!
//! A field that reads again — a page of rows, a read of the log, a replay, a parsed tree — is
//! priced for that read, and a page pays for what each of its rows reads: a row's plain fields
//! come with the page's one query ([`ROW_FREE`] of them), but a nested page, a log read or a
//! replay under a row runs once per row and is charged once per row.
//!
//! ```
//! use agentlog_api::graphql::cost;
//! // `history(first: 500) { eventType position }`
//! assert_eq!(cost::log_read(Some(500), 500, 2), cost::LOG_READ + 100);
//! // `operations(first: 100) { nodes { id status } }`: plain rows, one query.
//! assert_eq!(cost::page(Some(100), None, 3), cost::PAGE + 3);
//! // `operations(first: 100) { nodes { stateAt(position: 1) { status } } }`: a replay per row.
//! assert!(cost::page(Some(100), None, 1 + cost::REPLAY + 2) > 2_000);
//! ```

/// A page of rows (a connection: `operations`, `steps`, `children`, …) or a walk of a subtree:
/// one read of the read models.
pub const PAGE: usize = 70;

/// What a row's selection may cost and still come free with its page: every plain field of
/// the widest row type (`Task`, `Operation`) with its nested objects fits; a page, a log read
/// or a replay nested under the row does not.
pub const ROW_FREE: usize = 60;

/// A read of the log (`events`, `chain`, `history`), before the events it answers.
pub const LOG_READ: usize = 70;

/// A replay of one stream (`stateAt`, `asyncResults`: reads and folds the stream).
pub const REPLAY: usize = 100;

/// A conversation's parsed tree (`tree`, `contextTree`, `flatList`).
pub const TREE: usize = 100;

/// An origin's path: its chain's events, up to 5,000, read to walk its causes (`origin { path }`;
/// the creating event alone is one read).
pub const ORIGIN: usize = 100;

/// An analytics report (aggregates over finished runs, or a budget's spend over time).
pub const ANALYTICS: usize = 100;

/// The rows a page answers when neither `first` nor `last` is given.
const DEFAULT_ROWS: usize = 50;

/// A page of `first` (or `last`) rows, 50 when neither is given: [`PAGE`] and the selection
/// once, and for every further row what the selection costs past [`ROW_FREE`].
pub fn page(first: Option<i32>, last: Option<i32>, child_complexity: usize) -> usize {
    let rows = last.or(first).map_or(DEFAULT_ROWS, |n| usize::try_from(n).unwrap_or(0));
    let per_row = child_complexity.saturating_sub(ROW_FREE);
    PAGE.saturating_add(child_complexity).saturating_add(rows.saturating_sub(1).saturating_mul(per_row))
}

/// A log read of `first` events (or `default` when absent): [`LOG_READ`] plus a tenth of the
/// selection per event, so a page of large selections costs more than a page of small ones.
pub fn log_read(first: Option<i32>, default: usize, child_complexity: usize) -> usize {
    let events = first.map_or(default, |n| usize::try_from(n).unwrap_or(0));
    LOG_READ.saturating_add(events.saturating_mul(child_complexity.max(1)) / 10)
}

/// A field that does `work` once, plus what is selected under it.
pub fn once(work: usize, child_complexity: usize) -> usize {
    work.saturating_add(child_complexity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_plain_rows_costs_one_read() {
        assert_eq!(page(Some(500), None, ROW_FREE), PAGE + ROW_FREE);
        assert_eq!(page(None, Some(500), 10), PAGE + 10);
        assert_eq!(page(Some(0), None, 10), PAGE + 10);
    }

    #[test]
    fn what_a_row_reads_again_is_paid_per_row() {
        // `children(first: 500) { nodes { id } }` under each of 500 rows.
        let inner = page(Some(500), None, 2);
        assert!(inner > ROW_FREE);
        assert_eq!(page(Some(500), None, 1 + inner), PAGE + 1 + inner + 499 * (1 + inner - ROW_FREE));
        // A row's history read costs more than the row's free share.
        assert!(log_read(Some(1), 500, 1) > ROW_FREE);
        assert!(page(Some(500), None, 1 + log_read(Some(1), 500, 1)) > 2_000);
        assert!(page(Some(i32::MAX), None, usize::MAX) == usize::MAX);
    }
}
