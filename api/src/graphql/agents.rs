//! Agents and their config history: the configuration a fleet runs under, and its commands.

use crate::graphql::request::commands;
use agentlog_domain::agents::{Agent, AgentCommand, RegisterAgent};
use agentlog_projections::agents::{self, AgentFilter, AgentRow, AgentVersionRow};
use async_graphql::{ComplexObject, Context, ID, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::global_id::{NodeType, global_id};
use crate::error::{ApiError, GqlResult};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::request::caller;
use crate::graphql::request::node_after;
use crate::graphql::request::reads;
use crate::graphql::wire::check_nested;
use crate::graphql::wire::decode;

/// An agent and its current config.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
#[graphql(name = "Agent")]
pub struct AgentNode {
    /// Its id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// Slug.
    pub slug: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// System prompt.
    pub system_role: Option<String>,
    /// Plugins (tools).
    pub plugins: Vec<String>,
    /// Kind.
    pub kind: String,
    /// Runtime.
    pub runtime: Option<String>,
    /// Capabilities.
    pub capabilities: Option<Vec<String>>,
    /// Built in.
    pub builtin: bool,
    /// Retired.
    pub archived: bool,
    /// Config version (1, 2, …).
    pub version: i64,
    /// Registered.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<AgentRow> for AgentNode {
    fn from(a: AgentRow) -> Self {
        Self {
            global_id: global_id(NodeType::Agent, &a.user_id, &a.id),
            id: a.id,
            user_id: a.user_id,
            slug: a.slug,
            title: a.title,
            description: a.description,
            model: a.model,
            provider: a.provider,
            system_role: a.system_role,
            plugins: a.plugins,
            kind: a.kind,
            runtime: a.runtime,
            capabilities: a.capabilities,
            builtin: a.builtin,
            archived: a.archived,
            version: a.version,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// One version of an agent's config.
#[derive(SimpleObject, Clone)]
pub struct AgentVersion {
    /// 1, 2, …
    pub version: i64,
    /// The whole config at this version.
    pub config: Json<Value>,
    /// Fields changed from the previous version.
    pub changed: Vec<String>,
    /// When.
    pub recorded_at: DateTime<Utc>,
    /// Its event's position.
    pub position: i64,
}

impl From<AgentVersionRow> for AgentVersion {
    fn from(v: AgentVersionRow) -> Self {
        Self {
            version: v.version,
            config: Json(v.config),
            changed: v.changed,
            recorded_at: v.recorded_at,
            position: v.position,
        }
    }
}

#[ComplexObject]
impl AgentNode {
    /// Every config version, oldest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn versions(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, AgentVersion>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = agents::versions(reads(ctx), &self.user_id, &self.id, &request).await?;
        Ok(connection(page, AgentVersion::from))
    }
}

/// Agent `id` of `owner` (the caller's own when `None`) or a built-in, as the caller may see it.
pub(crate) async fn agent_node(ctx: &Context<'_>, owner: Option<&str>, id: &str) -> Result<AgentNode, ApiError> {
    let Some(owner) = caller(ctx)?.namespace(owner) else { return Err(ApiError::not_found("agent", id)) };
    let row = agents::get(reads(ctx), owner, id).await?;
    row.map(AgentNode::from).ok_or_else(|| ApiError::not_found("agent", id))
}

/// Agent queries.
#[derive(Default)]
pub struct AgentsQuery;

#[Object]
impl AgentsQuery {
    /// One agent, `id` among the caller's own and the built-ins (an admin names another owner
    /// with `ownerId`). NOT_FOUND when missing or someone else's.
    async fn agent(&self, ctx: &Context<'_>, id: String, owner_id: Option<String>) -> GqlResult<AgentNode> {
        Ok(agent_node(ctx, owner_id.as_deref(), &id).await?)
    }

    /// Agents: the caller's and the built-ins (upstream's, registered at the first start;
    /// `builtin` true / false lists only those / only the others), archived ones only when
    /// asked for.
    #[allow(clippy::too_many_arguments)] // Relay's four paging arguments and the filters are the GraphQL signature
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn agents(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        #[graphql(default)] include_archived: bool,
        model: Option<String>,
        builtin: Option<bool>,
    ) -> GqlResult<Connection<String, AgentNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let filter = AgentFilter { include_archived, builtin, model };
        let page = agents::list(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, AgentNode::from))
    }
}

/// What an agent mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct AgentPayload {
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
impl AgentPayload {
    /// The agent after the command (read model, settled); read when asked for).
    async fn agent(&self, ctx: &Context<'_>) -> GqlResult<AgentNode> {
        node_after(ctx, self.position, agent_node(ctx, Some(&self.owner), &self.id)).await
    }
}

async fn agent_command(
    ctx: &Context<'_>,
    id: &str,
    owner_id: Option<&str>,
    command: AgentCommand,
) -> GqlResult<AgentPayload> {
    let out = commands(ctx)?.owned_by(owner_id).command::<Agent>(id, command, None, None).await?;
    Ok(AgentPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
}

/// Agent mutations.
#[derive(Default)]
pub struct AgentsMutation;

#[Object]
impl AgentsMutation {
    /// Register an agent (`{agentId, config: {slug, title, description?, model?, provider?,
    /// systemRole?, plugins?, kind?}, builtin?}`; another key, here or in `config`, is refused,
    /// VALIDATION naming it) at config version 1. Upstream's built-in ids
    /// (`inbox`, `group-supervisor`, …) are reserved (CONFLICT); `builtin: true` is admin-only
    /// (FORBIDDEN) and only for those ids. Agent ids are per owner: another user's `agentId` is
    /// no obstacle (CONFLICT only for one the owner already holds); `ownerId` (admin) registers
    /// it for that user.
    async fn register_agent(
        &self,
        ctx: &Context<'_>,
        input: Json<Value>,
        owner_id: Option<String>,
    ) -> GqlResult<AgentPayload> {
        check_nested::<agentlog_domain::agents::AgentConfig>("input", &input.0, "config")?;
        let register: RegisterAgent = decode("input", input)?;
        if register.builtin && !caller(ctx)?.admin {
            return Err(ApiError::Forbidden("only an admin registers a built-in agent".into()).into());
        }
        let id = register.agent_id.clone();
        let out =
            commands(ctx)?.create::<Agent>(&id, AgentCommand::Register(register), owner_id.as_deref(), None).await?;
        Ok(AgentPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
    }

    /// Change an agent's config (a patch of config fields: `{title?, description?, model?,
    /// provider?, systemRole?, plugins?, kind?}`; another key is refused, VALIDATION naming it);
    /// version + 1 when anything changed.
    async fn update_agent_config(
        &self,
        ctx: &Context<'_>,
        id: String,
        patch: Json<Value>,
        #[graphql(
            desc = "Whose agent `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<AgentPayload> {
        agent_command(ctx, &id, owner_id.as_deref(), AgentCommand::UpdateConfig(decode("patch", patch)?)).await
    }

    /// Retire an agent; it can no longer run.
    async fn archive_agent(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose agent `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<AgentPayload> {
        agent_command(ctx, &id, owner_id.as_deref(), AgentCommand::Archive).await
    }
}
