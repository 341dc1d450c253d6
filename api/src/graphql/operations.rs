//! Operations: one agent run, and the queries that read it (history, state as of any position).
//! Its mutations are [`super::operation_mutations`], their inputs [`super::operation_inputs`].

use crate::graphql::request::commands;
use agentlog_domain::aggregate::DomainEvent;
use agentlog_domain::operations::OperationEvent;
use agentlog_domain::operations::{Operation as OperationState, OperationKind};
use agentlog_eventlog::fold_stream;
use async_graphql::{ComplexObject, Context, ID, Json, Object, SimpleObject};
use chrono::{DateTime, Utc};

use agentlog_projections::Projection;
use agentlog_projections::operations::{
    self as read, OperationCardRow, OperationFilter, OperationRow, OperationStepRow, OperationsProjection,
};
use async_graphql::connection::Connection;

use super::events::Event;
use super::global_id::{NodeType, global_id};
use super::operation_inputs::OperationFilterInput;
use crate::error::{ApiError, GqlResult};
use crate::graphql::paging::connection;
use crate::graphql::paging::page_request;
use crate::graphql::paging::page_size;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::request::reads;
use crate::graphql::wire::from_wire;
use crate::graphql::wire::json;
use crate::graphql::wire::wire;

/// One agent run.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Operation {
    /// Its id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// A globally unique opaque id (its type, owner and id), for `node(id:)`.
    pub global_id: ID,
    /// `idle`, `running`, `waiting_for_human`, `waiting_for_async_tool`, `done`, `error`,
    /// `interrupted`, `cancelled`.
    pub status: String,
    /// `thinking`, `acting`, `responding`, `finalizing`, `done`.
    pub phase: Option<String>,
    /// `conversation`, `subagent`, `tool`, `group`, `client_task`, `task`.
    pub kind: Option<String>,
    /// Why it stopped (or paused).
    pub completion_reason: Option<String>,
    /// The agent it runs as.
    pub agent_id: Option<String>,
    /// The agent's config version at creation.
    pub agent_config_version: Option<i64>,
    /// Model.
    pub model: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// Conversation.
    pub topic_id: Option<String>,
    /// Task.
    pub task_id: Option<String>,
    /// What started it (`task:heartbeat`, `cron:<jobId>`, …).
    pub trigger: Option<String>,
    /// What the agent was told (a task run's instruction carries the last run's hand-off).
    pub instruction: Option<String>,
    /// Parent (sub-agents).
    pub parent_operation_id: Option<String>,
    /// Children's ids, when read from the run's stream (`operation(id)`); a row of a list reads
    /// them in `childIds`.
    #[graphql(skip)]
    pub child_ids: Option<Vec<String>>,
    /// Steps recorded.
    pub step_count: i64,
    /// Prompt tokens (absent until measured).
    pub input_tokens: Option<i64>,
    /// Completion tokens (absent until measured).
    pub output_tokens: Option<i64>,
    /// All tokens (absent until measured).
    pub total_tokens: Option<i64>,
    /// Cost in millionths of the currency unit (absent until measured).
    pub cost_micros: Option<i64>,
    /// Tool calls (absent until a step reported).
    pub tool_calls: Option<i64>,
    /// The worker holding the lease.
    pub lease_worker_id: Option<String>,
    /// When the lease runs out.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The human-in-the-loop card being waited on.
    pub pending_card: Option<Json<serde_json::Value>>,
    /// Current plan.
    pub plan: Option<Json<serde_json::Value>>,
    /// Current todos.
    pub todos: Option<Json<serde_json::Value>>,
    /// Artifacts and scores when built from the stream (else read from the read model).
    #[graphql(skip)]
    pub from_stream: Option<(serde_json::Value, serde_json::Value)>,
    /// The roster settings overridden for this run, when built from the stream.
    #[graphql(skip)]
    pub overrides: Option<Vec<String>>,
    /// Tools off, when built from the stream.
    #[graphql(skip)]
    pub tools_disabled: Option<bool>,
    /// The stream version the node was folded at, when `operation(id)` read it: its
    /// `asyncResults` are then read from the stream up to that version.
    #[graphql(skip)]
    pub stream_version: Option<i64>,
    /// Error of a failed run.
    pub error: Option<Json<serde_json::Value>>,
    /// Created.
    pub created_at: Option<DateTime<Utc>>,
    /// First claimed.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub completed_at: Option<DateTime<Utc>>,
}

