//! Notifications: each user's inbox, its unread count, and reading, archiving and purging it.

use crate::graphql::request::commands;
use agentlog_domain::notifications::{CreateNotification, NotificationCommand, deduped_notification_id};
use agentlog_projections::notifications::{self, InboxFilter, NotificationRow};
use async_graphql::{ComplexObject, Context, ID, InputObject, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};

use super::global_id::{NodeType, global_id};
use super::origins::{Origin, origin_at};
use crate::error::{ApiError, GqlResult};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::request::caller;
use crate::graphql::request::reads;

/// A notification in a user's inbox.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
#[graphql(name = "Notification")]
pub struct NotificationNode {
    /// Its id.
    pub notification_id: String,
    /// The recipient.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// `brief`, `hitl`, `budget`, …
    pub category: String,
    /// The scenario (`brief_error`, `decision_required`, …).
    #[graphql(name = "type")]
    pub notification_type: String,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// Makes creation idempotent per user.
    pub dedupe_key: Option<String>,
    /// Where clicking leads.
    pub action_url: Option<String>,
    /// Free metadata.
    pub metadata: Option<Json<serde_json::Value>>,
    /// Read.
    pub is_read: bool,
    /// Archived.
    pub is_archived: bool,
    /// When read.
    pub read_at: Option<DateTime<Utc>>,
    /// When archived.
    pub archived_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    #[graphql(skip)]
    created_position: i64,
}

impl From<NotificationRow> for NotificationNode {
    fn from(n: NotificationRow) -> Self {
        Self {
            global_id: global_id(NodeType::Notification, &n.user_id, &n.notification_id),
            notification_id: n.notification_id,
            user_id: n.user_id,
            category: n.category,
            notification_type: n.notification_type,
            title: n.title,
            body: n.body,
            dedupe_key: n.dedupe_key,
            action_url: n.action_url,
            metadata: n.metadata.map(Json),
            is_read: n.is_read,
            is_archived: n.is_archived,
            read_at: n.read_at,
            archived_at: n.archived_at,
            created_at: n.created_at,
            created_position: n.created_position,
        }
    }
}

/// Which notifications.
#[derive(InputObject, Default)]
pub struct NotificationFilterInput {
    /// Only read (true) or unread (false) ones.
    pub read: Option<bool>,
    /// Only this category.
    pub category: Option<String>,
}

/// One notification of the caller's (NOT_FOUND otherwise).
pub(crate) async fn notification_node(ctx: &Context<'_>, id: &str) -> Result<NotificationNode, ApiError> {
    let row = notifications::notification(reads(ctx), caller(ctx)?.owner(), id).await?;
    row.map(NotificationNode::from).ok_or_else(|| ApiError::not_found("notification", id))
}

/// Notification queries.
#[derive(Default)]
pub struct NotificationsQuery;

#[Object]
impl NotificationsQuery {
    /// The inbox: non-archived notifications, newest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn notifications(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        filter: Option<NotificationFilterInput>,
    ) -> GqlResult<Connection<String, NotificationNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let input = filter.unwrap_or_default();
        let filter = InboxFilter { read: input.read, category: input.category };
        let page = notifications::inbox(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, NotificationNode::from))
    }

    /// One notification. NOT_FOUND when missing or someone else's.
    async fn notification(&self, ctx: &Context<'_>, id: String) -> GqlResult<NotificationNode> {
        Ok(notification_node(ctx, &id).await?)
    }

    /// How many inbox notifications are unread (an admin counts every user's).
    async fn unread_notification_count(&self, ctx: &Context<'_>) -> GqlResult<i64> {
        Ok(notifications::unread_count(reads(ctx), caller(ctx)?.owner()).await?)
    }
}

/// What creating a notification answers.
#[derive(SimpleObject)]
pub struct CreateNotificationPayload {
    /// The notification (for a deduped one: the one kept).
    pub notification: Option<NotificationNode>,
    /// True when a notification with the same `dedupeKey` already existed: nothing was written.
    pub deduped: bool,
    /// Position of the event appended (0 when deduped).
    pub position: i64,
}

/// What a read / archive mutation answers.
#[derive(SimpleObject)]
pub struct InboxPayload {
    /// Inbox notifications still unread, after the command.
    pub unread_count: i64,
    /// Position of the event appended.
    pub position: i64,
}

/// A notification to create.
#[derive(InputObject)]
pub struct CreateNotificationInput {
    /// The recipient (default: the caller; another user: admins only).
    pub user_id: Option<String>,
    /// `brief`, `hitl`, `budget`, …
    pub category: String,
    /// The scenario (`brief_error`, `decision_required`, …).
    #[graphql(name = "type")]
    pub notification_type: String,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// Same key, same user → created once; a repeat answers `deduped`.
    pub dedupe_key: Option<String>,
    /// Where clicking leads.
    pub action_url: Option<String>,
    /// Free metadata.
    pub metadata: Option<Json<serde_json::Value>>,
}

