//! Cron jobs: an agent prompted on a schedule, in a time zone, under conditions.

use crate::graphql::request::commands;
use agentlog_domain::cron_jobs::{CreateCronJob, CronCommand, CronJob, next_fire_at};
use agentlog_projections::cron_jobs::{self, CronJobFilter, CronJobRow};
use async_graphql::{ComplexObject, Context, ID, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::global_id::{NodeType, global_id};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::request::reads;
use crate::graphql::wire::decode;
use crate::graphql::wire::json;
use crate::{
    commands::check_time_zone,
    error::{ApiError, GqlResult},
};

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
    /// When it fires next, after the moment of the read: its pattern in its time zone (a
    /// daylight-saving gap skipped, a repeated hour fired once) under its conditions; absent
    /// while disabled or used up, or when nothing matches within a year.
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Fires so far.
    pub total_executions: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// When the job fires next after `now` (`cron_jobs::next_fire_at`, in its zone).
fn next_fire(j: &CronJobRow, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let zone = j.timezone.parse::<chrono_tz::Tz>().ok()?;
    let today = now.with_timezone(&zone).date_naive().to_string();
    next_fire_at(&j.to_domain(), &zone, now, j.fires_on(&today))
}

impl From<CronJobRow> for CronJobNode {
    fn from(j: CronJobRow) -> Self {
        Self {
            next_fire_at: next_fire(&j, Utc::now()),
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

/// Cron job `id` of `owner` (the caller's own when `None`), as the caller may see it.
pub(crate) async fn cron_job_node(ctx: &Context<'_>, owner: Option<&str>, id: &str) -> Result<CronJobNode, ApiError> {
    let Some(owner) = caller(ctx)?.namespace(owner) else { return Err(ApiError::not_found("cron job", id)) };
    let row = cron_jobs::cron_job(reads(ctx), owner, id).await?;
    row.map(CronJobNode::from).ok_or_else(|| ApiError::not_found("cron job", id))
}

/// Cron-job queries.
#[derive(Default)]
pub struct CronJobsQuery;

#[Object]
impl CronJobsQuery {
    /// One cron job, `id` among the caller's own (an admin names another owner with
    /// `ownerId`). NOT_FOUND when missing or someone else's.
    async fn cron_job(&self, ctx: &Context<'_>, id: String, owner_id: Option<String>) -> GqlResult<CronJobNode> {
        Ok(cron_job_node(ctx, owner_id.as_deref(), &id).await?)
    }

    /// Cron jobs.
    #[allow(clippy::too_many_arguments)] // Relay's four paging arguments and the filters are the GraphQL signature
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
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
        let page = cron_jobs::cron_jobs(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, CronJobNode::from))
    }
}

/// What a cron-job mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct CronJobPayload {
    /// The job it answers for.
    #[graphql(skip)]
    pub(crate) id: String,
    /// Its owner.
    #[graphql(skip)]
    pub(crate) owner: String,
    /// Position of the last event appended (0 when nothing changed).
    pub position: i64,
}

#[ComplexObject]
impl CronJobPayload {
    /// The job after the command (read model, settled; read when asked for; absent once
    /// deleted).
    async fn cron_job(&self, ctx: &Context<'_>) -> GqlResult<Option<CronJobNode>> {
        let row = cron_jobs::cron_job(reads(ctx), &self.owner, &self.id).await?;
        let reached = app(ctx).runner.position();
        match row {
            Some(row) => Ok(Some(CronJobNode::from(row))),
            // Not there yet, not deleted: the read models are behind the command.
            None if reached < self.position => Err(ApiError::Behind { position: self.position, reached }.into()),
            None => Ok(None),
        }
    }
}

async fn cron_command(
    ctx: &Context<'_>,
    id: &str,
    owner_id: Option<&str>,
    command: CronCommand,
) -> GqlResult<CronJobPayload> {
    let out = commands(ctx)?.owned_by(owner_id).command::<CronJob>(id, command, None, None).await?;
    Ok(CronJobPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
}

fn non_negative_u32(field: &str, v: Option<i32>) -> Result<Option<u32>, ApiError> {
    v.map(|n| u32::try_from(n).map_err(|_| ApiError::validation(field, "must not be negative"))).transpose()
}

/// Cron-job mutations.
#[derive(Default)]
pub struct CronJobsMutation;

#[Object]
impl CronJobsMutation {
    /// Create a cron job (`{jobId, agentId, groupId?, name?, pattern, timezone, content,
    /// enabled, maxExecutions?, conditions?}`; `timezone` an IANA zone, `conditions`
    /// `{activeDays?, activeHours?, maxExecutionsPerDay?}`; `content` at most 256 KiB, as each fire
    /// copies it into the run it starts; anything else is VALIDATION).
    /// Job ids are per owner: another user's `jobId` is no obstacle (CONFLICT only for one the
    /// owner already holds); `ownerId` (admin) creates it for that user.
    async fn create_cron_job(
        &self,
        ctx: &Context<'_>,
        input: Json<Value>,
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        let create: CreateCronJob = decode("input", input)?;
        check_time_zone("input.timezone", &create.timezone)?;
        let id = create.job_id.clone();
        let out = commands(ctx)?.create::<CronJob>(&id, CronCommand::Create(create), owner_id.as_deref(), None).await?;
        Ok(CronJobPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
    }

    /// Change a cron job (`{name?, pattern?, timezone?, content?, maxExecutions?, conditions?}`;
    /// `maxExecutions: null` makes it unlimited; anything else is VALIDATION).
    async fn update_cron_job(
        &self,
        ctx: &Context<'_>,
        id: String,
        patch: Json<Value>,
        #[graphql(desc = "Whose job `id` is: an admin acting on another user's names them; absent: the caller's own.")]
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        let patch: agentlog_domain::cron_jobs::CronJobPatch = decode("patch", patch)?;
        if let Some(zone) = &patch.timezone {
            check_time_zone("patch.timezone", zone)?;
        }
        cron_command(ctx, &id, owner_id.as_deref(), CronCommand::Update(patch)).await
    }

    /// Turn a cron job on.
    async fn enable_cron_job(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(desc = "Whose job `id` is: an admin acting on another user's names them; absent: the caller's own.")]
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        cron_command(ctx, &id, owner_id.as_deref(), CronCommand::Enable).await
    }

    /// Turn a cron job off.
    async fn disable_cron_job(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(desc = "Whose job `id` is: an admin acting on another user's names them; absent: the caller's own.")]
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        cron_command(ctx, &id, owner_id.as_deref(), CronCommand::Disable).await
    }

    /// Re-enable and restore the counters; `maxExecutions` replaces the max when given
    /// (`keepMax: true` keeps the old one).
    async fn reset_cron_job_executions(
        &self,
        ctx: &Context<'_>,
        id: String,
        max_executions: Option<i32>,
        #[graphql(default)] keep_max: bool,
        #[graphql(desc = "Whose job `id` is: an admin acting on another user's names them; absent: the caller's own.")]
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        let max = non_negative_u32("maxExecutions", max_executions)?;
        let max_executions = if keep_max { None } else { Some(max) };
        cron_command(ctx, &id, owner_id.as_deref(), CronCommand::ResetExecutions { max_executions }).await
    }

    /// Delete a cron job.
    async fn delete_cron_job(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(desc = "Whose job `id` is: an admin acting on another user's names them; absent: the caller's own.")]
        owner_id: Option<String>,
    ) -> GqlResult<CronJobPayload> {
        cron_command(ctx, &id, owner_id.as_deref(), CronCommand::Delete).await
    }
}