impl From<&OperationState> for Operation {
    fn from(op: &OperationState) -> Self {
        let spec = op.spec.as_ref();
        let as_i64 = |v: Option<u64>| v.map(|x| x.min(i64::MAX as u64) as i64);
        Self {
            global_id: global_id(NodeType::Operation, &op.user_id, op.id()),
            id: op.id().to_string(),
            user_id: op.user_id.clone(),
            status: op.status.as_str().to_string(),
            phase: op.phase.as_ref().map(wire),
            kind: op.kind().as_ref().map(wire),
            completion_reason: op.completion_reason.as_ref().map(wire),
            agent_id: spec.map(|s| s.agent.agent_id.clone()),
            agent_config_version: spec.map(|s| s.agent.config_version.min(i64::MAX as u64) as i64),
            model: spec.and_then(|s| s.agent.model.clone()),
            provider: spec.and_then(|s| s.agent.provider.clone()),
            topic_id: spec.and_then(|s| s.topic_id.clone()),
            task_id: spec.and_then(|s| s.task_id.clone()),
            trigger: spec.and_then(|s| s.trigger.clone()),
            instruction: spec.and_then(|s| s.instruction.clone()),
            parent_operation_id: spec.and_then(|s| s.parent_operation_id.clone()),
            child_ids: Some(op.child_ids().map(str::to_string).collect()),
            step_count: op.step_count.into(),
            input_tokens: as_i64(op.usage.input_tokens),
            output_tokens: as_i64(op.usage.output_tokens),
            total_tokens: as_i64(op.usage.total_tokens),
            cost_micros: as_i64(op.usage.cost_micros),
            tool_calls: as_i64(op.tool_calls),
            lease_worker_id: op.lease.as_ref().map(|l| l.worker_id.clone()),
            lease_expires_at: op.lease.as_ref().map(|l| l.expires_at),
            pending_card: op.pending_card.as_ref().map(json),
            plan: op.plan.as_ref().map(json),
            todos: op.todos.as_ref().map(json),
            from_stream: Some((json(&op.artifacts).0, json(&op.scores).0)),
            overrides: Some(spec.map(|s| s.agent_overrides.clone()).unwrap_or_default()),
            tools_disabled: Some(spec.is_some_and(|s| s.disable_tools)),
            stream_version: None,
            error: op.error.as_ref().map(json),
            created_at: op.created_at,
            started_at: op.started_at,
            completed_at: op.completed_at,
        }
    }
}

impl From<OperationRow> for Operation {
    fn from(op: OperationRow) -> Self {
        Self {
            global_id: global_id(NodeType::Operation, &op.user_id, &op.id),
            id: op.id,
            user_id: op.user_id,
            status: op.status,
            phase: op.phase,
            kind: Some(op.kind),
            completion_reason: op.completion_reason,
            agent_id: Some(op.agent_id),
            agent_config_version: Some(op.agent_config_version),
            model: op.model,
            provider: op.provider,
            topic_id: op.topic_id,
            task_id: op.task_id,
            trigger: op.trigger,
            instruction: op.instruction,
            parent_operation_id: op.parent_operation_id,
            child_ids: None,
            step_count: op.step_count,
            input_tokens: op.input_tokens,
            output_tokens: op.output_tokens,
            total_tokens: op.total_tokens,
            cost_micros: op.cost_micros,
            tool_calls: op.tool_calls,
            lease_worker_id: op.lease.as_ref().map(|l| l.worker_id.clone()),
            lease_expires_at: op.lease.as_ref().map(|l| l.expires_at),
            pending_card: op.pending_card.map(Json),
            plan: op.plan.map(Json),
            todos: op.todos.map(Json),
            error: op.error.map(Json),
            from_stream: None,
            overrides: None,
            tools_disabled: None,
            stream_version: None,
            created_at: Some(op.created_at),
            started_at: op.started_at,
            completed_at: op.completed_at,
        }
    }
}

