//! What a human must look at: briefs (results, decisions, errors) and notifications (the
//! inbox, unread count, read / archive state), with their commands.

use agentlog_domain::aggregate::Aggregate;
use agentlog_domain::brief::{Brief, BriefCommand, BriefPriority, BriefType, CreateBrief};
use agentlog_domain::notification::{CreateNotification, NotificationCommand, deduped_notification_id};
use agentlog_projections::{
    briefs::{self, BriefFilter, BriefRow},
    notifications::{self, InboxFilter, NotificationRow},
};
use async_graphql::{ComplexObject, Context, ID, InputObject, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};

use super::node::{NodeType, global_id};
use super::{app, caller, connection, cost, decode, events::Event, from_wire, json, node_after, page_request, wire};
use crate::{
    commands::Commands,
    error::{ApiError, GqlResult},
};

/// A brief: a short report a human reads and acts on.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
#[graphql(name = "Brief")]
pub struct BriefNode {
    /// Its id.
    pub brief_id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// `result`, `decision`, `error`, `insight`, …
    #[graphql(name = "type")]
    pub brief_type: String,
    /// `urgent`, `normal`, `info`.
    pub priority: String,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// The actions offered (`[{key, label, type, url?}]`).
    pub actions: Json<serde_json::Value>,
    /// Attached documents (`[{id, kind, title}]`).
    pub documents: Json<serde_json::Value>,
    /// Task.
    pub task_id: Option<String>,
    /// Topic.
    pub topic_id: Option<String>,
    /// Operation.
    pub operation_id: Option<String>,
    /// Cron job.
    pub cron_job_id: Option<String>,
    /// Agent.
    pub agent_id: Option<String>,
    /// What produced it.
    pub trigger: Option<String>,
    /// Error code of an error brief.
    pub error_code: Option<String>,
    /// Free metadata.
    pub metadata: Option<Json<serde_json::Value>>,
    /// First read.
    pub read_at: Option<DateTime<Utc>>,
    /// The action chosen.
    pub resolved_action: Option<String>,
    /// The comment given with it.
    pub resolved_comment: Option<String>,
    /// When it was resolved.
    pub resolved_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<BriefRow> for BriefNode {
    fn from(b: BriefRow) -> Self {
        Self {
            global_id: global_id(NodeType::Brief, &b.user_id, &b.brief_id),
            brief_type: wire(&b.brief_type),
            priority: wire(&b.priority),
            actions: json(&b.actions),
            documents: json(&b.documents),
            metadata: b.metadata.map(Json),
            brief_id: b.brief_id,
            user_id: b.user_id,
            title: b.title,
            summary: b.summary,
            task_id: b.task_id,
            topic_id: b.topic_id,
            operation_id: b.operation_id,
            cron_job_id: b.cron_job_id,
            agent_id: b.agent_id,
            trigger: b.trigger,
            error_code: b.error_code,
            read_at: b.read_at,
            resolved_action: b.resolved_action,
            resolved_comment: b.resolved_comment,
            resolved_at: b.resolved_at,
            created_at: b.created_at,
            updated_at: b.updated_at,
        }
    }
}

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

/// Which briefs.
#[derive(InputObject, Default)]
pub struct BriefFilterInput {
    /// Only this type.
    #[graphql(name = "type")]
    pub brief_type: Option<String>,
    /// Only this priority.
    pub priority: Option<String>,
    /// Only resolved (true) or open (false) ones.
    pub resolved: Option<bool>,
    /// Only this task's.
    pub task_id: Option<String>,
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
    let row = notifications::notification(&app(ctx).db, caller(ctx)?.owner(), id).await?;
    row.map(NotificationNode::from).ok_or_else(|| ApiError::not_found("notification", id))
}

/// Brief and notification queries.
#[derive(Default)]
pub struct InboxQuery;

pub(crate) async fn brief_node(ctx: &Context<'_>, brief_id: &str) -> Result<BriefNode, ApiError> {
    let row = briefs::brief(&app(ctx).db, caller(ctx)?.owner(), brief_id).await?;
    row.map(BriefNode::from).ok_or_else(|| ApiError::not_found("brief", brief_id))
}

#[Object]
impl InboxQuery {
    /// One brief. NOT_FOUND when missing or someone else's.
    async fn brief(&self, ctx: &Context<'_>, id: String) -> GqlResult<BriefNode> {
        Ok(brief_node(ctx, &id).await?)
    }

