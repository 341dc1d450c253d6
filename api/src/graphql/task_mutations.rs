//! Task mutations: every task command, and what each answers.

use crate::graphql::request::commands;
use agentlog_domain::tasks::{
    AutomationMode, CommentAuthor, DependencyKind, HeartbeatConfig, PinnedBy, ScheduleConfig, Task, TaskCommand,
    TaskConfig, TaskStatus,
};
use agentlog_domain::{envelope::Actor, values::ReviewScore};
use async_graphql::{ComplexObject, Context, Json, Object, SimpleObject};

use super::tasks::{TaskNode, task_node};
use crate::graphql::request::caller;
use crate::graphql::request::node_after;
use crate::graphql::wire::check_nested;
use crate::graphql::wire::decode;
use crate::graphql::wire::from_wire;
use crate::{
    commands::check_time_zone,
    error::{ApiError, GqlResult},
};

/// What a task mutation answers.
#[derive(SimpleObject)]
#[graphql(complex)]
pub struct TaskPayload {
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
impl TaskPayload {
    /// The task after the command (read model, settled); read when asked for).
    async fn task(&self, ctx: &Context<'_>) -> GqlResult<TaskNode> {
        node_after(ctx, self.position, task_node(ctx, Some(&self.owner), &self.id)).await
    }
}

async fn run(
    ctx: &Context<'_>,
    id: &str,
    owner_id: Option<&str>,
    command: TaskCommand,
    actor: Option<Actor>,
    request_id: Option<String>,
) -> GqlResult<TaskPayload> {
    let out = commands(ctx)?.owned_by(owner_id).command::<Task>(id, command, actor, request_id.as_deref()).await?;
    Ok(TaskPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
}

/// The owner a command on task `id` named (`ownerId`, else the caller): the command found the
/// task there.
fn named_owner(ctx: &Context<'_>, owner_id: Option<String>) -> String {
    owner_id.unwrap_or_else(|| caller(ctx).map(|c| c.user_id.clone()).unwrap_or_default())
}

/// Task mutations.
#[derive(Default)]
pub struct TasksMutation;

#[Object]
impl TasksMutation {
    /// Create a task (`{taskId, identifier, instruction, name?, description?, priority?,
    /// parentTaskId?, assigneeAgentId?, automationMode?, heartbeat?, schedule?, maxTopics?,
    /// config?}`); status backlog. Task ids are per owner: another user's `taskId` is no obstacle
    /// (CONFLICT only for one the owner already holds); `ownerId` (admin) creates it for that
    /// user. `parentTaskId` and dependencies name tasks of the task's owner. A key it does not
    /// read, here or in `heartbeat`, `schedule` or `config`, is refused (VALIDATION naming it).
    async fn create_task(
        &self,
        ctx: &Context<'_>,
        input: Json<serde_json::Value>,
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        check_nested::<HeartbeatConfig>("input", &input.0, "heartbeat")?;
        check_nested::<ScheduleConfig>("input", &input.0, "schedule")?;
        check_nested::<TaskConfig>("input", &input.0, "config")?;
        let create: agentlog_domain::tasks::CreateTask = decode("input", input)?;
        check_time_zone("input.schedule.timezone", &create.schedule.timezone)?;
        let id = create.task_id.clone();
        let commands = commands(ctx)?;
        let out = commands
            .create::<Task>(&id, TaskCommand::Create(create), owner_id.as_deref(), request_id.as_deref())
            .await?;
        Ok(TaskPayload { id: id.to_string(), owner: out.state.user_id.clone(), position: out.position })
    }

    /// Change text fields or priority (`{name?, instruction?, description?, priority?}`; another
    /// key is refused, VALIDATION naming it).
    async fn update_task(
        &self,
        ctx: &Context<'_>,
        id: String,
        patch: Json<serde_json::Value>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::Update(decode("patch", patch)?), None, None).await
    }

    /// Assign an agent (or unassign with null).
    async fn assign_task(
        &self,
        ctx: &Context<'_>,
        id: String,
        agent_id: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::Assign { agent_id }, None, None).await
    }