/// Notification mutations.
#[derive(Default)]
pub struct NotificationsMutation;

async fn inbox_command(
    ctx: &Context<'_>,
    user_id: Option<String>,
    command: NotificationCommand,
) -> GqlResult<InboxPayload> {
    let commands = commands(ctx)?;
    let user = commands.owner_for_new(user_id.as_deref())?;
    let position = commands.notification_command(&user, command).await?;
    let unread_count = notifications::unread_count(reads(ctx), Some(&user)).await?;
    Ok(InboxPayload { unread_count, position })
}

#[Object]
impl NotificationsMutation {
    /// Create a notification. With a `dedupeKey` it is created once per user: a repeat (same
    /// or other content) answers `deduped: true` with the notification kept, never CONFLICT.
    async fn create_notification(
        &self,
        ctx: &Context<'_>,
        input: CreateNotificationInput,
    ) -> GqlResult<CreateNotificationPayload> {
        let commands = commands(ctx)?;
        let user = commands.owner_for_new(input.user_id.as_deref())?;
        let dedupe_key = input.dedupe_key.clone();
        let create = CreateNotification {
            user_id: user.clone(),
            category: input.category,
            notification_type: input.notification_type,
            title: input.title,
            body: input.body,
            dedupe_key: input.dedupe_key,
            action_url: input.action_url,
            metadata: input.metadata.map(|m| m.0),
        };
        let (position, deduped, id) = commands.create_notification(create).await?;
        let id = match (&dedupe_key, id) {
            (Some(key), _) => Some(deduped_notification_id(&user, key)),
            (None, id) => id,
        };
        let notification = match id {
            Some(id) => notifications::notification(reads(ctx), Some(&user), &id).await?.map(NotificationNode::from),
            None => None,
        };
        Ok(CreateNotificationPayload { notification, deduped, position })
    }

    /// Mark these notifications read (`userId`: whose inbox; admins only for another user's).
    /// 1 to 500 ids, each one of that inbox's (an unknown id is NOT_FOUND; nothing is written).
    async fn mark_notifications_read(
        &self,
        ctx: &Context<'_>,
        ids: Vec<String>,
        user_id: Option<String>,
    ) -> GqlResult<InboxPayload> {
        inbox_command(ctx, user_id, NotificationCommand::MarkRead { ids }).await
    }

    /// Mark these notifications unread (ids as for `markNotificationsRead`).
    async fn mark_notifications_unread(
        &self,
        ctx: &Context<'_>,
        ids: Vec<String>,
        user_id: Option<String>,
    ) -> GqlResult<InboxPayload> {
        inbox_command(ctx, user_id, NotificationCommand::MarkUnread { ids }).await
    }

    /// Mark every notification so far read.
    async fn mark_all_notifications_read(&self, ctx: &Context<'_>, user_id: Option<String>) -> GqlResult<InboxPayload> {
        inbox_command(ctx, user_id, NotificationCommand::MarkAllRead).await
    }

    /// Archive these notifications (ids as for `markNotificationsRead`).
    async fn archive_notifications(
        &self,
        ctx: &Context<'_>,
        ids: Vec<String>,
        user_id: Option<String>,
    ) -> GqlResult<InboxPayload> {
        inbox_command(ctx, user_id, NotificationCommand::Archive { ids }).await
    }

    /// Archive every notification so far.
    async fn archive_all_notifications(&self, ctx: &Context<'_>, user_id: Option<String>) -> GqlResult<InboxPayload> {
        inbox_command(ctx, user_id, NotificationCommand::ArchiveAll).await
    }

    /// Remove from the inbox read model every notification archived at or before
    /// `archivedBefore` (default: now), as the retention pass does for those archived longer
    /// than the server's retention (30 days unless configured). The log keeps them (`events`);
    /// afterwards `notification(id)` of one is NOT_FOUND. A time in the future is VALIDATION.
    async fn purge_archived_notifications(
        &self,
        ctx: &Context<'_>,
        archived_before: Option<DateTime<Utc>>,
        user_id: Option<String>,
    ) -> GqlResult<InboxPayload> {
        let archived_before = archived_before.unwrap_or_else(Utc::now);
        inbox_command(ctx, user_id, NotificationCommand::PurgeArchived { archived_before }).await
    }
}

#[ComplexObject]
impl NotificationNode {
    /// Why this notification exists, in one request: the `notification.created` event and its
    /// path of causes from the chain's root source (the brief, the failed run, the cron job
    /// that ran out, or a user's call).
    async fn origin(&self, ctx: &Context<'_>) -> GqlResult<Option<Origin>> {
        Ok(origin_at(ctx, self.created_position).await?)
    }
}