/// One recorded step of an operation.
#[derive(SimpleObject, Clone)]
pub struct OperationStep {
    /// 1, 2, 3 …
    pub step_index: i64,
    /// The phase it ended in.
    pub phase: String,
    /// `[{id, name, status?}]`.
    pub tool_calls: Json<serde_json::Value>,
    /// How many tool calls.
    pub tool_call_count: i64,
    /// Prompt tokens (absent when unmeasured).
    pub input_tokens: Option<i64>,
    /// Completion tokens.
    pub output_tokens: Option<i64>,
    /// All tokens.
    pub total_tokens: Option<i64>,
    /// Cost in micro-units.
    pub cost_micros: Option<i64>,
    /// When.
    pub at: DateTime<Utc>,
    /// Its event's position.
    pub position: i64,
}

impl From<OperationStepRow> for OperationStep {
    fn from(s: OperationStepRow) -> Self {
        Self {
            step_index: s.step_index,
            phase: s.phase,
            tool_calls: Json(s.tool_calls),
            tool_call_count: s.tool_call_count,
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            total_tokens: s.total_tokens,
            cost_micros: s.cost_micros,
            at: s.at,
            position: s.position,
        }
    }
}

/// A human-in-the-loop card an operation asked, and how it closed.
#[derive(SimpleObject, Clone)]
#[graphql(name = "HitlCard")]
pub struct HitlCardNode {
    /// The operation.
    pub operation_id: String,
    /// The operation's owner (operation ids are per owner).
    pub user_id: String,
    /// The card.
    pub card_id: String,
    /// `choice`, `input`, `confirm`, `form`.
    pub kind: String,
    /// Title.
    pub title: String,
    /// The whole card.
    pub card: Json<serde_json::Value>,
    /// Asked.
    pub asked_at: DateTime<Utc>,
    /// Answer due by.
    pub deadline: Option<DateTime<Utc>>,
    /// `pending`, `answered`, `timed_out`, or `abandoned` (the run ended with it unanswered).
    pub outcome: String,
    /// The answer.
    pub answer: Option<Json<serde_json::Value>>,
    /// How long the human took, ms.
    pub waited_ms: Option<i64>,
    /// Closed.
    pub closed_at: Option<DateTime<Utc>>,
}

impl From<OperationCardRow> for HitlCardNode {
    fn from(c: OperationCardRow) -> Self {
        Self {
            operation_id: c.operation_id,
            user_id: c.user_id,
            card_id: c.card_id,
            kind: c.kind,
            title: c.title,
            card: Json(c.card),
            asked_at: c.asked_at,
            deadline: c.deadline,
            outcome: c.outcome,
            answer: c.answer.map(Json),
            waited_ms: c.waited_ms,
            closed_at: c.closed_at,
        }
    }
}

impl Operation {
    /// The async results in the operation's stream up to `version`, shaped as the read model's.
    async fn async_results_from_stream(
        &self,
        ctx: &Context<'_>,
        version: i64,
    ) -> Result<Vec<read::OperationAsyncResultRow>, ApiError> {
        let stream = self.stream(ctx).await?;
        let mut rows = Vec::new();
        // A page at a time: a long run's stream is never held whole.
        let mut next = 1;
        while next <= version {
            let want = usize::try_from(version - next + 1).unwrap_or(usize::MAX).min(STREAM_PAGE);
            let page = app(ctx).store.read_stream(&stream, next, want).await?;
            let Some(last) = page.last() else { break };
            next = last.stream_version + 1;
            rows.extend(async_results_in(&self.id, &page)?);
            if page.len() < want {
                break;
            }
        }
        Ok(rows)
    }