    /// How it runs on its own: `mode` `heartbeat`, `schedule` or null (manual); `heartbeat`
    /// `{intervalSecs?, timeoutSecs?, requireInput?}` (`requireInput`: a tick with no new input
    /// since the last run is skipped, not run); `schedule` `{pattern?, timezone, maxExecutions?}`.
    async fn configure_task_automation(
        &self,
        ctx: &Context<'_>,
        id: String,
        mode: Option<String>,
        heartbeat: Option<Json<serde_json::Value>>,
        schedule: Option<Json<serde_json::Value>>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let mode = mode.as_deref().map(|m| from_wire::<AutomationMode>("mode", m)).transpose()?;
        let heartbeat: HeartbeatConfig = heartbeat.map(|h| decode("heartbeat", h)).transpose()?.unwrap_or_default();
        let schedule: ScheduleConfig = match schedule {
            Some(s) => decode("schedule", s)?,
            None => ScheduleConfig::default(),
        };
        check_time_zone("schedule.timezone", &schedule.timezone)?;
        run(ctx, &id, owner_id.as_deref(), TaskCommand::ConfigureAutomation { mode, heartbeat, schedule }, None, None)
            .await
    }

    /// Most topics (runs) allowed; null = unlimited.
    async fn set_task_topic_quota(
        &self,
        ctx: &Context<'_>,
        id: String,
        max_topics: Option<i32>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let max_topics = match max_topics {
            Some(n) if n < 0 => return Err(ApiError::validation("maxTopics", "must not be negative").into()),
            other => other.map(|n| n as u32),
        };
        run(ctx, &id, owner_id.as_deref(), TaskCommand::SetTopicQuota { max_topics }, None, None).await
    }

    /// Replace the run settings (`{model?, provider?, pauseAfterTopic?, reviewEnabled?}`).
    async fn configure_task(
        &self,
        ctx: &Context<'_>,
        id: String,
        config: Json<serde_json::Value>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let config: TaskConfig = decode("config", config)?;
        run(ctx, &id, owner_id.as_deref(), TaskCommand::Configure(config), None, None).await
    }

    /// Move to another status (`backlog`, `paused`, `completed`, `failed` with `error`,
    /// `canceled`; `running` is what `runTask` does).
    async fn change_task_status(
        &self,
        ctx: &Context<'_>,
        id: String,
        status: String,
        error: Option<String>,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let to: TaskStatus = from_wire("status", &status)?;
        run(ctx, &id, owner_id.as_deref(), TaskCommand::ChangeStatus { to, error }, None, request_id).await
    }

    /// Make `id` depend on `dependsOnId` (`kind` `blocks` (default) or `relates`); `dependsOnId`
    /// is named in the task owner's namespace. A `blocks` edge that would close a cycle is refused (VALIDATION), decided
    /// on the tasks' own streams: of two concurrent additions that would close a cycle
    /// together, one is refused.
    async fn add_task_dependency(
        &self,
        ctx: &Context<'_>,
        id: String,
        depends_on_id: String,
        kind: Option<String>,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let kind: DependencyKind = from_wire("kind", kind.as_deref().unwrap_or("blocks"))?;
        let position = commands(ctx)?
            .owned_by(owner_id.as_deref())
            .add_task_dependency(&id, &depends_on_id, kind, request_id.as_deref())
            .await?;
        Ok(TaskPayload { id: id.to_string(), owner: named_owner(ctx, owner_id), position })
    }

