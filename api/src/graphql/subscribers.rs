//! Admission of subscriptions: each open one is counted against its user and the server.

use crate::{error::ApiError, state::AppState};

/// One admitted subscription: counted server-wide and against its user until dropped.
pub struct Subscriber {
    _server: crate::metrics::SubscriberCount,
    _user: crate::quota::QuotaHold,
}

/// Count one more open subscription of `user`, or refuse it (LIMIT) when the user's or the
/// server's cap is reached.
pub fn admit_subscriber(state: &AppState, user: &str) -> Result<Subscriber, ApiError> {
    let per_user = state.limits.max_subscriptions_per_user;
    let user_hold = state.subscriptions.admit(user, per_user).ok_or_else(|| {
        ApiError::Limit(format!("you have {per_user} subscriptions open, the most one user may; close one first"))
    })?;
    let max = state.limits.max_subscriptions;
    let server = crate::metrics::SubscriberCount::admit(state.metrics.clone(), max).ok_or_else(|| {
        ApiError::Limit(format!("the server has {max} subscriptions open, its maximum; subscribe again later"))
    })?;
    Ok(Subscriber { _server: server, _user: user_hold })
}
