//! Notification: one stream per user (`notification-<userId>`).
//!
//! A user's notification stream grows without end, so deciding needs **no stream state**:
//!
//! - `dedupeKey` is unique per user because the `notification.created` event id *and* the
//!   notification id are derived from `(userId, dedupeKey)` alone: creating the same key twice
//!   appends the same event id, and the log's idempotency makes the second a no-op. (If the
//!   second carries other content, the log reports an id collision; the handler answers it as
//!   "deduped", as upstream's `ON CONFLICT DO NOTHING` returns null.) A notification without a
//!   key gets ids from the command, so it never collides.
//! - read / unread / archive events name ids (or "everything up to now"); the read model
//!   applies them and ignores ids it does not know. The handler appends with expected version
//!   "any".
//!
//! The state is only a counter, kept for snapshots and replay output.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::no_upcasts;
use crate::ids::derived_id;
use crate::scope::Scope;
use crate::streams::StreamKind;

/// Everything needed to create a notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateNotification {
    /// The recipient (the stream's user).
    pub user_id: String,
    /// Coarse group for preferences (`brief`, `hitl`, `budget`, …).
    pub category: String,
    /// The scenario (`brief_error`, `decision_required`, …).
    #[serde(rename = "type")]
    pub notification_type: String,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// Makes creation idempotent per user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_key: Option<String>,
    /// Where clicking leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_url: Option<String>,
    /// Free metadata (`actor`, links to the brief or operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A command to a user's notifications.
#[derive(Debug, Clone, PartialEq)]
pub enum NotificationCommand {
    /// Create one.
    Create(CreateNotification),
    /// Mark these read.
    MarkRead {
        /// Notification ids.
        ids: Vec<String>,
    },
    /// Mark these unread.
    MarkUnread {
        /// Notification ids.
        ids: Vec<String>,
    },
    /// Mark everything so far read.
    MarkAllRead,
    /// Archive these.
    Archive {
        /// Notification ids.
        ids: Vec<String>,
    },
    /// Archive everything so far.
    ArchiveAll,
    /// Remove from the inbox read model every notification archived up to `archived_before`
    /// (the retention clock pass, or the user on demand); the log keeps them.
    PurgeArchived {
        /// Archived at or before this time.
        archived_before: DateTime<Utc>,
    },
}

/// `notification.created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationCreated {
    /// Its id (derived from the dedupe key when there is one).
    pub notification_id: String,
    /// The notification.
    #[serde(flatten)]
    pub notification: CreateNotification,
    /// When.
    pub at: DateTime<Utc>,
}

