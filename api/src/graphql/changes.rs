//! Change subscriptions: an operation, a task or a conversation changed; a brief or a
//! notification arrived for the caller; work is available for an agent. Each follows the log
//! (resumable from a position, like `events`) and answers with the read-model row once the
//! read models include the change, so a client never reads a row older than the event it was
//! told about.

use std::{future::Future, sync::Arc};

use agentlog_domain::{
    conversations::Conversation, envelope::RecordedEvent, operations::OperationKind, streams::StreamKind, tasks::Task,
};
use agentlog_eventlog::EventFilter;
use agentlog_projections::{briefs, conversations, notifications, operations, tasks};
use async_graphql::{Context, OutputType, SimpleObject, Subscription};
use futures_util::{StreamExt, stream::BoxStream};

use super::briefs::BriefNode;
use super::conversations::ConversationNode;
use super::notifications::NotificationNode;
use super::operation_inputs::OperationKindInput;
use super::operations::Operation;
use super::tasks::TaskNode;
use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::subscribers::Subscriber;
use crate::graphql::subscribers::admit_subscriber;
use crate::graphql::wire::wire;
use crate::{
    auth::Caller,
    commands::Commands,
    error::{ApiError, GqlResult},
    state::AppState,
};

/// Something changed: the event that changed it and the row as the read models hold it when the
/// change is delivered (never older than the event; a change replayed from `fromPosition` shows
/// the row as it is now, not as it was then: fold the stream for that, `Operation.stateAt`).
#[derive(SimpleObject)]
#[graphql(concrete(name = "OperationChange", params(Operation)))]
#[graphql(concrete(name = "TaskChange", params(TaskNode)))]
#[graphql(concrete(name = "ConversationChange", params(ConversationNode)))]
#[graphql(concrete(name = "BriefChange", params(BriefNode)))]
#[graphql(concrete(name = "NotificationChange", params(NotificationNode)))]
pub struct Change<T: OutputType> {
    /// The event's position: resume from here (`fromPosition`) after a reconnect.
    pub position: i64,
    /// The type of the event that made the change: one of the watched kind's own
    /// (`operation.*`, `task.*`, `conversation.*`, `brief.created`, `notification.created`).
    pub event_type: String,
    /// The row as it is when the change is delivered, at or after the event (absent when it is
    /// gone, e.g. deleted, or no longer visible).
    pub node: Option<T>,
}

