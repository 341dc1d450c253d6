//! Operation use cases: start (with conversation, sub-agent and parent rules), the worker's
//! reports, human answers, and cancel with its cascade.

use agentlog_domain::stamp::StreamWrite;
use agentlog_domain::{
    context::Context,
    conversations::{ChatMessage, Conversation, ConversationCommand},
    envelope::Actor,
    error::DomainError,
    operations::{CreateOperation, Operation, OperationCommand, lease_token, lease_token_hash},
    rules::{cancel_cascade, operation_resume, operation_start},
    streams::StreamKind,
};
use agentlog_eventlog::{AppendResult, CommandError, CommandOutcome, Loaded};
use chrono::{DateTime, Utc};

use agentlog_projections::budgets::{BudgetRow, RunScope};

use super::budgets;
use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::commands::checks::check_replay;
use crate::error::ApiError;

/// The lease a claim took.
pub struct ClaimedLease {
    /// The token every report on the run presents until the lease ends or is replaced.
    pub token: String,
    /// The worker holding it.
    pub worker_id: String,
    /// When it runs out unless renewed.
    pub expires_at: DateTime<Utc>,
}

/// What an operation command did.
pub struct OperationResult {
    /// The state after it.
    pub state: Operation,
    /// Position of its last event (0 when it decided nothing).
    pub position: i64,
}

/// A command on an operation, ready to run: what [`Commands::prepare_on_operation`] worked out.
struct OnOperation {
    stream_id: String,
    ctx: Context,
    command: OperationCommand,
    run: Option<RunScope>,
    rows: Vec<BudgetRow>,
}