    /// Drop a dependency.
    async fn remove_task_dependency(
        &self,
        ctx: &Context<'_>,
        id: String,
        depends_on_id: String,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::RemoveDependency { depends_on_id }, None, None).await
    }

    /// Pin a document (`pinnedBy` `user` (default) or `agent`; `system` is agentlog's own,
    /// VALIDATION).
    async fn pin_task_document(
        &self,
        ctx: &Context<'_>,
        id: String,
        document_id: String,
        pinned_by: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let pinned_by: PinnedBy = from_wire("pinnedBy", pinned_by.as_deref().unwrap_or("user"))?;
        if pinned_by == PinnedBy::System {
            return Err(ApiError::validation("pinnedBy", "`system` is agentlog's own: `user` or `agent`").into());
        }
        run(ctx, &id, owner_id.as_deref(), TaskCommand::PinDocument { document_id, pinned_by }, None, None).await
    }

    /// Unpin a document.
    async fn unpin_task_document(
        &self,
        ctx: &Context<'_>,
        id: String,
        document_id: String,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::UnpinDocument { document_id }, None, None).await
    }

    /// Comment, as the caller or (with `agentId`) as an agent.
    #[allow(clippy::too_many_arguments)]
    async fn add_task_comment(
        &self,
        ctx: &Context<'_>,
        id: String,
        comment_id: String,
        content: String,
        agent_id: Option<String>,
        brief_id: Option<String>,
        topic_id: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let who = caller(ctx)?;
        let author = match agent_id {
            Some(a) => CommentAuthor::Agent(a),
            None => CommentAuthor::User(who.user_id.clone()),
        };
        run(
            ctx,
            &id,
            owner_id.as_deref(),
            TaskCommand::AddComment { comment_id, author, content, brief_id, topic_id },
            None,
            None,
        )
        .await
    }

    /// Delete a comment.
    async fn delete_task_comment(
        &self,
        ctx: &Context<'_>,
        id: String,
        comment_id: String,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::DeleteComment { comment_id }, None, None).await
    }

    /// A worker's report that a run ended (`{topicId, status, handoff?, result?, error?,
    /// errorCode?, briefJudgement?}`; `status` `completed`, `failed` (with `error`) or
    /// `canceled`; `handoff` `{title?, summary?, keyFindings?, nextAction?}`; `result` the run's
    /// last message): the hand-off becomes the next run's starting point, and the task's rules
    /// decide its next status and its brief.
    async fn complete_task_topic(
        &self,
        ctx: &Context<'_>,
        id: String,
        outcome: Json<serde_json::Value>,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let report = decode("outcome", outcome)?;
        let position = commands(ctx)?
            .owned_by(owner_id.as_deref())
            .complete_task_topic(&id, report, request_id.as_deref())
            .await?;
        Ok(TaskPayload { id: id.to_string(), owner: named_owner(ctx, owner_id), position })
    }

    /// Cancel a running topic; the task pauses. The topic's operation is not stopped: cancel
    /// it with `cancelOperation`.
    async fn cancel_task_topic(
        &self,
        ctx: &Context<'_>,
        id: String,
        topic_id: String,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::CancelTopic { topic_id }, None, None).await
    }

    /// A reviewer scored a topic (`score` 0–100; `scores` `[{rubricId, score, passed, reason?}]`).
    #[allow(clippy::too_many_arguments)]
    async fn review_task_topic(
        &self,
        ctx: &Context<'_>,
        id: String,
        topic_id: String,
        score: i32,
        passed: bool,
        scores: Option<Json<serde_json::Value>>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let score = u8::try_from(score)
            .ok()
            .filter(|s| *s <= 100)
            .ok_or_else(|| ApiError::validation("score", "must be 0 to 100"))?;
        let scores: Vec<ReviewScore> = scores.map(|s| decode("scores", s)).transpose()?.unwrap_or_default();
        run(ctx, &id, owner_id.as_deref(), TaskCommand::ReviewTopic { topic_id, score, passed, scores }, None, None)
            .await
    }

    /// The agent working on the task is alive.
    async fn record_task_heartbeat(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        run(ctx, &id, owner_id.as_deref(), TaskCommand::RecordHeartbeat, None, None).await
    }

    /// Start a run now: a new topic and its operation (kind `task`) under the assignee, in one
    /// atomic append. Workers claim the operation like any other.
    async fn run_task(
        &self,
        ctx: &Context<'_>,
        id: String,
        topic_id: String,
        operation_id: String,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose task `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskPayload> {
        let out = commands(ctx)?
            .owned_by(owner_id.as_deref())
            .run_task(&id, &topic_id, &operation_id, request_id.as_deref())
            .await?;
        Ok(TaskPayload { id: id.to_string(), owner: named_owner(ctx, owner_id), position: out })
    }
}
