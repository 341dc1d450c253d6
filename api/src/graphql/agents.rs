//! Agents (with their config history), chat groups and cron jobs: the configuration a fleet
//! runs under, and its commands.

use agentlog_domain::agent::{Agent, AgentCommand, RegisterAgent};
use agentlog_domain::cron::{CreateCronJob, CronCommand, CronJob};
use agentlog_domain::group::{Group, GroupCommand, GroupConfig, GroupMember, MemberRole};
use agentlog_projections::{
    agents::{self, AgentFilter, AgentRow, AgentVersionRow},
    cron_jobs::{self, CronJobFilter, CronJobRow},
    groups::{self, GroupFilter, GroupMemberRow, GroupRow},
};
use async_graphql::{ComplexObject, Context, ID, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::node::{NodeType, global_id};
use super::{app, caller, connection, decode, from_wire, json, node_after, page_request};
use crate::{
    commands::{Commands, check_time_zone},
    error::{ApiError, GqlResult},
};

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
    async fn versions(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, AgentVersion>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = agents::versions(&app(ctx).db, caller(ctx)?.owner(), &self.id, &request).await?;
        Ok(connection(page, AgentVersion::from))
    }
}

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
    /// `supervisor` or `member`.
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
        let rows = groups::members(&app(ctx).db, caller(ctx)?.owner(), &self.id).await?;
        Ok(rows.into_iter().map(GroupMemberNode::from).collect())
    }
}

/// A cron job: an agent prompted on a schedule.
#[derive(SimpleObject, Clone)]
#[graphql(name = "CronJob")]
pub struct CronJobNode {
    /// Its id.
    pub job_id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// The agent it prompts.
    pub agent_id: String,
    /// Its group.
    pub group_id: Option<String>,
    /// Name.
    pub name: Option<String>,
    /// 5-field cron pattern.
    pub pattern: String,
    /// IANA time zone of the pattern.
    pub timezone: String,
    /// The prompt.
    pub content: String,
    /// On.
    pub enabled: bool,
    /// Most executions (absent = unlimited).
    pub max_executions: Option<i64>,
    /// Executions left.
    pub remaining_executions: Option<i64>,
    /// When it may run (`{activeDays?, activeHours?, maxExecutionsPerDay?}`: weekdays 0 =
    /// Sunday … 6, hours `{start, end}` with start ≤ hour < end, wrapping past midnight).
    pub conditions: Json<Value>,
    /// Last fire.
    pub last_executed_at: Option<DateTime<Utc>>,
    /// Fires so far.
    pub total_executions: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<CronJobRow> for CronJobNode {
    fn from(j: CronJobRow) -> Self {
        Self {
            global_id: global_id(NodeType::CronJob, &j.user_id, &j.job_id),
            conditions: json(&j.conditions),
            job_id: j.job_id,
            user_id: j.user_id,
            agent_id: j.agent_id,
            group_id: j.group_id,
            name: j.name,
            pattern: j.pattern,
            timezone: j.timezone,
            content: j.content,
            enabled: j.enabled,
            max_executions: j.max_executions,
            remaining_executions: j.remaining_executions,
            last_executed_at: j.last_executed_at,
            total_executions: j.total_executions,
            created_at: j.created_at,
            updated_at: j.updated_at,
        }
    }
}

pub(crate) async fn agent_node(ctx: &Context<'_>, id: &str) -> Result<AgentNode, ApiError> {
    let row = agents::get(&app(ctx).db, caller(ctx)?.owner(), id).await?;
    row.map(AgentNode::from).ok_or_else(|| ApiError::not_found("agent", id))
}

pub(crate) async fn group_node(ctx: &Context<'_>, id: &str) -> Result<GroupNode, ApiError> {
    let row = groups::get(&app(ctx).db, caller(ctx)?.owner(), id).await?;
    row.map(GroupNode::from).ok_or_else(|| ApiError::not_found("group", id))
}

pub(crate) async fn cron_job_node(ctx: &Context<'_>, id: &str) -> Result<CronJobNode, ApiError> {
    let row = cron_jobs::cron_job(&app(ctx).db, caller(ctx)?.owner(), id).await?;
    row.map(CronJobNode::from).ok_or_else(|| ApiError::not_found("cron job", id))
}

/// Agent, group and cron-job queries.
#[derive(Default)]
pub struct AgentsQuery;

#[Object]
impl AgentsQuery {
    /// One agent. NOT_FOUND when missing or someone else's.
    async fn agent(&self, ctx: &Context<'_>, id: String) -> GqlResult<AgentNode> {
        Ok(agent_node(ctx, &id).await?)
    }