    /// Its stream (a run from before operation ids were per owner keeps its global one).
    async fn stream(&self, ctx: &Context<'_>) -> Result<String, ApiError> {
        Ok(app(ctx).handler.stream_of::<OperationState>(&self.user_id, &self.id).await?)
    }

    /// The run as its stream holds it now.
    async fn loaded(&self, ctx: &Context<'_>) -> Result<OperationState, ApiError> {
        Ok(app(ctx).handler.load_stream::<OperationState>(&self.stream(ctx).await?).await?.state)
    }

    async fn agent_overrides_of(&self, ctx: &Context<'_>) -> Result<Vec<String>, ApiError> {
        if let Some(o) = &self.overrides {
            return Ok(o.clone());
        }
        let loaded = self.loaded(ctx).await?;
        Ok(loaded.spec.map(|s| s.agent_overrides).unwrap_or_default())
    }
}

/// Events of an operation's stream read at a time for its async results.
const STREAM_PAGE: usize = 1_000;

/// The async results among `events` of operation `id`, shaped as the read model's.
fn async_results_in(
    id: &str,
    events: &[agentlog_domain::envelope::RecordedEvent],
) -> Result<Vec<read::OperationAsyncResultRow>, ApiError> {
    let mut rows = Vec::new();
    for e in events.iter().filter(|e| e.event_type == "operation.async_result_received") {
        let event = <OperationEvent as DomainEvent>::decode(&e.event_type, e.schema_version, &e.payload)
            .map_err(|err| ApiError::Internal(format!("event at {} cannot be decoded: {err}", e.position)))?;
        let OperationEvent::AsyncResultReceived(r) = event else { continue };
        rows.push(read::OperationAsyncResultRow {
            operation_id: id.to_string(),
            key: r.key,
            success: r.success,
            result: r.result,
            truncated: r.truncated,
            original_chars: r.original_chars.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
            resumed: r.resumes,
            position: e.position,
        });
    }
    Ok(rows)
}

#[ComplexObject]
impl Operation {
    /// Its children (sub-agent and group member runs), oldest first: every one from the run's
    /// stream (`operation(id)`); in a list or a change feed, read from the read model, the first
    /// 500 (page on with `children`).
    #[graphql(complexity = "super::cost::PAGE + child_complexity")]
    async fn child_ids(&self, ctx: &Context<'_>) -> GqlResult<Vec<String>> {
        if let Some(ids) = &self.child_ids {
            return Ok(ids.clone());
        }
        let request = page_request(ctx, Some(500), None, None, None)?;
        let page = read::children(reads(ctx), &self.user_id, &self.id, &request).await?;
        Ok(page.items.into_iter().map(|row| row.id).collect())
    }

    /// Why this run exists, in one request: the event that started it and its path of causes
    /// from the chain's root source (a cron fire, a completed task that released it, a
    /// supervisor's dispatch, a heartbeat, or a user's call).
    async fn origin(&self, ctx: &Context<'_>) -> GqlResult<Option<super::origins::Origin>> {
        Ok(super::origins::origin(ctx, &self.stream(ctx).await?).await?)
    }

    /// The roster settings the run's starter overrode (`model`, `provider`); `model` and
    /// `provider` hold the values used.
    async fn agent_overrides(&self, ctx: &Context<'_>) -> GqlResult<Vec<String>> {
        Ok(self.agent_overrides_of(ctx).await?)
    }

