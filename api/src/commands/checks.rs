//! Checks of what a client sends that the domain cannot make (it has no zone database and does
//! not see the log's answers): ids, time zones, a reused `requestId`.

use agentlog_eventlog::AppendResult;

use crate::error::ApiError;

/// A resent request (same `requestId`) is answered with what its first attempt wrote; the
/// answer must be about the same target. A `requestId` reused for a request on another
/// aggregate (`stream_id` not among the earlier writes) is refused rather than answered with
/// the other request's result.
pub fn check_replay(results: &[AppendResult], stream_id: &str) -> Result<(), ApiError> {
    if is_replay(results) && !results.iter().any(|r| r.stream_id == stream_id) {
        return Err(ApiError::validation("requestId", "was already used for a different request"));
    }
    Ok(())
}

/// True when a decision's appends are an earlier attempt's, found in the log (nothing new).
pub fn is_replay(results: &[AppendResult]) -> bool {
    !results.is_empty() && results.iter().all(|r| r.duplicate)
}

/// Check a time zone given by a client: an IANA zone name (`Europe/Berlin`, `UTC`), which the
/// scheduler can match patterns in. (The domain has no zone database; this is the server's
/// fact about the name.)
pub fn check_time_zone(field: &str, zone: &str) -> Result<(), ApiError> {
    match zone.parse::<chrono_tz::Tz>() {
        Ok(_) => Ok(()),
        Err(_) => Err(ApiError::validation(
            field,
            format!("'{}' is not an IANA time zone", zone.chars().take(64).collect::<String>()),
        )),
    }
}

/// Check an id given by a client.
pub fn check_id(field: &str, id: &str) -> Result<(), ApiError> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(ApiError::validation(field, "must be 1 to 128 characters, no spaces or control characters"));
    }
    Ok(())
}