    /// Agents: the caller's and the built-ins (upstream's, registered at the first start;
    /// `builtin` true / false lists only those / only the others), archived ones only when
    /// asked for.
    #[allow(clippy::too_many_arguments)] // Relay's four paging arguments and the filters are the GraphQL signature
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
        let page = agents::list(&app(ctx).db, caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, AgentNode::from))
    }

    /// One group. NOT_FOUND when missing or someone else's.
    async fn group(&self, ctx: &Context<'_>, id: String) -> GqlResult<GroupNode> {
        Ok(group_node(ctx, &id).await?)
    }

    /// Groups (deleted ones only when asked for; `memberAgentId`: groups with this member).
    #[allow(clippy::too_many_arguments)] // Relay's four paging arguments and the filters are the GraphQL signature
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
        let page = groups::list(&app(ctx).db, caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, GroupNode::from))
    }

    /// One cron job. NOT_FOUND when missing or someone else's.
    async fn cron_job(&self, ctx: &Context<'_>, id: String) -> GqlResult<CronJobNode> {
        Ok(cron_job_node(ctx, &id).await?)
    }

    /// Cron jobs.
    #[allow(clippy::too_many_arguments)] // Relay's four paging arguments and the filters are the GraphQL signature
    async fn cron_jobs(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        agent_id: Option<String>,
        enabled: Option<bool>,
    ) -> GqlResult<Connection<String, CronJobNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let filter = CronJobFilter { agent_id, enabled };
        let page = cron_jobs::cron_jobs(&app(ctx).db, caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, CronJobNode::from))
    }
}

/// What an agent mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct AgentPayload {
    /// The id it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl AgentPayload {
    /// The agent after the command (read model, settled); read when asked for).
    async fn agent(&self, ctx: &Context<'_>) -> GqlResult<AgentNode> {
        node_after(ctx, self.position, agent_node(ctx, &self.id)).await
    }
}

/// What a group mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct GroupPayload {
    /// The id it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl GroupPayload {
    /// The group after the command (read model, settled); read when asked for).
    async fn group(&self, ctx: &Context<'_>) -> GqlResult<GroupNode> {
        node_after(ctx, self.position, group_node(ctx, &self.id)).await
    }
}

/// What a cron-job mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct CronJobPayload {
    /// The job it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl CronJobPayload {
    /// The job after the command (read model, settled; read when asked for; absent once
    /// deleted).
    async fn cron_job(&self, ctx: &Context<'_>) -> GqlResult<Option<CronJobNode>> {
        let row = cron_jobs::cron_job(&app(ctx).db, caller(ctx)?.owner(), &self.id).await?;
        let reached = app(ctx).runner.position();
        match row {
            Some(row) => Ok(Some(CronJobNode::from(row))),
            // Not there yet, not deleted: the read models are behind the command.
            None if reached < self.position => Err(ApiError::Behind { position: self.position, reached }.into()),
            None => Ok(None),
        }
    }
}

async fn agent_command(ctx: &Context<'_>, id: &str, command: AgentCommand) -> GqlResult<AgentPayload> {
    let out = Commands::new(app(ctx), caller(ctx)?).command::<Agent>(id, command, None, None).await?;
    Ok(AgentPayload { id: id.to_string(), position: out.position })
}