impl Commands<'_> {
    /// Load an operation the caller may act on, `id` named in [`Commands::namespace`] (someone
    /// else's is NOT_FOUND, exactly as a missing one).
    pub async fn load_operation(&self, id: &str) -> Result<Loaded<Operation>, ApiError> {
        check_id("operationId", id)?;
        self.load_owned::<Operation>(id).await
    }

    /// Start an operation (conversation busy, sub-agent limit and parent rules apply).
    pub async fn start_operation(
        &self,
        create: CreateOperation,
        owner: Option<&str>,
        lease_token: Option<String>,
        request_id: Option<&str>,
    ) -> Result<OperationResult, ApiError> {
        check_id("operationId", &create.operation_id)?;
        let owner = self.owner_for_new(owner)?;
        let mut create = self.with_roster_agent(&owner, create).await?;
        if let Some(parent) = &create.parent_operation_id {
            // The parent is named in the run owner's namespace: another user's is unknown here.
            check_id("parentOperationId", parent)?;
            let p = self.state.handler.load_of::<Operation>(&owner, parent).await?;
            if !p.state.exists() {
                return Err(ApiError::not_found("operation", parent));
            }
            // A sub-agent given no topic runs in its parent's conversation.
            if create.topic_id.is_none() {
                create.topic_id = p.state.topic_id().map(str::to_string);
            }
        }
        let ctx = self.context(&owner, self.user_actor(), request_id)?.with_lease_token(lease_token);
        let run = RunScope {
            user_id: owner.clone(),
            agent_id: create.agent.agent_id.clone(),
            task_id: create.task_id.clone(),
            group_id: create.group_id.clone(),
        };
        let budgets = budgets::facts(&budgets::standings(self.state, &run, ctx.now, false).await?);
        let caller = self.caller;
        let results = self
            .state
            .handler
            .execute_multi(&ctx, || async {
                let h = &self.state.handler;
                let existing = h.load_of::<Operation>(&owner, &create.operation_id).await?;
                // A resent start answers what it wrote; a new run needs room in its budgets.
                if !existing.state.exists() {
                    agentlog_domain::budgets::refuse_start(&budgets)?;
                }
                // Topic ids are per owner: the run's topic is its owner's.
                let conversation = match &create.topic_id {
                    Some(t) => Some(h.load_of::<Conversation>(&owner, t).await?),
                    None => None,
                };
                if let Some(c) = &conversation
                    && c.state.exists()
                    && !caller.may_see(&c.state.user_id)
                {
                    return Err(agentlog_domain::error::DomainError::not_found(
                        "conversation",
                        c.state.topic_id.clone(),
                    )
                    .into());
                }
                let mut tracked = Vec::new();
                if let Some(c) = &conversation {
                    for id in c.state.tracked_operations() {
                        tracked.push(h.load_of::<Operation>(&owner, id).await?.state);
                    }
                }
                let parent = match &create.parent_operation_id {
                    Some(p) => Some(h.load_of::<Operation>(&owner, p).await?),
                    None => None,
                };
                let started = operation_start::start_operation_within(
                    self.state.settings.max_subagent_depth,
                    &create,
                    &existing.state,
                    conversation.as_ref().map(|c| &c.state),
                    &tracked,
                    parent.as_ref().map(|p| &p.state),
                    &ctx,
                )?;
                let loaded = [Some(existing.stream_id.as_str()), conversation.as_ref().map(|c| c.stream_id.as_str())]
                    .into_iter()
                    .chain([parent.as_ref().map(|p| p.stream_id.as_str())])
                    .flatten();
                let writes = retarget(
                    started.stamp(
                        &existing.state,
                        conversation.as_ref().map(|c| &c.state),
                        parent.as_ref().map(|p| &p.state),
                        &ctx,
                    ),
                    loaded,
                );
                Ok(with_versions(writes, &existing, conversation.as_ref(), parent.as_ref()))
            })
            .await?;
        let stream = self.state.handler.stream_of::<Operation>(&owner, &create.operation_id).await?;
        self.settled(&results, &stream).await
    }

    /// The run's agent from the roster (NOT_FOUND when it is not registered, or archived:
    /// CONFLICT): its current config version, model and provider, with the caller's explicit
    /// model / provider recorded as overrides. A stated config version must be the current one.
    async fn with_roster_agent(&self, owner: &str, mut create: CreateOperation) -> Result<CreateOperation, ApiError> {
        let wanted = create.agent.clone();
        let roster = self.agent_ref(owner, &wanted.agent_id).await?;
        if wanted.config_version != 0 && wanted.config_version != roster.config_version {
            return Err(ApiError::Conflict(format!(
                "agent {} is at config version {}, not {}",
                wanted.agent_id, roster.config_version, wanted.config_version
            )));
        }
        let (agent, overrides) = roster.with_overrides(wanted.model, wanted.provider);
        create.agent = agent;
        create.agent_overrides = overrides;
        Ok(create)
    }

    /// Run one command on an operation the caller may act on, as `actor`. A worker's report
    /// presents `lease_token`; the domain refuses a report on a claimed run without the
    /// lease's valid token. A report with a token is recorded as the lease's worker.
    pub async fn operation_command(
        &self,
        id: &str,
        command: OperationCommand,
        actor: Option<Actor>,
        lease_token: Option<String>,
        request_id: Option<&str>,
    ) -> Result<OperationResult, ApiError> {
        let (outcome, _) = self.execute_on_operation(id, command, actor, lease_token, request_id).await?;
        Ok(outcome)
    }

    async fn execute_on_operation(
        &self,
        id: &str,
        command: OperationCommand,
        actor: Option<Actor>,
        lease_token: Option<String>,
        request_id: Option<&str>,
    ) -> Result<(OperationResult, Context), ApiError> {
        // A worker reporting step after step through this instance finds its run cached: the
        // step is decided on it with no read of the log (the append's expected version proves
        // it current). Anything that proof cannot settle is run again on the stream as stored.
        // Each half boxed: both inline would make this future (and a debug build's stack) twice
        // as large.
        if let Some(loaded) = self.cached_owned::<Operation>(id) {
            let on = Box::pin(self.prepare_on_operation(
                &loaded,
                command.clone(),
                actor.clone(),
                lease_token.clone(),
                request_id,
            ))
            .await?;
            if let Some(outcome) = Box::pin(self.state.handler.execute_cached(loaded, &on.command, &on.ctx)).await? {
                return Box::pin(self.finish_on_operation(id, on, outcome)).await;
            }
        }
        let loaded = self.load_operation(id).await?;
        let on = Box::pin(self.prepare_on_operation(&loaded, command, actor, lease_token, request_id)).await?;
        let outcome = Box::pin(self.state.handler.execute_loaded(loaded, &on.command, &on.ctx)).await?;
        Box::pin(self.finish_on_operation(id, on, outcome)).await
    }

    /// The context a command on `loaded` runs in (its actor: the caller's, or the lease's
    /// worker when a lease token is presented), and the command with the budgets a step must
    /// respect.
    async fn prepare_on_operation(
        &self,
        loaded: &Loaded<Operation>,
        mut command: OperationCommand,
        actor: Option<Actor>,
        lease_token: Option<String>,
        request_id: Option<&str>,
    ) -> Result<OnOperation, ApiError> {
        let actor = actor
            .or_else(|| {
                let lease = loaded.state.lease.as_ref();
                lease.filter(|_| lease_token.is_some()).map(|l| Actor::worker(l.worker_id.clone()))
            })
            .unwrap_or_else(|| self.user_actor());
        let ctx = self.context(&loaded.state.user_id, actor, request_id)?.with_lease_token(lease_token);
        let run = budgets::run_scope(&loaded.state);
        // Read once: the check before the step and the warning after it use the same budgets.
        let rows = match (&command, &run) {
            (OperationCommand::RecordStep(_), Some(run)) => budgets::of_run(self.state, run).await?,
            _ => Vec::new(),
        };
        if let (OperationCommand::RecordStep(step), Some(run)) = (&mut command, &run) {
            step.budgets = budgets::facts(&budgets::standings_among(self.state, run, &rows, ctx.now, true).await?);
        }
        Ok(OnOperation { stream_id: loaded.stream_id.clone(), ctx, command, run, rows })
    }

    /// After a command on an operation: stop the run at a budget's limit, wait for the read
    /// models, warn of budgets nearing theirs.
    async fn finish_on_operation(
        &self,
        id: &str,
        on: OnOperation,
        outcome: CommandOutcome<Operation>,
    ) -> Result<(OperationResult, Context), ApiError> {
        let OnOperation { stream_id, ctx, command, run, rows } = on;
        // A `requestId` that answered a command on another run is not this command's.
        check_replay(&outcome.appended, &stream_id)?;
        let mut position = outcome.last_position();
        let mut state = outcome.state;
        if let (OperationCommand::RecordStep(step), Some(run)) = (&command, &run)
            && !step.budgets.is_empty()
            && position > 0
            && !state.is_finished()
        {
            let stopped = budgets::stop_at_limit(self.state, &stream_id, run, &ctx).await?;
            position = position.max(stopped.last_position());
            state = stopped.state;
        }
        self.state.settle(position).await;
        if let OperationCommand::RecordStep(_) = &command
            && position > 0
            && !rows.is_empty()
            && let Err(e) = budgets::warn(self.state, &rows, ctx.now).await
        {
            // The step is recorded; the next one tries the warning again.
            tracing::warn!(error = %e, operation = id, "a budget warning could not be written");
        }
        Ok((OperationResult { state, position }, ctx))
    }

    /// A worker claims a run: the lease it took, with its token (a resent claim, same
    /// `request_id`, answers the same token).
    pub async fn claim_operation(
        &self,
        id: &str,
        worker_id: String,
        lease_secs: u32,
        request_id: Option<&str>,
    ) -> Result<(OperationResult, ClaimedLease), ApiError> {
        let actor = Some(Actor::worker(worker_id.clone()));
        let command = OperationCommand::Claim { worker_id, lease_secs };
        let (outcome, ctx) = self.execute_on_operation(id, command, actor, None, request_id).await?;
        let token = lease_token(&ctx);
        let hash = lease_token_hash(&token);
        match outcome.state.lease.as_ref().filter(|l| l.token_hash == hash) {
            Some(lease) => {
                let lease = ClaimedLease { token, worker_id: lease.worker_id.clone(), expires_at: lease.expires_at };
                Ok((outcome, lease))
            }
            // A resent claim whose lease has since been replaced or has ended.
            None => Err(ApiError::Domain(DomainError::LeaseToken {
                operation_id: id.to_string(),
                reason: "this claim's lease is no longer held",
            })),
        }
    }

    /// Append a message to a conversation; a run's assistant or tool message (`operationId`
    /// set) is a report on that run: while it holds a lease, only its holder writes it. Answers
    /// the conversation's owner and the position of the last event appended.
    pub async fn append_message(
        &self,
        topic_id: &str,
        message: ChatMessage,
        lease_token: Option<String>,
    ) -> Result<(String, i64), ApiError> {
        let loaded = self.load_owned::<Conversation>(topic_id).await?;
        let owner = loaded.state.user_id.clone();
        let mut actor = self.user_actor();
        let ctx = self.context(&owner, actor.clone(), None)?.with_lease_token(lease_token.clone());
        if let Some(op_id) = message.operation_id.as_deref()
            && matches!(message.role.as_str(), "assistant" | "tool")
        {
            // The run is named in the conversation owner's namespace.
            check_id("operationId", op_id)?;
            let op = self.state.handler.load_of::<Operation>(&owner, op_id).await?;
            if !op.state.exists() {
                return Err(ApiError::not_found("operation", op_id));
            }
            op.state.check_lease_token(&ctx)?;
            if let (Some(lease), Some(_)) = (&op.state.lease, &lease_token) {
                actor = Actor::worker(lease.worker_id.clone());
            }
        }
        let ctx = Context { actor, ..ctx };
        let command = ConversationCommand::AppendMessage(message);
        let outcome = self.state.handler.execute_stream::<Conversation>(&loaded.stream_id, &command, &ctx).await?;
        let position = outcome.last_position();
        self.state.settle(position).await;
        Ok((owner, position))
    }

    /// Put an interrupted run that may resume back into the queue (its conversation, when it
    /// has one, must still track it), in one atomic append with the conversation.
    pub async fn resume_operation(&self, id: &str, request_id: Option<&str>) -> Result<OperationResult, ApiError> {
        let loaded = self.load_operation(id).await?;
        let ctx = self.context(&loaded.state.user_id, self.user_actor(), request_id)?;
        let results = self
            .state
            .handler
            .execute_multi(&ctx, || async {
                let h = &self.state.handler;
                let op = h.load_stream::<Operation>(&loaded.stream_id).await?;
                let conversation = match op.state.topic_id() {
                    Some(t) => Some(h.load_of::<Conversation>(&op.state.user_id, t).await?),
                    None => None,
                };
                let resumed =
                    operation_resume::resume_operation(&op.state, conversation.as_ref().map(|c| &c.state), &ctx)?;
                let loaded = [Some(op.stream_id.as_str()), conversation.as_ref().map(|c| c.stream_id.as_str())];
                let writes = retarget(
                    resumed.stamp(&op.state, conversation.as_ref().map(|c| &c.state), &ctx),
                    loaded.into_iter().flatten(),
                );
                Ok(with_versions(writes, &op, conversation.as_ref(), None))
            })
            .await?;
        self.settled(&results, &loaded.stream_id).await
    }

    /// Cancel an operation and every unfinished descendant, in one atomic append.
    pub async fn cancel_operation(
        &self,
        id: &str,
        reason: Option<String>,
        request_id: Option<&str>,
    ) -> Result<OperationResult, ApiError> {
        let loaded = self.load_operation(id).await?;
        let ctx = self.context(&loaded.state.user_id, self.user_actor(), request_id)?;
        let results = self.cancel_with_descendants(&loaded.stream_id, reason, &ctx).await?;
        self.settled(&results, &loaded.stream_id).await
    }

    /// The answer of a multi-stream command on the operation in `stream`: a request id reused
    /// on another target is refused, the read models are waited for, and the operation is read
    /// as it now is.
    async fn settled(&self, results: &[AppendResult], stream: &str) -> Result<OperationResult, ApiError> {
        check_replay(results, stream)?;
        let position = results.iter().map(|r| r.last_position()).max().unwrap_or(0);
        self.state.settle(position).await;
        let state = self.state.handler.load_stream::<Operation>(stream).await?.state;
        Ok(OperationResult { state, position })
    }

    /// Cancel the operation in `stream` and every unfinished descendant (named in its owner's
    /// namespace, `ctx`'s user) in one append, under `ctx` (a user's, or a reactor's
    /// deterministic one). Does not check the caller nor wait for the read models.
    pub async fn cancel_with_descendants(
        &self,
        stream: &str,
        reason: Option<String>,
        ctx: &Context,
    ) -> Result<Vec<AppendResult>, CommandError> {
        self.state
            .handler
            .execute_multi(ctx, || async {
                let h = &self.state.handler;
                let root = h.load_stream::<Operation>(stream).await?;
                let mut descendants: Vec<Loaded<Operation>> = Vec::new();
                let mut queue: Vec<String> = root.state.child_ids().map(str::to_string).collect();
                while let Some(child) = queue.pop() {
                    if descendants.iter().any(|d| d.state.id() == child) {
                        continue;
                    }
                    let loaded = h.load_of::<Operation>(&ctx.user_id, &child).await?;
                    queue.extend(loaded.state.child_ids().map(str::to_string));
                    descendants.push(loaded);
                }
                let states: Vec<Operation> = descendants.iter().map(|d| d.state.clone()).collect();
                let parts = cancel_cascade::cancel_cascade(&root.state, &states, reason.clone(), ctx)?;
                let mut all: Vec<&Operation> = vec![&root.state];
                all.extend(states.iter());
                let writes = retarget(
                    cancel_cascade::stamp_cascade(&parts, &all, ctx),
                    std::iter::once(&root).chain(descendants.iter()).map(|l| l.stream_id.as_str()),
                );
                let versions: Vec<(String, i64)> = std::iter::once(&root)
                    .chain(descendants.iter())
                    .map(|l| (l.stream_id.clone(), l.version))
                    .collect();
                Ok(writes
                    .into_iter()
                    .map(|w| {
                        let v = versions.iter().find(|(s, _)| *s == w.stream_id).map_or(0, |(_, v)| *v);
                        (w, v)
                    })
                    .collect())
            })
            .await
    }
}