    /// The exact agent config the run ran under (`{slug, title, model, provider, systemRole,
    /// plugins, kind, …}`): the roster's config at `agentConfigVersion`, with the run's
    /// overrides applied. Null when that version is not in the roster.
    async fn agent_config(&self, ctx: &Context<'_>) -> GqlResult<Option<Json<serde_json::Value>>> {
        let (Some(agent_id), Some(version)) = (&self.agent_id, self.agent_config_version) else {
            return Ok(None);
        };
        let row = agentlog_projections::agents::version(reads(ctx), &self.user_id, agent_id, version)
            .await
            .map_err(ApiError::from)?;
        let Some(row) = row else { return Ok(None) };
        let mut config = row.config;
        for field in self.agent_overrides_of(ctx).await? {
            let value = match field.as_str() {
                "model" => self.model.clone(),
                "provider" => self.provider.clone(),
                _ => continue,
            };
            if let Some(obj) = config.as_object_mut() {
                obj.insert(field, value.map_or(serde_json::Value::Null, serde_json::Value::String));
            }
        }
        Ok(Some(Json(config)))
    }

    /// Tools are off for this run (a group member told by a `broadcast`): its worker answers
    /// without tools, and a `reportStep` with tool calls is refused with VALIDATION.
    async fn disable_tools(&self, ctx: &Context<'_>) -> GqlResult<bool> {
        if let Some(off) = self.tools_disabled {
            return Ok(off);
        }
        Ok(self.loaded(ctx).await?.spec.is_some_and(|s| s.disable_tools))
    }

    /// Artifacts (`[{artifactId, title, kind, sizeBytes?, contentRef}]`).
    async fn artifacts(&self, ctx: &Context<'_>) -> GqlResult<Json<serde_json::Value>> {
        if let Some((artifacts, _)) = &self.from_stream {
            return Ok(Json(artifacts.clone()));
        }
        Ok(json(&read::artifacts(reads(ctx), &self.user_id, &self.id).await?))
    }

    /// Review scores (`[{rubricId, score, passed, reason?}]`).
    async fn scores(&self, ctx: &Context<'_>) -> GqlResult<Json<serde_json::Value>> {
        if let Some((_, scores)) = &self.from_stream {
            return Ok(Json(scores.clone()));
        }
        Ok(json(&read::scores(reads(ctx), &self.user_id, &self.id).await?))
    }

    /// Recorded steps, in order (read model).
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn steps(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, OperationStep>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::steps(reads(ctx), &self.user_id, &self.id, &request).await?;
        Ok(connection(page, OperationStep::from))
    }

    /// Every human-in-the-loop card it asked, in order (read model).
    async fn cards(&self, ctx: &Context<'_>) -> GqlResult<Vec<HitlCardNode>> {
        let rows = read::cards(reads(ctx), &self.user_id, &self.id).await?;
        Ok(rows.into_iter().map(HitlCardNode::from).collect())
    }

    /// Results delivered to this run while it waited (async tools, sub-agents, a group's
    /// members), in order: `[{operationId, key, success, result, truncated, originalChars,
    /// resumed, position}]`. Read by `operation(id)`, they come from the operation's stream at
    /// the same position as its `status` (a woken supervisor shows every result of its
    /// barrier); in lists and payloads, from the read model.
    #[graphql(complexity = "super::cost::once(super::cost::REPLAY, child_complexity)")]
    async fn async_results(&self, ctx: &Context<'_>) -> GqlResult<Json<serde_json::Value>> {
        if let Some(version) = self.stream_version {
            return Ok(json(&self.async_results_from_stream(ctx, version).await?));
        }
        Ok(json(&read::async_results(reads(ctx), &self.user_id, &self.id).await?))
    }

    /// Sub-agents and other child operations, oldest first (read model).
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn children(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, Operation>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::children(reads(ctx), &self.user_id, &self.id, &request).await?;
        Ok(connection(page, Operation::from))
    }