async fn group_command(ctx: &Context<'_>, id: &str, command: GroupCommand) -> GqlResult<GroupPayload> {
    let out = Commands::new(app(ctx), caller(ctx)?).command::<Group>(id, command, None, None).await?;
    Ok(GroupPayload { id: id.to_string(), position: out.position })
}

async fn cron_command(ctx: &Context<'_>, id: &str, command: CronCommand) -> GqlResult<CronJobPayload> {
    let out = Commands::new(app(ctx), caller(ctx)?).command::<CronJob>(id, command, None, None).await?;
    Ok(CronJobPayload { id: id.to_string(), position: out.position })
}

fn non_negative_u32(field: &str, v: Option<i32>) -> Result<Option<u32>, ApiError> {
    v.map(|n| u32::try_from(n).map_err(|_| ApiError::validation(field, "must not be negative"))).transpose()
}

/// Agent, group and cron-job mutations.
#[derive(Default)]
pub struct AgentsMutation;

#[Object]
impl AgentsMutation {
    /// Register an agent (`{agentId, config: {slug, title, description?, model?, provider?,
    /// systemRole?, plugins?, …}, builtin?}`) at config version 1. Upstream's built-in ids
    /// (`inbox`, `group-supervisor`, …) are reserved (CONFLICT); `builtin: true` is admin-only
    /// (FORBIDDEN) and only for those ids.
    async fn register_agent(
        &self,
        ctx: &Context<'_>,
        input: Json<Value>,
        owner_id: Option<String>,
    ) -> GqlResult<AgentPayload> {
        let register: RegisterAgent = decode("input", input)?;
        if register.builtin && !caller(ctx)?.admin {
            return Err(ApiError::Forbidden("only an admin registers a built-in agent".into()).into());
        }
        let id = register.agent_id.clone();
        let out = Commands::new(app(ctx), caller(ctx)?)
            .create::<Agent>(&id, AgentCommand::Register(register), owner_id.as_deref(), None)
            .await?;
        Ok(AgentPayload { id: id.to_string(), position: out.position })
    }

    /// Change an agent's config (a patch of config fields); version + 1 when anything changed.
    async fn update_agent_config(&self, ctx: &Context<'_>, id: String, patch: Json<Value>) -> GqlResult<AgentPayload> {
        agent_command(ctx, &id, AgentCommand::UpdateConfig(decode("patch", patch)?)).await
    }

