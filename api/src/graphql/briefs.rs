//! Briefs: short reports a human reads and acts on (approve, comment, …), and their commands.

use crate::graphql::request::commands;
use agentlog_domain::briefs::{Brief, BriefCommand, BriefPriority, BriefType, CreateBrief};
use agentlog_projections::briefs::{self, BriefFilter, BriefRow};
use async_graphql::{ComplexObject, Context, ID, InputObject, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};

use super::global_id::{NodeType, global_id};
use super::origins::{Origin, origin};
use crate::error::{ApiError, GqlResult};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::request::node_after;
use crate::graphql::request::reads;
use crate::graphql::wire::check_nested;
use crate::graphql::wire::decode;
use crate::graphql::wire::from_wire;
use crate::graphql::wire::json;
use crate::graphql::wire::wire;

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

/// Brief queries.
#[derive(Default)]
pub struct BriefsQuery;

/// Brief `brief_id` of `owner` (the caller's own when `None`), as the caller may see it.
pub(crate) async fn brief_node(ctx: &Context<'_>, owner: Option<&str>, brief_id: &str) -> Result<BriefNode, ApiError> {
    let Some(owner) = caller(ctx)?.namespace(owner) else { return Err(ApiError::not_found("brief", brief_id)) };
    let row = briefs::brief(reads(ctx), owner, brief_id).await?;
    row.map(BriefNode::from).ok_or_else(|| ApiError::not_found("brief", brief_id))
}

#[Object]
impl BriefsQuery {
    /// One brief, `id` among the caller's own (an admin names another owner with `ownerId`).
    /// NOT_FOUND when missing or someone else's.
    async fn brief(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(desc = "Whose brief `id` is: an admin reading another user's names them; absent: the caller's own.")]
        owner_id: Option<String>,
    ) -> GqlResult<BriefNode> {
        Ok(brief_node(ctx, owner_id.as_deref(), &id).await?)
    }

    /// Briefs, newest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
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
        let page = briefs::briefs(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, BriefNode::from))
    }
}

/// What a brief mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct BriefPayload {
    /// The id it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Its owner.
    #[graphql(skip)]
    pub(crate) owner: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl BriefPayload {
    /// The brief after the command (read model, settled); read when asked for).
    async fn brief(&self, ctx: &Context<'_>) -> GqlResult<BriefNode> {
        node_after(ctx, self.position, brief_node(ctx, Some(&self.owner), &self.id)).await
    }
}

/// Brief mutations.
#[derive(Default)]
pub struct BriefsMutation;

async fn brief_command(
    ctx: &Context<'_>,
    id: &str,
    owner_id: Option<&str>,
    command: BriefCommand,
    request_id: Option<String>,
) -> GqlResult<BriefPayload> {
    let out = commands(ctx)?.owned_by(owner_id).command::<Brief>(id, command, None, request_id.as_deref()).await?;
    Ok(BriefPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
}

#[Object]
impl BriefsMutation {
    /// Create a brief (`{briefId, type, priority?, title, summary, taskId?, topicId?,
    /// operationId?, cronJobId?, agentId?, actions?, documents?, trigger?, errorCode?,
    /// metadata?}`); without `actions` the type's defaults apply. Brief ids are per owner:
    /// another user's `briefId` is no obstacle (CONFLICT only for one the owner already holds);
    /// `ownerId` (admin) creates it for that user. `taskId` names a task of the brief's owner.
    /// A key it does not read, here or in `actions` or `documents`, is refused (VALIDATION
    /// naming it).
    async fn create_brief(
        &self,
        ctx: &Context<'_>,
        input: Json<serde_json::Value>,
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<BriefPayload> {
        check_nested::<Vec<agentlog_domain::briefs::BriefAction>>("input", &input.0, "actions")?;
        check_nested::<Vec<agentlog_domain::briefs::BriefDocument>>("input", &input.0, "documents")?;
        let create: CreateBrief = decode("input", input)?;
        let id = create.brief_id.clone();
        let out = commands(ctx)?
            .create::<Brief>(&id, BriefCommand::Create(create), owner_id.as_deref(), request_id.as_deref())
            .await?;
        Ok(BriefPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
    }

    /// The human saw the brief.
    async fn mark_brief_read(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose brief `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<BriefPayload> {
        brief_command(ctx, &id, owner_id.as_deref(), BriefCommand::MarkRead, None).await
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
        #[graphql(
            desc = "Whose brief `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<BriefPayload> {
        let (owner, position) = commands(ctx)?
            .owned_by(owner_id.as_deref())
            .resolve_brief(&id, &action, comment, request_id.as_deref())
            .await?;
        Ok(BriefPayload { id: id.to_string(), owner, position })
    }
}

#[ComplexObject]
impl BriefNode {
    /// Why this brief exists, in one request: the event that created it and its path of
    /// causes from the chain's root source (a failed run, a finished topic, a user's call).
    async fn origin(&self, ctx: &Context<'_>) -> GqlResult<Option<Origin>> {
        let stream =
            app(ctx).handler.stream_of::<Brief>(&self.user_id, &self.brief_id).await.map_err(ApiError::from)?;
        Ok(origin(ctx, &stream).await?)
    }
}
