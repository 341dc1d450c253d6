//! Tasks: the tasks read model (with dependencies, topics, comments, documents and subtask
//! layers) and its queries; the commands are `task_mutations`.

use agentlog_domain::tasks::{Task, TaskStatus};
use agentlog_projections::tasks::{
    self as read, CommentRow, DependencyRow, DocumentRow, TaskFilter, TaskRow, TopicRow,
};
use async_graphql::{ComplexObject, Context, ID, InputObject, Json, Object, SimpleObject, connection::Connection};
use chrono::{DateTime, Utc};

use super::global_id::{NodeType, global_id};
use crate::error::{ApiError, GqlResult};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::request::reads;
use crate::graphql::wire::from_wire;
use crate::graphql::wire::json;
use crate::graphql::wire::wire;

/// A task as it stands (the tasks read model).
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
#[graphql(name = "Task")]
pub struct TaskNode {
    /// Its id.
    pub task_id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// Human identifier (`T-12`).
    pub identifier: String,
    /// Name.
    pub name: Option<String>,
    /// What to do.
    pub instruction: String,
    /// Description.
    pub description: Option<String>,
    /// `backlog`, `running`, `paused`, `scheduled`, `completed`, `failed`, `canceled`.
    pub status: String,
    /// 0 none, 1 urgent, 2 high, 3 normal, 4 low.
    pub priority: i64,
    /// Parent task.
    pub parent_task_id: Option<String>,
    /// Assignee agent.
    pub assignee_agent_id: Option<String>,
    /// The agent that created it.
    pub created_by_agent_id: Option<String>,
    /// `heartbeat`, `schedule`, or absent (manual).
    pub automation_mode: Option<String>,
    /// Seconds between heartbeat runs.
    pub heartbeat_interval_secs: Option<i64>,
    /// A run without a heartbeat for this long times out.
    pub heartbeat_timeout_secs: Option<i64>,
    /// Last heartbeat.
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// When the next heartbeat tick falls due.
    pub next_heartbeat_at: Option<DateTime<Utc>>,
    /// A heartbeat tick runs only with new input since the last run started (a user's comment
    /// or document, a dependency completed, or the last run's hand-off naming a `nextAction`);
    /// without it the tick is skipped (`task.tick_skipped`) and counted in `skippedTicks`.
    pub heartbeat_require_input: bool,
    /// Heartbeat ticks skipped for want of new input.
    pub skipped_ticks: i64,
    /// When the latest tick was skipped.
    pub last_skipped_tick_at: Option<DateTime<Utc>>,
    /// Cron pattern of a scheduled task.
    pub schedule_pattern: Option<String>,
    /// Time zone of the pattern.
    pub schedule_timezone: String,
    /// Runs allowed per schedule window.
    pub schedule_max_executions: Option<i64>,
    /// Topics (runs) so far.
    pub total_topics: i64,
    /// Most topics allowed.
    pub max_topics: Option<i64>,
    /// The running topic.
    pub current_topic_id: Option<String>,
    /// The last completed topic.
    pub last_completed_topic_id: Option<String>,
    /// Failures in a row.
    pub consecutive_failures: i64,
    /// Run settings (`{model?, provider?, pauseAfterTopic?, reviewEnabled}`).
    pub config: Json<serde_json::Value>,
    /// Error of a failed task.
    pub error: Option<String>,
    /// First run.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub completed_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<TaskRow> for TaskNode {
    fn from(t: TaskRow) -> Self {
        Self {
            global_id: global_id(NodeType::Task, &t.user_id, &t.task_id),
            status: wire(&t.status),
            automation_mode: t.automation_mode.as_ref().map(wire),
            config: json(&t.config),
            task_id: t.task_id,
            user_id: t.user_id,
            identifier: t.identifier,
            name: t.name,
            instruction: t.instruction,
            description: t.description,
            priority: t.priority,
            parent_task_id: t.parent_task_id,
            assignee_agent_id: t.assignee_agent_id,
            created_by_agent_id: t.created_by_agent_id,
            heartbeat_interval_secs: t.heartbeat_interval_secs,
            heartbeat_timeout_secs: t.heartbeat_timeout_secs,
            last_heartbeat_at: t.last_heartbeat_at,
            next_heartbeat_at: t.next_heartbeat_at,
            heartbeat_require_input: t.heartbeat_require_input,
            skipped_ticks: t.skipped_ticks,
            last_skipped_tick_at: t.last_skipped_tick_at,
            schedule_pattern: t.schedule_pattern,
            schedule_timezone: t.schedule_timezone,
            schedule_max_executions: t.schedule_max_executions,
            total_topics: t.total_topics,
            max_topics: t.max_topics,
            current_topic_id: t.current_topic_id,
            last_completed_topic_id: t.last_completed_topic_id,
            consecutive_failures: t.consecutive_failures,
            error: t.error,
            started_at: t.started_at,
            completed_at: t.completed_at,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// A dependency edge: `taskId` depends on `dependsOnId`.
#[derive(SimpleObject, Clone)]
pub struct TaskDependency {
    /// The downstream task.
    pub task_id: String,
    /// The upstream task.
    pub depends_on_id: String,
    /// `blocks` or `relates`.
    pub kind: String,
    /// Since.
    pub created_at: DateTime<Utc>,
}

impl From<DependencyRow> for TaskDependency {
    fn from(d: DependencyRow) -> Self {
        Self { kind: wire(&d.kind), task_id: d.task_id, depends_on_id: d.depends_on_id, created_at: d.created_at }
    }
}

/// A document pinned to a task.
#[derive(SimpleObject, Clone)]
pub struct TaskDocument {
    /// The document.
    pub document_id: String,
    /// `user` or `agent`.
    pub pinned_by: String,
    /// When.
    pub pinned_at: DateTime<Utc>,
}

impl From<DocumentRow> for TaskDocument {
    fn from(d: DocumentRow) -> Self {
        Self { pinned_by: wire(&d.pinned_by), document_id: d.document_id, pinned_at: d.pinned_at }
    }
}

/// One run of a task (a topic) with its hand-off.
#[derive(SimpleObject, Clone)]
pub struct TaskTopic {
    /// The topic (conversation) id.
    pub topic_id: String,
    /// 1, 2, 3 … within the task.
    pub seq: i64,
    /// The run's operation.
    pub operation_id: String,
    /// The agent that ran it.
    pub agent_id: String,
    /// `running`, `completed`, `failed`, `canceled`, `timeout`.
    pub status: String,
    /// What started it.
    pub trigger: String,
    /// The worker's report: `{title, summary, keyFindings, nextAction}`.
    pub handoff: Option<Json<serde_json::Value>>,
    /// Error of a failed run.
    pub error: Option<String>,
    /// Reviewer's overall score.
    pub review_score: Option<i64>,
    /// Reviewer's verdict.
    pub review_passed: Option<bool>,
    /// Started.
    pub started_at: DateTime<Utc>,
    /// Ended.
    pub ended_at: Option<DateTime<Utc>>,
}

impl From<TopicRow> for TaskTopic {
    fn from(t: TopicRow) -> Self {
        Self {
            status: wire(&t.status),
            trigger: wire(&t.trigger),
            handoff: t.handoff.as_ref().map(json),
            topic_id: t.topic_id,
            seq: t.seq,
            operation_id: t.operation_id,
            agent_id: t.agent_id,
            error: t.error,
            review_score: t.review_score,
            review_passed: t.review_passed,
            started_at: t.started_at,
            ended_at: t.ended_at,
        }
    }
}

/// A comment on a task.
#[derive(SimpleObject, Clone)]
pub struct TaskComment {
    /// Its id.
    pub comment_id: String,
    /// `user` or `agent`.
    pub author_kind: String,
    /// The user or agent id.
    pub author_id: String,
    /// Text.
    pub content: String,
    /// The brief it answers.
    pub brief_id: Option<String>,
    /// The topic it concerns.
    pub topic_id: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}

impl From<CommentRow> for TaskComment {
    fn from(c: CommentRow) -> Self {
        Self {
            comment_id: c.comment_id,
            author_kind: c.author_kind,
            author_id: c.author_id,
            content: c.content,
            brief_id: c.brief_id,
            topic_id: c.topic_id,
            created_at: c.created_at,
        }
    }
}

/// A task's subtasks cut into layers that can run in parallel (identifiers).
#[derive(SimpleObject, Clone)]
pub struct SubtaskLayers {
    /// Layers in order; each sorted.
    pub layers: Vec<Vec<String>>,
    /// How many subtasks the layers hold.
    pub total_runnable: i32,
    /// Completed or canceled.
    pub already_done: Vec<String>,
    /// Members of a dependency cycle.
    pub cycles: Vec<String>,
    /// Runnable but downstream of a cycle.
    pub blocked_by_cycle: Vec<String>,
    /// Held back by an upstream outside the subtree that is not done (or unknown).
    pub blocked_externally: Vec<String>,
    /// Running, scheduled or otherwise not startable.
    pub ineligible: Vec<String>,
}

#[ComplexObject]
impl TaskNode {
    /// Why this task exists, in one request: the event that created it and its path of causes
    /// from the chain's root source.
    async fn origin(&self, ctx: &Context<'_>) -> GqlResult<Option<super::origins::Origin>> {
        let stream = app(ctx).handler.stream_of::<Task>(&self.user_id, &self.task_id).await.map_err(ApiError::from)?;
        Ok(super::origins::origin(ctx, &stream).await?)
    }

    /// What this task depends on.
    async fn dependencies(&self, ctx: &Context<'_>) -> GqlResult<Vec<TaskDependency>> {
        let rows = read::task_dependencies(reads(ctx), &self.user_id, &self.task_id).await?;
        Ok(rows.into_iter().map(TaskDependency::from).collect())
    }

    /// The tasks that depend on this one.
    async fn dependants(&self, ctx: &Context<'_>) -> GqlResult<Vec<TaskDependency>> {
        let rows = read::task_dependants(reads(ctx), &self.user_id, &self.task_id).await?;
        Ok(rows.into_iter().map(TaskDependency::from).collect())
    }

    /// Pinned documents, in pin order.
    async fn documents(&self, ctx: &Context<'_>) -> GqlResult<Vec<TaskDocument>> {
        let rows = read::task_documents(reads(ctx), &self.user_id, &self.task_id).await?;
        Ok(rows.into_iter().map(TaskDocument::from).collect())
    }

    /// Runs, by sequence number.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn topics(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, TaskTopic>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::task_topics(reads(ctx), &self.user_id, &self.task_id, &request).await?;
        Ok(connection(page, TaskTopic::from))
    }

    /// Comments, oldest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn comments(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, TaskComment>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::task_comments(reads(ctx), &self.user_id, &self.task_id, &request).await?;
        Ok(connection(page, TaskComment::from))
    }

    /// Direct subtasks, oldest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn subtasks(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, TaskNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let filter = TaskFilter { parent_task_id: Some(self.task_id.clone()), ..Default::default() };
        // Subtasks are named in the parent owner's namespace.
        let page = read::tasks(reads(ctx), Some(&self.user_id), &filter, &request).await?;
        Ok(connection(page, TaskNode::from))
    }