/// The writes with each part in the stream its aggregate was loaded from (`loaded`): the
/// domain names the owned streams, and an operation or conversation from before their ids were
/// per owner keeps its global one. Every stream of one decision is one owner's, so a part is
/// matched by kind and instance id.
pub(crate) fn retarget<'a>(mut writes: Vec<StreamWrite>, loaded: impl Iterator<Item = &'a str>) -> Vec<StreamWrite> {
    let loaded: Vec<&str> = loaded.collect();
    for w in &mut writes {
        let Some(target) = StreamKind::parse(&w.stream_id) else { continue };
        if let Some(stream) = loaded.iter().find(|s| StreamKind::parse(s) == Some(target)) {
            w.stream_id = (*stream).to_string();
        }
    }
    writes
}

fn with_versions(
    writes: Vec<StreamWrite>,
    operation: &Loaded<Operation>,
    conversation: Option<&Loaded<Conversation>>,
    parent: Option<&Loaded<Operation>>,
) -> Vec<(StreamWrite, i64)> {
    writes
        .into_iter()
        .map(|w| {
            let version = if w.stream_id == operation.stream_id {
                operation.version
            } else if conversation.is_some_and(|c| c.stream_id == w.stream_id) {
                conversation.map_or(0, |c| c.version)
            } else if parent.is_some_and(|p| p.stream_id == w.stream_id) {
                parent.map_or(0, |p| p.version)
            } else {
                0
            };
            (w, version)
        })
        .collect()
}
