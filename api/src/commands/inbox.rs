//! Brief and notification use cases: resolving a brief (which may complete its task) and a
//! user's notification stream (created once per dedupe key).

use agentlog_domain::{
    aggregate::Aggregate,
    briefs::Brief,
    notifications::{CreateNotification, NotificationCommand, Notifications},
    rules::brief_resolution,
    tasks::Task,
};
use agentlog_eventlog::{CommandError, EventLogError};

use agentlog_projections::notifications;

use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::commands::checks::check_replay;

/// The most notifications one read / archive request names.
pub const MAX_IDS: usize = 500;
use crate::error::ApiError;

impl Commands<'_> {
    /// Resolve brief `id` with `action`; approving a result brief completes its task in the
    /// same append. Answers the position of the last event appended.
    pub async fn resolve_brief(
        &self,
        id: &str,
        action: &str,
        comment: Option<String>,
        request_id: Option<&str>,
    ) -> Result<i64, ApiError> {
        let loaded = self.load_owned::<Brief>(id).await?;
        let ctx = self.context(&loaded.state.user_id, self.user_actor(), request_id)?;
        let results = self
            .state
            .handler
            .execute_multi(&ctx, || async {
                let h = &self.state.handler;
                let brief = h.load::<Brief>(id).await?;
                let task_id = brief.state.brief.as_ref().and_then(|b| b.task_id.clone());
                let task = match task_id {
                    Some(t) => Some(h.load::<Task>(&t).await?),
                    None => None,
                };
                // A task of another owner is not this brief's to complete.
                let task = task.filter(|t| t.state.user_id == brief.state.user_id);
                let resolution = brief_resolution::resolve_brief(
                    &brief.state,
                    task.as_ref().map(|t| &t.state),
                    action,
                    comment.clone(),
                    &ctx,
                )?;
                let writes = resolution.stamp(&brief.state, task.as_ref().map(|t| &t.state), &ctx);
                Ok(writes
                    .into_iter()
                    .map(|w| {
                        let v = match &task {
                            Some(t) if t.stream_id == w.stream_id => t.version,
                            _ => brief.version,
                        };
                        (w, v)
                    })
                    .collect())
            })
            .await?;
        check_replay(&results, &Brief::stream_id(id))?;
        let position = results.iter().map(|r| r.last_position()).max().unwrap_or(0);
        self.state.settle(position).await;
        Ok(position)
    }

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
