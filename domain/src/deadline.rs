//! Deadline arithmetic that saturates instead of panicking: lease ends, card timeouts,
//! heartbeat due times. Inputs are bounded by validation; saturation is the last line.

use chrono::{DateTime, Duration, Utc};

/// The longest span added to a time: 100 years.
const MAX_SECS: i64 = 100 * 365 * 86_400;

/// `at` plus `secs` seconds, saturating at the end of representable time.
pub fn after(at: DateTime<Utc>, secs: u64) -> DateTime<Utc> {
    let secs = i64::try_from(secs).unwrap_or(MAX_SECS).min(MAX_SECS);
    at.checked_add_signed(Duration::seconds(secs)).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Whole milliseconds from `since` to `until`, 0 when `until` is earlier.
pub fn millis_between(since: DateTime<Utc>, until: DateTime<Utc>) -> u64 {
    u64::try_from((until - since).num_milliseconds()).unwrap_or(0)
}