    /// This operation's stream, oldest first, a page at a time: `first` events (500 when
    /// absent) after stream version `afterVersion` (0, the start, when absent); the next page
    /// is after the last event's `streamVersion`.
    #[graphql(complexity = "super::cost::log_read(first, 500, child_complexity)")]
    async fn history(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after_version: Option<i64>,
    ) -> GqlResult<Vec<Event>> {
        let first = page_size(ctx, first.or(Some(500)))?;
        let after = after_version.unwrap_or(0);
        if after < 0 {
            return Err(ApiError::validation("afterVersion", "must not be negative").into());
        }
        let stream = self.stream(ctx).await?;
        let events =
            app(ctx).store.read_stream(&stream, after.saturating_add(1), first).await.map_err(ApiError::from)?;
        Ok(events.into_iter().map(Event::from).collect())
    }

    /// How many events its stream holds (its last `streamVersion`), when read by
    /// `operation(id)`; absent in lists.
    async fn history_length(&self) -> Option<i64> {
        self.stream_version
    }

    /// The operation as it was right after the event at `position` (a replay of its stream).
    #[graphql(complexity = "super::cost::once(super::cost::REPLAY, child_complexity)")]
    async fn state_at(&self, ctx: &Context<'_>, position: i64) -> GqlResult<Option<Operation>> {
        let stream = self.stream(ctx).await?;
        let (state, version) = fold_stream::<OperationState>(app(ctx).store.as_ref(), &stream, Some(position))
            .await
            .map_err(ApiError::from)?;
        Ok((version > 0).then(|| Operation::from(&state)))
    }
}

/// Operation `id` of `owner` (the caller's own when `None`), from its stream, as the caller may
/// see it (NOT_FOUND otherwise).
pub(crate) async fn operation_node(ctx: &Context<'_>, owner: Option<&str>, id: &str) -> Result<Operation, ApiError> {
    let loaded = commands(ctx)?.owned_by(owner).load_operation(id).await?;
    // A query's answer is one moment: the run as its children, steps and cards were read.
    let (state, version) = super::request::as_of_request(ctx, loaded, OperationsProjection.name()).await?;
    if version == 0 {
        return Err(ApiError::not_found("operation", id));
    }
    Ok(Operation { stream_version: Some(version), ..Operation::from(&state) })
}

/// Operation queries.
#[derive(Default)]
pub struct OperationsQuery;

#[Object]
impl OperationsQuery {
    /// One operation (`id` among the caller's own; an admin names another owner with
    /// `ownerId`), from its stream as of the query's moment (the one its children, steps and
    /// cards are read at; in a mutation's payload, after the mutation). NOT_FOUND when it does
    /// not exist or belongs to someone else.
    async fn operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin reading another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<Operation> {
        Ok(operation_node(ctx, owner_id.as_deref(), &id).await?)
    }

    /// Operations, newest first (read model). Filters combine.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn operations(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        filter: Option<OperationFilterInput>,
    ) -> GqlResult<Connection<String, Operation>> {
        let request = page_request(ctx, first, after, last, before)?;
        let f = filter.unwrap_or_default();
        let filter = OperationFilter {
            status: f.status.as_deref().map(|s| from_wire("filter.status", s)).transpose()?,
            kind: f.kind.map(OperationKind::from),
            agent_id: f.agent_id,
            model: f.model,
            topic_id: f.topic_id,
            task_id: f.task_id,
            group_id: f.group_id,
            parent_operation_id: f.parent_operation_id,
            created_from: f.created_from,
            created_to: f.created_to,
        };
        let page = read::list(reads(ctx), caller(ctx)?.owner(), &filter, &request).await?;
        Ok(connection(page, Operation::from))
    }

    /// Cards waiting for a human's answer, oldest first: what a human must decide next.
    #[graphql(complexity = "super::cost::page(first, last, child_complexity)")]
    async fn pending_cards(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
    ) -> GqlResult<Connection<String, HitlCardNode>> {
        let request = page_request(ctx, first, after, last, before)?;
        let page = read::pending_cards(reads(ctx), caller(ctx)?.owner(), &request).await?;
        Ok(connection(page, HitlCardNode::from))
    }
}
