//! What the fields that read the log, replay a stream or parse a tree cost in the complexity
//! limit (`ApiLimits::max_complexity`, 2,000 by default; a plain field costs 1). The engine
//! adds these up over the whole document, aliases included, and refuses (LIMIT) a document
//! that passes the limit before anything runs.
//!
//! ```
//! use agentlog_api::graphql::cost;
//! // `history(first: 500) { eventType position }`
//! assert_eq!(cost::log_read(Some(500), 500, 2), cost::LOG_READ + 100);
//! ```

/// A read of the log (`events`, `chain`, `history`), before the events it answers.
pub const LOG_READ: usize = 10;

/// A replay of one stream (`stateAt`: reads and folds the stream up to a position).
pub const REPLAY: usize = 100;

/// A conversation's parsed tree (`tree`, `contextTree`, `flatList`).
pub const TREE: usize = 100;

/// An origin: the creating event and its chain's events, up to 5,000 (`origin`).
pub const ORIGIN: usize = 100;

/// An analytics report (aggregates over finished runs).
pub const ANALYTICS: usize = 100;

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