/// Follow the log from `from` (exclusive), keep the events `keep` accepts, wait for the read
/// models to include each, then `load` its row. Rows `load` answers `Skip` for are left out.
fn follow<T, K, F, Fut>(
    state: AppState,
    from: i64,
    counted: Subscriber,
    filter: EventFilter,
    keep: K,
    load: F,
) -> BoxStream<'static, GqlResult<Change<T>>>
where
    T: OutputType + Send + 'static,
    K: Fn(&RecordedEvent) -> bool + Send + Sync + 'static,
    F: Fn(AppState, Arc<RecordedEvent>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Loaded<T>, ApiError>> + Send + 'static,
{
    let load = Arc::new(load);
    let events = state.store.subscribe(from, filter);
    events
        .filter(move |item| std::future::ready(item.as_ref().map_or(true, |e| keep(e))))
        .then(move |item| {
            let _alive = &counted;
            let (state, load) = (state.clone(), Arc::clone(&load));
            async move {
                let event = item.map_err(ApiError::from)?;
                state.settle(event.position).await;
                let (position, event_type) = (event.position, event.event_type.clone());
                Ok(match load(state, event).await? {
                    Loaded::Row(node) => Some(Change { position, event_type, node }),
                    Loaded::Skip => None,
                })
            }
        })
        .filter_map(|r: GqlResult<Option<Change<T>>>| std::future::ready(r.transpose()))
        .boxed()
}

/// What a loader found.
pub enum Loaded<T> {
    /// Deliver this (absent row included).
    Row(Option<T>),
    /// Not for this subscriber.
    Skip,
}

fn failed<T: Send + 'static>(e: ApiError) -> BoxStream<'static, GqlResult<T>> {
    futures_util::stream::once(async move { Err(e.into()) }).boxed()
}

/// Admit one more subscription (LIMIT when the server's cap is reached) and say where it
/// starts: after `from`, or (none given) after the head now: only what comes next.
async fn start(state: &AppState, who: &Caller, from: Option<i64>) -> Result<(i64, Subscriber), ApiError> {
    let from = match from {
        Some(p) if p < 0 => return Err(ApiError::validation("fromPosition", "must not be negative")),
        Some(p) => p,
        None => state.store.head_position().await?,
    };
    Ok((from, admit_subscriber(state, &who.user_id)?))
}

fn stream_filter(caller: &Caller, stream_id: &str) -> EventFilter {
    let mut filter = EventFilter::all();
    filter.stream_prefix = Some(stream_id.to_string());
    filter.user_id = caller.owner().map(str::to_string);
    filter
}
/// Change subscriptions.
#[derive(Default)]
pub struct ChangesSubscription;

#[Subscription]
impl ChangesSubscription {
    /// Every change of one operation (`id` among the caller's own; an admin names another owner
    /// with `ownerId`) after `fromPosition` (default: from now on).
    async fn operation_changed(
        &self,
        ctx: &Context<'_>,
        id: String,
        from_position: Option<i64>,
        #[graphql(
            desc = "Whose operation `id` is: an admin following another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> BoxStream<'static, GqlResult<Change<Operation>>> {
        let (state, who) = match (caller(ctx), app(ctx)) {
            (Ok(c), s) => (s.clone(), c.clone()),
            (Err(e), _) => return failed(e),
        };
        let (stream, owner) = match Commands::new(&state, &who).owned_by(owner_id.as_deref()).load_operation(&id).await
        {
            Ok(loaded) => (loaded.stream_id, loaded.state.user_id),
            Err(e) => return failed(e),
        };
        let (from, counted) = match start(&state, &who, from_position).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let filter = stream_filter(&who, &stream);
        follow(
            state,
            from,
            counted,
            filter,
            move |e| e.stream_id == stream,
            move |state, _| {
                let (id, owner) = (id.clone(), owner.clone());
                async move {
                    let row = operations::get(&state.db, &owner, &id).await?;
                    Ok(Loaded::Row(row.map(Operation::from)))
                }
            },
        )
    }
    /// Every change of one task (`id` among the caller's own; an admin names another owner with
    /// `ownerId`) after `fromPosition` (default: from now on).
    async fn task_changed(
        &self,
        ctx: &Context<'_>,
        id: String,
        from_position: Option<i64>,
        #[graphql(
            desc = "Whose task `id` is: an admin following another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> BoxStream<'static, GqlResult<Change<TaskNode>>> {
        let (state, who) = match caller(ctx) {
            Ok(c) => (app(ctx).clone(), c.clone()),
            Err(e) => return failed(e),
        };
        let Some(owner) = who.namespace(owner_id.as_deref()).map(str::to_string) else {
            return failed(ApiError::not_found("task", id));
        };
        match tasks::task(&state.db, &owner, &id).await {
            Ok(Some(_)) => {}
            Ok(None) => return failed(ApiError::not_found("task", id)),
            Err(e) => return failed(e.into()),
        }
        let (from, counted) = match start(&state, &who, from_position).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let stream = match state.handler.stream_of::<Task>(&owner, &id).await {
            Ok(s) => s,
            Err(e) => return failed(e.into()),
        };
        let filter = stream_filter(&who, &stream);
        follow(
            state,
            from,
            counted,
            filter,
            move |e| e.stream_id == stream,
            move |state, _| {
                let (id, owner) = (id.clone(), owner.clone());
                async move { Ok(Loaded::Row(tasks::task(&state.db, &owner, &id).await?.map(TaskNode::from))) }
            },
        )
    }

    /// Every change of one conversation (messages appended, edited, deleted, branches
    /// switched, threads) after `fromPosition` (default: from now on). Query its `tree` for the
    /// new shape; only changed messages are re-read.
    async fn conversation_changed(
        &self,
        ctx: &Context<'_>,
        topic_id: String,
        from_position: Option<i64>,
        #[graphql(
            desc = "Whose topic `topicId` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> BoxStream<'static, GqlResult<Change<ConversationNode>>> {
        let (state, who) = match caller(ctx) {
            Ok(c) => (app(ctx).clone(), c.clone()),
            Err(e) => return failed(e),
        };
        let Some(owner) = who.namespace(owner_id.as_deref()).map(str::to_string) else {
            return failed(ApiError::not_found("conversation", topic_id));
        };
        match conversations::conversation(&state.db, &owner, &topic_id).await {
            Ok(Some(_)) => {}
            Ok(None) => return failed(ApiError::not_found("conversation", topic_id)),
            Err(e) => return failed(e.into()),
        }
        let (from, counted) = match start(&state, &who, from_position).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let stream = match state.handler.stream_of::<Conversation>(&owner, &topic_id).await {
            Ok(s) => s,
            Err(e) => return failed(e.into()),
        };
        let filter = stream_filter(&who, &stream);
        follow(
            state,
            from,
            counted,
            filter,
            move |e| e.stream_id == stream,
            move |state, _| {
                let (id, owner) = (topic_id.clone(), owner.clone());
                async move {
                    let row = conversations::conversation(&state.db, &owner, &id).await?;
                    Ok(Loaded::Row(row.map(ConversationNode::from)))
                }
            },
        )
    }

    /// Briefs created for the caller (an admin: for anyone) after `fromPosition` (default:
    /// from now on).
    async fn brief_created(
        &self,
        ctx: &Context<'_>,
        from_position: Option<i64>,
    ) -> BoxStream<'static, GqlResult<Change<BriefNode>>> {
        let (state, who) = match caller(ctx) {
            Ok(c) => (app(ctx).clone(), c.clone()),
            Err(e) => return failed(e),
        };
        let (from, counted) = match start(&state, &who, from_position).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let mut filter = EventFilter::types(["brief.created"]);
        filter.user_id = who.owner().map(str::to_string);
        follow(
            state,
            from,
            counted,
            filter,
            |_| true,
            move |state, event| async move {
                // The event's stream names the brief and its owner (brief ids are per owner).
                let id = StreamKind::parse(&event.stream_id).map(|(_, id)| id.to_string()).unwrap_or_default();
                let owner = StreamKind::parse_owner(&event.stream_id).unwrap_or_else(|| event.user_id().to_string());
                let row = briefs::brief(&state.db, &owner, &id).await?;
                Ok(Loaded::Row(row.map(BriefNode::from)))
            },
        )
    }

    /// Notifications created for the caller (an admin: for anyone) after `fromPosition`
    /// (default: from now on).
    async fn notification_created(
        &self,
        ctx: &Context<'_>,
        from_position: Option<i64>,
    ) -> BoxStream<'static, GqlResult<Change<NotificationNode>>> {
        let (state, who) = match caller(ctx) {
            Ok(c) => (app(ctx).clone(), c.clone()),
            Err(e) => return failed(e),
        };
        let (from, counted) = match start(&state, &who, from_position).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        let mut filter = EventFilter::types(["notification.created"]);
        filter.user_id = who.owner().map(str::to_string);
        follow(
            state,
            from,
            counted,
            filter,
            |_| true,
            move |state, event| {
                let owner = who.owner().map(str::to_string);
                async move {
                    let Some(id) = event.payload.get("notificationId").and_then(|v| v.as_str()) else {
                        return Ok(Loaded::Skip);
                    };
                    let row = notifications::notification(&state.db, owner.as_deref(), id).await?;
                    Ok(Loaded::Row(row.map(NotificationNode::from)))
                }
            },
        )
    }

    /// Work for these agents: operations a worker can claim now (no lease, not paused, not
    /// finished). First the backlog (the 500 oldest of all the named agents' runs, oldest
    /// first), then each operation as it
    /// becomes claimable (created, resumed after a human's answer or an async result, or
    /// resumed with `resumeOperation` after an interruption); a run whose lease expired is
    /// interrupted, and offered again once resumed. A worker claims with
    /// `claimOperation` and reports with the lease token it answers; losing a race answers
    /// CONFLICT. `kinds` narrows it to those kinds of run; without it, every kind but
    /// `CLIENT_TASK` (a group member's task run in the client, which a client worker asks
    /// for with `kinds: [CLIENT_TASK]`).
    async fn work_available(
        &self,
        ctx: &Context<'_>,
        agent_ids: Vec<String>,
        kinds: Option<Vec<OperationKindInput>>,
    ) -> BoxStream<'static, GqlResult<Operation>> {
        // Kinds as the read model spells them.
        let wanted: Vec<String> = match kinds {
            Some(k) => k.into_iter().map(|k| wire(&OperationKind::from(k))).collect(),
            None => OperationKind::ALL.iter().filter(|k| **k != OperationKind::ClientTask).map(wire).collect(),
        };
        let wanted = Arc::new(wanted);
        let (state, who) = match caller(ctx) {
            Ok(c) => (app(ctx).clone(), c.clone()),
            Err(e) => return failed(e),
        };
        if agent_ids.is_empty() || agent_ids.len() > 100 {
            return failed(ApiError::validation("agentIds", "name 1 to 100 agents"));
        }
        // The head before the backlog is read: anything after it arrives live (possibly also
        // in the backlog; claiming twice is refused, so a duplicate costs one failed claim).
        let (from, counted) = match start(&state, &who, None).await {
            Ok(f) => f,
            Err(e) => return failed(e),
        };
        // The backlog is read from the read models: they must hold everything up to `from`
        // first, or a run committed just before (by this instance or another) would be in
        // neither the backlog nor the live part.
        state.settle(from).await;
        let backlog = match operations::claimable(&state.db, who.owner(), &agent_ids, &wanted, BACKLOG).await {
            Ok(rows) => rows,
            Err(e) => return failed(e.into()),
        };
        let backlog: Vec<GqlResult<Operation>> = backlog.into_iter().map(|o| Ok(Operation::from(o))).collect();
        let types = [
            "operation.created",
            "operation.lease_expired",
            "operation.human_answered",
            "operation.async_result_received",
            "operation.resumed",
            "operation.human_wait_timed_out",
        ];
        let mut filter = EventFilter::types(types);
        filter.user_id = who.owner().map(str::to_string);
        // Both the owned streams (`operation@…`) and the global ones from before (`operation-…`).
        filter.stream_prefix = Some("operation".into());
        let agents = Arc::new(agent_ids);
        let live = follow(
            state,
            from,
            counted,
            filter,
            |_| true,
            move |state, event| {
                let agents = Arc::clone(&agents);
                let wanted = Arc::clone(&wanted);
                async move {
                    // The event's stream names the run and its owner (operation ids are per owner).
                    let Some((_, id)) = StreamKind::parse(&event.stream_id) else { return Ok(Loaded::Skip) };
                    let owner =
                        StreamKind::parse_owner(&event.stream_id).unwrap_or_else(|| event.user_id().to_string());
                    let row = operations::get(&state.db, &owner, id).await?;
                    Ok(match row {
                        Some(o)
                            if o.lease.is_none()
                                && matches!(o.status.as_str(), "idle" | "running")
                                && agents.contains(&o.agent_id)
                                && wanted.contains(&o.kind) =>
                        {
                            Loaded::Row(Some(Operation::from(o)))
                        }
                        _ => Loaded::Skip,
                    })
                }
            },
        )
        .filter_map(|c| std::future::ready(c.map(|c| c.node).transpose()));
        futures_util::stream::iter(backlog).chain(live).boxed()
    }
}

/// The most claimable runs `workAvailable` offers from its backlog (the oldest).
const BACKLOG: usize = 500;
