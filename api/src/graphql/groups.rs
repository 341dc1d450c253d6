//! Chat groups: a supervisor and its members, their config, and orchestration runs.

use crate::graphql::request::commands;
use agentlog_domain::groups::{Group, GroupCommand, GroupConfig, GroupMember, MemberRole};
use agentlog_projections::groups::{self, GroupFilter, GroupMemberRow, GroupRow};
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
use crate::graphql::wire::decode;
use crate::graphql::wire::from_wire;

/// A chat group: a supervisor and members.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
#[graphql(name = "Group")]
pub struct GroupNode {
    /// Its id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// Title.
    pub title: String,
    /// Config (`{systemPrompt?, openingMessage?, openingQuestions, allowDm?, maxRounds}`).
    pub config: Json<Value>,
    /// Most supervisor rounds per run.
    pub max_rounds: i64,
    /// Members.
    pub member_count: i64,
    /// The supervisor agent.
    pub supervisor_agent_id: Option<String>,
    /// Deleted.
    pub deleted: bool,
    /// Orchestration runs (by supervisor operation).
    pub orchestrations: Json<Value>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<GroupRow> for GroupNode {
    fn from(g: GroupRow) -> Self {
        Self {
            global_id: global_id(NodeType::Group, &g.user_id, &g.id),
            id: g.id,
            user_id: g.user_id,
            title: g.title,
            config: Json(g.config),
            max_rounds: g.max_rounds,
            member_count: g.member_count,
            supervisor_agent_id: g.supervisor_agent_id,
            deleted: g.deleted,
            orchestrations: Json(g.orchestrations),
            created_at: g.created_at,
            updated_at: g.updated_at,
        }
    }
}

/// A member of a group.
#[derive(SimpleObject, Clone)]
#[graphql(name = "GroupMember")]
pub struct GroupMemberNode {
    /// The agent.
    pub agent_id: String,
    /// `supervisor` or `participant`.
    pub role: String,
    /// Takes part.
    pub enabled: bool,
    /// Order.
    pub order: i64,
}

impl From<GroupMemberRow> for GroupMemberNode {
    fn from(m: GroupMemberRow) -> Self {
        Self { agent_id: m.agent_id, role: m.role, enabled: m.enabled, order: m.order }
    }
}

#[ComplexObject]
impl GroupNode {
    /// Members, in order.
    async fn members(&self, ctx: &Context<'_>) -> GqlResult<Vec<GroupMemberNode>> {
        let rows = groups::members(reads(ctx), &self.user_id, &self.id).await?;
        Ok(rows.into_iter().map(GroupMemberNode::from).collect())
    }
}

/// Group `id` of `owner` (the caller's own when `None`), as the caller may see it.
pub(crate) async fn group_node(ctx: &Context<'_>, owner: Option<&str>, id: &str) -> Result<GroupNode, ApiError> {
    let Some(owner) = caller(ctx)?.namespace(owner) else { return Err(ApiError::not_found("group", id)) };
    let row = groups::get(reads(ctx), owner, id).await?;
    row.map(GroupNode::from).ok_or_else(|| ApiError::not_found("group", id))
}

/// Group queries.
#[derive(Default)]
pub struct GroupsQuery;

#[Object]
impl GroupsQuery {
    /// One group, `id` among the caller's own (an admin names another owner with `ownerId`).
    /// NOT_FOUND when missing or someone else's.
    async fn group(&self, ctx: &Context<'_>, id: String, owner_id: Option<String>) -> GqlResult<GroupNode> {
        Ok(group_node(ctx, owner_id.as_deref(), &id).await?)
    }

    /// Groups (deleted ones only when asked for; `memberAgentId`: groups with this member).
    #[allow(clippy::too_many_arguments)] // Relay's four paging arguments and the filters are the GraphQL signature
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn groups(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        #[graphql(default)] include_deleted: bool,
        member_agent_id: Option<String>,
    ) -> GqlResult<Connection<String, GroupNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let filter = GroupFilter { include_deleted, member_agent_id };
        let page = groups::list(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, GroupNode::from))
    }
}

/// What a group mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct GroupPayload {
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
impl GroupPayload {
    /// The group after the command (read model, settled); read when asked for).
    async fn group(&self, ctx: &Context<'_>) -> GqlResult<GroupNode> {
        node_after(ctx, self.position, group_node(ctx, Some(&self.owner), &self.id)).await
    }
}