    /// Briefs, newest first.
    async fn briefs(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        filter: Option<BriefFilterInput>,
    ) -> GqlResult<Connection<String, BriefNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let input = filter.unwrap_or_default();
        let filter = BriefFilter {
            brief_type: input.brief_type.as_deref().map(|t| from_wire::<BriefType>("filter.type", t)).transpose()?,
            priority: input
                .priority
                .as_deref()
                .map(|p| from_wire::<BriefPriority>("filter.priority", p))
                .transpose()?,
            resolved: input.resolved,
            task_id: input.task_id,
        };
        let page = briefs::briefs(&app(ctx).db, caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, BriefNode::from))
    }

    /// The inbox: non-archived notifications, newest first.
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
        let page = notifications::inbox(&app(ctx).db, caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, NotificationNode::from))
    }

    /// One notification. NOT_FOUND when missing or someone else's.
    async fn notification(&self, ctx: &Context<'_>, id: String) -> GqlResult<NotificationNode> {
        Ok(notification_node(ctx, &id).await?)
    }

    /// How many inbox notifications are unread (an admin counts every user's).
    async fn unread_notification_count(&self, ctx: &Context<'_>) -> GqlResult<i64> {
        Ok(notifications::unread_count(&app(ctx).db, caller(ctx)?.owner()).await?)
    }
}