    /// Every descendant cut by its `blocks` dependencies into layers that can run in parallel
    /// (upstream's `planForParent`).
    #[graphql(complexity = "super::cost::once(super::cost::PAGE, child_complexity)")]
    async fn layers(&self, ctx: &Context<'_>) -> GqlResult<SubtaskLayers> {
        let plan = read::subtask_layers(reads(ctx), &self.user_id, &self.task_id)
            .await?
            .ok_or_else(|| ApiError::not_found("task", &self.task_id))?;
        Ok(SubtaskLayers {
            layers: plan.layers,
            total_runnable: i32::try_from(plan.total_runnable).unwrap_or(i32::MAX),
            already_done: plan.already_done,
            cycles: plan.cycles,
            blocked_by_cycle: plan.blocked_by_cycle,
            blocked_externally: plan.blocked_externally,
            ineligible: plan.ineligible,
        })
    }
}

/// Which tasks.
#[derive(InputObject, Default)]
pub struct TaskFilterInput {
    /// Only this status.
    pub status: Option<String>,
    /// Only tasks assigned to this agent.
    pub assignee_agent_id: Option<String>,
    /// Only direct subtasks of this task.
    pub parent_task_id: Option<String>,
}

/// Task queries.
#[derive(Default)]
pub struct TasksQuery;