async fn group_command(
    ctx: &Context<'_>,
    id: &str,
    owner_id: Option<&str>,
    command: GroupCommand,
) -> GqlResult<GroupPayload> {
    let out = commands(ctx)?.owned_by(owner_id).command::<Group>(id, command, None, None).await?;
    Ok(GroupPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
}

/// Group mutations.
#[derive(Default)]
pub struct GroupsMutation;

#[Object]
impl GroupsMutation {
    /// Start a run of a group: its supervisor agent's operation `operationId` (kind group),
    /// told `instruction`. The supervisor's worker claims it like any operation and reports its
    /// decisions as tool calls (`speak`, `broadcast`, `executeAgentTask`, `executeAgentTasks`,
    /// `delegate`, `finish`, with their arguments; `skipCallSupervisor: true` finishes after the
    /// action); the orchestration dispatches the members, wakes the supervisor with their
    /// `asyncResults`, and finishes after the group's `maxRounds`. A group-management tool it
    /// does not carry out (`vote`, `interrupt`, `summarize`, `createWorkflow`, any other
    /// `lobe-group-management/…`) fails the supervisor's run with a VALIDATION error.
    async fn start_group_run(
        &self,
        ctx: &Context<'_>,
        group_id: String,
        operation_id: String,
        instruction: Option<String>,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose group `groupId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        let commands = commands(ctx)?.owned_by(owner_id.as_deref());
        let (owner, position) =
            commands.start_group_run(&group_id, &operation_id, instruction, request_id.as_deref()).await?;
        Ok(GroupPayload { id: group_id.to_string(), owner, position })
    }

    /// Create a group (`config` `{maxRounds, systemPrompt?, …}`; `members` `[{agentId, role,
    /// enabled, order}]`). Group ids are per owner: another user's `id` is no obstacle
    /// (CONFLICT only for one the owner already holds); `ownerId` (admin) creates it for that
    /// user.
    async fn create_group(
        &self,
        ctx: &Context<'_>,
        id: String,
        title: String,
        config: Json<Value>,
        members: Option<Json<Value>>,
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        let config: GroupConfig = decode("config", config)?;
        let members: Vec<GroupMember> = members.map(|m| decode("members", m)).transpose()?.unwrap_or_default();
        let command = GroupCommand::Create { group_id: id.clone(), title, config, members };
        let out = commands(ctx)?.create::<Group>(&id, command, owner_id.as_deref(), None).await?;
        Ok(GroupPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
    }

    /// Replace a group's config.
    async fn update_group_config(
        &self,
        ctx: &Context<'_>,
        id: String,
        config: Json<Value>,
        #[graphql(
            desc = "Whose group `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        group_command(ctx, &id, owner_id.as_deref(), GroupCommand::UpdateConfig(decode("config", config)?)).await
    }

    /// Add a member (`role` `participant` (default) or `supervisor`, at most one supervisor).
    #[allow(clippy::too_many_arguments)] // the member's fields and the owner are the GraphQL signature
    async fn add_group_member(
        &self,
        ctx: &Context<'_>,
        id: String,
        agent_id: String,
        role: Option<String>,
        #[graphql(default = true)] enabled: bool,
        order: Option<i32>,
        #[graphql(
            desc = "Whose group `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        let role: MemberRole = from_wire("role", role.as_deref().unwrap_or("participant"))?;
        group_command(ctx, &id, owner_id.as_deref(), GroupCommand::AddMember { agent_id, role, enabled, order }).await
    }

    /// Change a member's role (`participant` or `supervisor`), enabled flag or order.
    #[allow(clippy::too_many_arguments)] // the member's fields and the owner are the GraphQL signature
    async fn update_group_member(
        &self,
        ctx: &Context<'_>,
        id: String,
        agent_id: String,
        role: Option<String>,
        enabled: Option<bool>,
        order: Option<i32>,
        #[graphql(
            desc = "Whose group `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        let role = role.as_deref().map(|r| from_wire::<MemberRole>("role", r)).transpose()?;
        group_command(ctx, &id, owner_id.as_deref(), GroupCommand::UpdateMember { agent_id, role, enabled, order })
            .await
    }

    /// Remove a member.
    async fn remove_group_member(
        &self,
        ctx: &Context<'_>,
        id: String,
        agent_id: String,
        #[graphql(
            desc = "Whose group `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        group_command(ctx, &id, owner_id.as_deref(), GroupCommand::RemoveMember { agent_id }).await
    }

    /// Delete a group.
    async fn delete_group(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose group `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<GroupPayload> {
        group_command(ctx, &id, owner_id.as_deref(), GroupCommand::Delete).await
    }
}