/// What a brief mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct BriefPayload {
    /// The id it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl BriefPayload {
    /// The brief after the command (read model, settled); read when asked for).
    async fn brief(&self, ctx: &Context<'_>) -> GqlResult<BriefNode> {
        node_after(ctx, self.position, brief_node(ctx, &self.id)).await
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

/// Brief and notification mutations.
#[derive(Default)]
pub struct InboxMutation;

async fn brief_command(
    ctx: &Context<'_>,
    id: &str,
    command: BriefCommand,
    request_id: Option<String>,
) -> GqlResult<BriefPayload> {
    let out = Commands::new(app(ctx), caller(ctx)?).command::<Brief>(id, command, None, request_id.as_deref()).await?;
    Ok(BriefPayload { id: id.to_string(), position: out.position })
}

async fn inbox_command(
    ctx: &Context<'_>,
    user_id: Option<String>,
    command: NotificationCommand,
) -> GqlResult<InboxPayload> {
    let commands = Commands::new(app(ctx), caller(ctx)?);
    let user = commands.owner_for_new(user_id.as_deref())?;
    let position = commands.notification_command(&user, command).await?;
    let unread_count = notifications::unread_count(&app(ctx).db, Some(&user)).await?;
    Ok(InboxPayload { unread_count, position })
}

#[Object]
impl InboxMutation {
    /// Create a brief (`{briefId, type, priority?, title, summary, taskId?, topicId?,
    /// operationId?, cronJobId?, agentId?, actions?, documents?, trigger?, errorCode?,
    /// metadata?}`); without `actions` the type's defaults apply.
    async fn create_brief(
        &self,
        ctx: &Context<'_>,
        input: Json<serde_json::Value>,
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<BriefPayload> {
        let create: CreateBrief = decode("input", input)?;
        let id = create.brief_id.clone();
        let out = Commands::new(app(ctx), caller(ctx)?)
            .create::<Brief>(&id, BriefCommand::Create(create), owner_id.as_deref(), request_id.as_deref())
            .await?;
        Ok(BriefPayload { id: id.to_string(), position: out.position })
    }

    /// The human saw the brief.
    async fn mark_brief_read(&self, ctx: &Context<'_>, id: String) -> GqlResult<BriefPayload> {
        brief_command(ctx, &id, BriefCommand::MarkRead, None).await
    }

    /// The human chose one of the brief's actions (once). Approving a result brief completes
    /// its task.
    async fn resolve_brief(
        &self,
        ctx: &Context<'_>,
        id: String,
        action: String,
        comment: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<BriefPayload> {
        let position =
            Commands::new(app(ctx), caller(ctx)?).resolve_brief(&id, &action, comment, request_id.as_deref()).await?;
        Ok(BriefPayload { id: id.to_string(), position })
    }

    /// Create a notification. With a `dedupeKey` it is created once per user: a repeat (same
    /// or other content) answers `deduped: true` with the notification kept, never CONFLICT.
    async fn create_notification(
        &self,
        ctx: &Context<'_>,
        input: CreateNotificationInput,
    ) -> GqlResult<CreateNotificationPayload> {
        let commands = Commands::new(app(ctx), caller(ctx)?);
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
            Some(id) => notifications::notification(&app(ctx).db, Some(&user), &id).await?.map(NotificationNode::from),
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

/// Why something exists: the event that created it and the causes that led to it.
#[derive(SimpleObject)]
pub struct Origin {
    /// The event that created it.
    pub event: Event,
    /// Its causes, from the chain's root source to the event that created it (both included),
    /// following each event's `parentNodeId`.
    pub path: Vec<Event>,
}

/// The most events of one chain read to explain an origin.
const MAX_CHAIN_EVENTS: usize = 5_000;

/// The origin of the aggregate whose stream is `stream_id`: its first event and that event's
/// path of causes back to its chain's root.
pub async fn origin(ctx: &Context<'_>, stream_id: &str) -> Result<Option<Origin>, ApiError> {
    let first = app(ctx).store.read_stream(stream_id, 1, 1).await?.into_iter().next();
    origin_of(ctx, first).await
}

/// The origin of what the event at `position` created (a notification: its stream holds many).
pub async fn origin_at(ctx: &Context<'_>, position: i64) -> Result<Option<Origin>, ApiError> {
    if position < 1 {
        return Ok(None);
    }
    let filter = agentlog_eventlog::EventFilter::default();
    let event = app(ctx).store.read_all(position - 1, &filter, 1).await?.into_iter().next();
    origin_of(ctx, event.filter(|e| e.position == position)).await
}

/// `first` (when the caller may see it) and its path of causes back to its chain's root.
async fn origin_of(
    ctx: &Context<'_>,
    first: Option<agentlog_domain::envelope::RecordedEvent>,
) -> Result<Option<Origin>, ApiError> {
    let store = &app(ctx).store;
    let Some(first) = first else { return Ok(None) };
    let who = caller(ctx)?;
    if !who.may_see(&first.metadata.user_id) {
        return Ok(None);
    }
    let filter = agentlog_eventlog::EventFilter {
        root_source_id: Some(first.metadata.chain.root_source_id),
        ..Default::default()
    };
    let chain = store.read_all(0, &filter, MAX_CHAIN_EVENTS).await?;
    let by_id: std::collections::HashMap<uuid::Uuid, &agentlog_domain::envelope::RecordedEvent> =
        chain.iter().map(|e| (e.event_id, e)).collect();
    let mut path = vec![first.clone()];
    let mut at = first.metadata.chain.parent_node_id;
    while let Some(id) = at {
        let Some(parent) = by_id.get(&id) else { break };
        if path.len() > MAX_CHAIN_EVENTS {
            break;
        }
        path.push((*parent).clone());
        at = parent.metadata.chain.parent_node_id;
    }
    path.reverse();
    Ok(Some(Origin { event: Event::from(first), path: path.into_iter().map(Event::from).collect() }))
}

#[ComplexObject]
impl BriefNode {
    /// Why this brief exists, in one request: the event that created it and its path of
    /// causes from the chain's root source (a failed run, a finished topic, a user's call).
    #[graphql(complexity = "cost::once(cost::ORIGIN, child_complexity)")]
    async fn origin(&self, ctx: &Context<'_>) -> GqlResult<Option<Origin>> {
        Ok(origin(ctx, &Brief::stream_id(&self.brief_id)).await?)
    }
}

#[ComplexObject]
impl NotificationNode {
    /// Why this notification exists, in one request: the `notification.created` event and its
    /// path of causes from the chain's root source (the brief, the failed run, the cron job
    /// that ran out, or a user's call).
    #[graphql(complexity = "cost::once(cost::ORIGIN, child_complexity)")]
    async fn origin(&self, ctx: &Context<'_>) -> GqlResult<Option<Origin>> {
        Ok(origin_at(ctx, self.created_position).await?)
    }
}