/// Task `task_id` of `owner` (the caller's own when `None`), as the caller may see it
/// (NOT_FOUND otherwise).
pub async fn task_node(ctx: &Context<'_>, owner: Option<&str>, task_id: &str) -> Result<TaskNode, ApiError> {
    let Some(owner) = caller(ctx)?.namespace(owner) else { return Err(ApiError::not_found("task", task_id)) };
    let row = read::task(reads(ctx), owner, task_id).await?;
    row.map(TaskNode::from).ok_or_else(|| ApiError::not_found("task", task_id))
}

#[Object]
impl TasksQuery {
    /// One task by id or by identifier (`T-12`), among the caller's own (an admin names another
    /// owner with `ownerId`). NOT_FOUND when missing or someone else's.
    async fn task(
        &self,
        ctx: &Context<'_>,
        id: Option<String>,
        identifier: Option<String>,
        #[graphql(
            desc = "Whose task `id` or `identifier` is: an admin reading another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<TaskNode> {
        match (id, identifier) {
            (Some(id), None) => Ok(task_node(ctx, owner_id.as_deref(), &id).await?),
            (None, Some(identifier)) => {
                let Some(owner) = caller(ctx)?.namespace(owner_id.as_deref()) else {
                    return Err(ApiError::not_found("task", identifier).into());
                };
                let row = read::task_by_identifier(reads(ctx), Some(owner), &identifier).await?;
                Ok(row.map(TaskNode::from).ok_or_else(|| ApiError::not_found("task", identifier))?)
            }
            _ => Err(ApiError::validation("task", "give exactly one of id and identifier").into()),
        }
    }

    /// Tasks, oldest first.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn tasks(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        filter: Option<TaskFilterInput>,
    ) -> GqlResult<Connection<String, TaskNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let input = filter.unwrap_or_default();
        let filter = TaskFilter {
            status: input.status.as_deref().map(|s| from_wire::<TaskStatus>("filter.status", s)).transpose()?,
            assignee_agent_id: input.assignee_agent_id,
            parent_task_id: input.parent_task_id,
        };
        let page = read::tasks(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, TaskNode::from))
    }
}