/// `notification.read`, `notification.unread`, `notification.archived`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationsMarked {
    /// Notification ids.
    pub ids: Vec<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `notification.all_read`, `notification.all_archived`: everything created up to `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllNotificationsMarked {
    /// Applies to notifications created up to this time.
    pub at: DateTime<Utc>,
}

/// `notification.purged`: every notification of the stream's user archived at or before
/// `archivedBefore` leaves the inbox read model (a rebuild removes the same ones: archiving is
/// never undone, so the set is the same at this point of the log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationsPurged {
    /// Archived at or before this time.
    pub archived_before: DateTime<Utc>,
    /// When.
    pub at: DateTime<Utc>,
}

/// The dedupe identity of a keyed notification: the same for every command.
fn dedupe_identity(user_id: &str, dedupe_key: &str) -> String {
    format!("{user_id}\u{0}{dedupe_key}")
}

/// The id a notification with `dedupe_key` for `user_id` gets.
pub fn deduped_notification_id(user_id: &str, dedupe_key: &str) -> String {
    derived_id("notification", &dedupe_identity(user_id, dedupe_key), 0).to_string()
}

fn notification_idempotency_key(event: &NotificationEvent) -> Option<String> {
    match event {
        NotificationEvent::Created(e) => e
            .notification
            .dedupe_key
            .as_deref()
            .map(|key| dedupe_identity(&e.notification.user_id, key)),
        _ => None,
    }
}

crate::domain_events! {
    /// Everything a user's notification stream records.
    pub enum NotificationEvent (upcast = no_upcasts, key = notification_idempotency_key) {
        /// Created.
        Created(NotificationCreated) = "notification.created" v 1,
        /// Marked read.
        Read(NotificationsMarked) = "notification.read" v 1,
        /// Marked unread.
        Unread(NotificationsMarked) = "notification.unread" v 1,
        /// Everything so far marked read.
        AllRead(AllNotificationsMarked) = "notification.all_read" v 1,
        /// Archived.
        Archived(NotificationsMarked) = "notification.archived" v 1,
        /// Everything so far archived.
        AllArchived(AllNotificationsMarked) = "notification.all_archived" v 1,
        /// Archived ones removed from the inbox read model.
        Purged(NotificationsPurged) = "notification.purged" v 1,
    }
}

/// A user's notification stream: only counters; decisions never need more.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notifications {
    /// The user (empty before the first notification).
    pub user_id: String,
    /// Notifications created.
    pub created: u64,
}

fn check_ids(ids: &[String]) -> Result<(), DomainError> {
    if ids.is_empty() || ids.iter().any(|i| i.trim().is_empty()) {
        return Err(DomainError::validation("ids", "name at least one notification"));
    }
    Ok(())
}

impl Aggregate for Notifications {
    type Command = NotificationCommand;
    type Event = NotificationEvent;
    const KIND: StreamKind = StreamKind::Notification;

    fn decide(
        &self,
        command: &NotificationCommand,
        ctx: &Context,
    ) -> Result<Vec<NotificationEvent>, DomainError> {
        use NotificationCommand as C;
        use NotificationEvent as E;
        let at = ctx.now;
        match command {
            C::Create(n) => {
                for (field, value) in [
                    ("userId", &n.user_id),
                    ("category", &n.category),
                    ("type", &n.notification_type),
                    ("title", &n.title),
                ] {
                    if value.trim().is_empty() {
                        return Err(DomainError::validation(field, "must not be empty"));
                    }
                }
                if n.dedupe_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
                    return Err(DomainError::validation(
                        "dedupeKey",
                        "must not be empty (leave it out instead)",
                    ));
                }
                if n.action_url.as_deref().is_some_and(|u| !crate::values::is_safe_link(u)) {
                    return Err(DomainError::validation(
                        "actionUrl",
                        "must be an http(s) or relative url",
                    ));
                }
                let notification_id = match &n.dedupe_key {
                    Some(key) => deduped_notification_id(&n.user_id, key),
                    None => ctx.derived_id("notification", 0),
                };
                Ok(vec![E::Created(NotificationCreated {
                    notification_id,
                    notification: n.clone(),
                    at,
                })])
            }
            C::MarkRead { ids } => {
                check_ids(ids).map(|()| vec![E::Read(NotificationsMarked { ids: ids.clone(), at })])
            }
            C::MarkUnread { ids } => check_ids(ids)
                .map(|()| vec![E::Unread(NotificationsMarked { ids: ids.clone(), at })]),
            C::Archive { ids } => check_ids(ids)
                .map(|()| vec![E::Archived(NotificationsMarked { ids: ids.clone(), at })]),
            C::MarkAllRead => Ok(vec![E::AllRead(AllNotificationsMarked { at })]),
            C::ArchiveAll => Ok(vec![E::AllArchived(AllNotificationsMarked { at })]),
            C::PurgeArchived { archived_before } => {
                if *archived_before > at {
                    return Err(DomainError::validation(
                        "archivedBefore",
                        "must not be in the future",
                    ));
                }
                Ok(vec![E::Purged(NotificationsPurged { archived_before: *archived_before, at })])
            }
        }
    }

    fn evolve(mut self, event: &NotificationEvent) -> Self {
        if let NotificationEvent::Created(e) = event {
            self.user_id = e.notification.user_id.clone();
            self.created += 1;
        }
        self
    }

    fn scope(&self) -> Scope {
        Scope {
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }
}

#[cfg(test)]
mod tests;