    /// Retire an agent; it can no longer run.
    async fn archive_agent(&self, ctx: &Context<'_>, id: String) -> GqlResult<AgentPayload> {
        agent_command(ctx, &id, AgentCommand::Archive).await
    }

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
    ) -> GqlResult<GroupPayload> {
        let position = Commands::new(app(ctx), caller(ctx)?)
            .start_group_run(&group_id, &operation_id, instruction, request_id.as_deref())
            .await?;
        Ok(GroupPayload { id: group_id.to_string(), position })
    }

    /// Create a group (`config` `{maxRounds, systemPrompt?, …}`; `members` `[{agentId, role,
    /// enabled, order}]`).
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
        let out =
            Commands::new(app(ctx), caller(ctx)?).create::<Group>(&id, command, owner_id.as_deref(), None).await?;
        Ok(GroupPayload { id: id.to_string(), position: out.position })
    }

    /// Replace a group's config.
    async fn update_group_config(&self, ctx: &Context<'_>, id: String, config: Json<Value>) -> GqlResult<GroupPayload> {
        group_command(ctx, &id, GroupCommand::UpdateConfig(decode("config", config)?)).await
    }

    /// Add a member (`role` `participant` (default) or `supervisor`, at most one supervisor).
    async fn add_group_member(
        &self,
        ctx: &Context<'_>,
        id: String,
        agent_id: String,
        role: Option<String>,
        #[graphql(default = true)] enabled: bool,
        order: Option<i32>,
    ) -> GqlResult<GroupPayload> {
        let role: MemberRole = from_wire("role", role.as_deref().unwrap_or("participant"))?;
        group_command(ctx, &id, GroupCommand::AddMember { agent_id, role, enabled, order }).await
    }

    /// Change a member's role (`participant` or `supervisor`), enabled flag or order.
    async fn update_group_member(
        &self,
        ctx: &Context<'_>,
        id: String,
        agent_id: String,
        role: Option<String>,
        enabled: Option<bool>,
        order: Option<i32>,
    ) -> GqlResult<GroupPayload> {
        let role = role.as_deref().map(|r| from_wire::<MemberRole>("role", r)).transpose()?;
        group_command(ctx, &id, GroupCommand::UpdateMember { agent_id, role, enabled, order }).await
    }

    /// Remove a member.
    async fn remove_group_member(&self, ctx: &Context<'_>, id: String, agent_id: String) -> GqlResult<GroupPayload> {
        group_command(ctx, &id, GroupCommand::RemoveMember { agent_id }).await
    }

    /// Delete a group.
    async fn delete_group(&self, ctx: &Context<'_>, id: String) -> GqlResult<GroupPayload> {
        group_command(ctx, &id, GroupCommand::Delete).await
    }

    /// Create a cron job (`{jobId, agentId, groupId?, name?, pattern, timezone, content,
    /// enabled, maxExecutions?, conditions?}`; `timezone` an IANA zone, `conditions`
    /// `{activeDays?, activeHours?, maxExecutionsPerDay?}`; anything else is VALIDATION).
    async fn create_cron_job(
        &self,
        ctx: &Context<'_>,
        input: Json<Value>,
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        let create: CreateCronJob = decode("input", input)?;
        check_time_zone("input.timezone", &create.timezone)?;
        let id = create.job_id.clone();
        let out = Commands::new(app(ctx), caller(ctx)?)
            .create::<CronJob>(&id, CronCommand::Create(create), owner_id.as_deref(), None)
            .await?;
        Ok(CronJobPayload { id: id.to_string(), position: out.position })
    }

    /// Change a cron job (`{name?, pattern?, timezone?, content?, conditions?, …}`).
    async fn update_cron_job(&self, ctx: &Context<'_>, id: String, patch: Json<Value>) -> GqlResult<CronJobPayload> {
        let patch: agentlog_domain::cron::CronJobPatch = decode("patch", patch)?;
        if let Some(zone) = &patch.timezone {
            check_time_zone("patch.timezone", zone)?;
        }
        cron_command(ctx, &id, CronCommand::Update(patch)).await
    }

    /// Turn a cron job on.
    async fn enable_cron_job(&self, ctx: &Context<'_>, id: String) -> GqlResult<CronJobPayload> {
        cron_command(ctx, &id, CronCommand::Enable).await
    }

    /// Turn a cron job off.
    async fn disable_cron_job(&self, ctx: &Context<'_>, id: String) -> GqlResult<CronJobPayload> {
        cron_command(ctx, &id, CronCommand::Disable).await
    }

    /// Re-enable and restore the counters; `maxExecutions` replaces the max when given
    /// (`keepMax: true` keeps the old one).
    async fn reset_cron_job_executions(
        &self,
        ctx: &Context<'_>,
        id: String,
        max_executions: Option<i32>,
        #[graphql(default)] keep_max: bool,
    ) -> GqlResult<CronJobPayload> {
        let max = non_negative_u32("maxExecutions", max_executions)?;
        let max_executions = if keep_max { None } else { Some(max) };
        cron_command(ctx, &id, CronCommand::ResetExecutions { max_executions }).await
    }

    /// Delete a cron job.
    async fn delete_cron_job(&self, ctx: &Context<'_>, id: String) -> GqlResult<CronJobPayload> {
        cron_command(ctx, &id, CronCommand::Delete).await
    }
}
