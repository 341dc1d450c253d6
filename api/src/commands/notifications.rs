//! Notification use cases: a user's notification stream (created once per dedupe key), read,
//! archived and purged.

use agentlog_domain::notifications::{CreateNotification, NotificationCommand, Notifications};
use agentlog_eventlog::{CommandError, EventLogError};

use agentlog_projections::notifications;

use crate::commands::caller::Commands;
use crate::commands::checks::check_id;

use crate::error::ApiError;

/// The most notifications one read / archive request names.
pub const MAX_IDS: usize = 500;

impl Commands<'_> {
    /// Create a notification in its recipient's stream. Answers (position, deduped, the new
    /// notification's id when it has no dedupe key). A dedupe key seen before is "deduped",
    /// whatever the content — upstream's `ON CONFLICT DO NOTHING`.
    pub async fn create_notification(
        &self,
        create: CreateNotification,
    ) -> Result<(i64, bool, Option<String>), ApiError> {
        let user = create.user_id.clone();
        if !self.caller.may_see(&user) {
            return Err(ApiError::Forbidden("only an admin may notify another user".into()));
        }
        let keyed = create.dedupe_key.is_some();
        let ctx = self.context(&user, self.user_actor(), None)?;
        match self.state.handler.execute::<Notifications>(&user, &NotificationCommand::Create(create), &ctx).await {
            Ok(outcome) => {
                let position = outcome.last_position();
                self.state.settle(position).await;
                let id = (!keyed).then(|| ctx.derived_id("notification", 0));
                // An exact repeat of the created event: the log kept the first.
                let deduped = keyed && outcome.appended.iter().any(|a| a.duplicate);
                Ok((if deduped { 0 } else { position }, deduped, id))
            }
            Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) if keyed => Ok((0, true, None)),
            Err(e) => Err(e.into()),
        }
    }

    /// Run a read / archive command on `user`'s notifications. Answers the event's position.
    /// Every id named must be one of `user`'s notifications (an unknown one, or another user's,
    /// is NOT_FOUND) and at most [`MAX_IDS`] are named; otherwise nothing is written.
    pub async fn notification_command(&self, user: &str, command: NotificationCommand) -> Result<i64, ApiError> {
        if let NotificationCommand::MarkRead { ids }
        | NotificationCommand::MarkUnread { ids }
        | NotificationCommand::Archive { ids } = &command
        {
            if ids.is_empty() || ids.len() > MAX_IDS {
                return Err(ApiError::validation("ids", format!("name 1 to {MAX_IDS} notifications")));
            }
            for id in ids {
                check_id("ids", id)?;
                if notifications::notification(&self.state.db, Some(user), id).await?.is_none() {
                    return Err(ApiError::not_found("notification", id));
                }
            }
        }
        let ctx = self.context(user, self.user_actor(), None)?;
        let outcome = self.state.handler.execute::<Notifications>(user, &command, &ctx).await?;
        let position = outcome.last_position();
        self.state.settle(position).await;
        Ok(position)
    }
}
