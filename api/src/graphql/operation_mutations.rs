//! Operation mutations: the worker's and the human's commands on a run, and what they answer.

use crate::graphql::request::request_digest;
use agentlog_domain::operations::{Artifact, MAX_LEASE_SECS};
use agentlog_domain::operations::{
    CardAnswer, HitlCard, OperationCommand, OperationError, OperationKind, Phase, Plan, StepReport, Todo, ToolCall,
};
use agentlog_domain::values::ReviewScore;
use agentlog_domain::values::Usage;
use async_graphql::{Context, Json, Object, SimpleObject};
use chrono::{DateTime, Utc};

use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::graphql::wire::check_nested;
use crate::graphql::wire::decode;
use crate::{
    commands::Commands,
    error::{ApiError, GqlResult},
};

use super::operation_inputs::*;
use super::operations::*;

/// What an operation mutation answers.
#[derive(SimpleObject)]
pub struct OperationPayload {
    /// The operation after the command.
    pub operation: Operation,
    /// Position of the last event appended (0 when nothing changed); subscribe from here.
    pub position: i64,
}

/// A lease a worker holds on a run.
#[derive(SimpleObject)]
#[graphql(name = "Lease")]
pub struct LeaseNode {
    /// Present it as `leaseToken` on every report on the run; it stops working when the
    /// lease expires or another claim replaces it.
    pub token: String,
    /// The worker holding it.
    pub worker_id: String,
    /// When it runs out unless renewed.
    pub expires_at: DateTime<Utc>,
}

/// What `claimOperation` answers.
#[derive(SimpleObject)]
pub struct ClaimPayload {
    /// The operation after the claim.
    pub operation: Operation,
    /// Position of the last event appended.
    pub position: i64,
    /// The lease taken.
    pub lease: LeaseNode,
}

/// Operation mutations.
#[derive(Default)]
pub struct OperationsMutation;

async fn run(
    ctx: &Context<'_>,
    id: &str,
    owner: Option<&str>,
    command: OperationCommand,
    lease_token: Option<String>,
    request_id: Option<String>,
) -> GqlResult<OperationPayload> {
    let who = caller(ctx)?;
    let out = Commands::new(app(ctx), who)
        .with_request_digest(request_digest(ctx))
        .owned_by(owner)
        .operation_command(id, command, None, lease_token, request_id.as_deref())
        .await?;
    Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
}

#[Object]
impl OperationsMutation {
    /// Start an operation (a conversation allows one unfinished at a time: CONVERSATION_BUSY).
    async fn start_operation(
        &self,
        ctx: &Context<'_>,
        input: StartOperationInput,
        #[graphql(
            desc = "Whose run it is (its id is in their namespace): an admin starting one for another user names them (anyone else naming another user: FORBIDDEN); absent: the caller's own."
        )]
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        let create = input.into_create()?;
        let out = Commands::new(app(ctx), who)
            .with_request_digest(request_digest(ctx))
            .start_operation(create, owner_id.as_deref(), None, request_id.as_deref())
            .await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }

    /// A sub-agent: an operation whose parent is `parentOperationId`. While the parent holds a
    /// lease, only its holder spawns: `leaseToken` is the parent's (CONFLICT otherwise). It runs
    /// in its parent's conversation (another `topicId`: VALIDATION); at most 3 unfinished
    /// background ones per conversation, and at most `--max-subagent-depth` (default 5) levels
    /// below the top-level run (LIMIT beyond either). Its end is delivered to its parent
    /// (`asyncResults`), or, when the parent has ended, to the parent's conversation as a
    /// `taskCallback` completion notice.
    async fn spawn_subagent(
        &self,
        ctx: &Context<'_>,
        parent_operation_id: String,
        input: StartOperationInput,
        lease_token: Option<String>,
        request_id: Option<String>,
        #[graphql(
            desc = "Whose operation `parentOperationId` is (the sub-agent is theirs too): an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        // Another user's parent is unknown here, exactly as a missing one.
        let Some(owner) = who.namespace(owner_id.as_deref()).map(str::to_string) else {
            return Err(ApiError::not_found("operation", parent_operation_id).into());
        };
        let mut create = input.into_create()?;
        create.parent_operation_id = Some(parent_operation_id);
        create.kind = OperationKind::Subagent;
        let out = Commands::new(app(ctx), who)
            .with_request_digest(request_digest(ctx))
            .start_operation(create, Some(&owner), lease_token, request_id.as_deref())
            .await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }

    /// A worker claims the operation with a lease (`leaseSecs` 1–3600, default 300). The answer's
    /// `lease.token` must accompany every report on the run until the lease ends; a claim
    /// while another worker's lease is valid is refused with CONFLICT. A new claim by the
    /// holder replaces its token; a resent claim (same `requestId`) answers the same token.
    async fn claim_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        worker_id: String,
        lease_secs: Option<i32>,
        request_id: Option<String>,
    ) -> GqlResult<ClaimPayload> {
        let lease_secs = lease(lease_secs)?;
        let who = caller(ctx)?;
        let (out, lease) = Commands::new(app(ctx), who)
            .with_request_digest(request_digest(ctx))
            .owned_by(owner_id.as_deref())
            .claim_operation(&id, worker_id, lease_secs, request_id.as_deref())
            .await?;
        Ok(ClaimPayload {
            operation: Operation::from(&out.state),
            position: out.position,
            lease: LeaseNode { token: lease.token, worker_id: lease.worker_id, expires_at: lease.expires_at },
        })
    }

    /// The lease holder extends its lease (`leaseSecs` from now, 1–3600, default 300); the
    /// token stays the same.
    async fn renew_lease(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        worker_id: String,
        lease_token: String,
        lease_secs: Option<i32>,
    ) -> GqlResult<OperationPayload> {
        let lease_secs = lease(lease_secs)?;
        run(
            ctx,
            &id,
            owner_id.as_deref(),
            OperationCommand::RenewLease { worker_id, lease_secs },
            Some(lease_token),
            None,
        )
        .await
    }

    /// The agent moved to another phase (lease holder only).
    async fn change_phase(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        phase: PhaseInput,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, owner_id.as_deref(), OperationCommand::ChangePhase(Phase::from(phase)), Some(lease_token), None)
            .await
    }

    /// A step finished: its phase, tool calls and usage (leave usage fields out when
    /// unmeasured). Lease holder only.
    #[allow(clippy::too_many_arguments)]
    async fn report_step(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        phase: PhaseInput,
        tool_calls: Option<Vec<ToolCallInput>>,
        usage: Option<UsageInput>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let usage = usage.unwrap_or_default();
        let step = StepReport {
            phase: Phase::from(phase),
            tool_calls: tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|t| ToolCall { id: t.id, name: t.name, status: t.status, arguments: t.arguments.map(|a| a.0) })
                .collect(),
            usage: Usage {
                input_tokens: non_negative("usage.inputTokens", usage.input_tokens)?,
                output_tokens: non_negative("usage.outputTokens", usage.output_tokens)?,
                total_tokens: non_negative("usage.totalTokens", usage.total_tokens)?,
                cost_micros: non_negative("usage.costMicros", usage.cost_micros)?,
            },
            budgets: Vec::new(),
        };
        run(ctx, &id, owner_id.as_deref(), OperationCommand::RecordStep(step), Some(lease_token), request_id).await
    }

    /// Replace the agent's plan (`{explanation?, steps: [{text, status}]}`). Lease holder only.
    async fn update_plan(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        plan: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        check_nested::<Vec<agentlog_domain::operations::PlanStep>>("plan", &plan.0, "steps")?;
        let plan: Plan = decode("plan", plan)?;
        run(ctx, &id, owner_id.as_deref(), OperationCommand::UpdatePlan(plan), Some(lease_token), None).await
    }

    /// Replace the agent's todo list (`[{id, text, status}]`, ids unique). Lease holder only.
    async fn update_todos(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        todos: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let todos: Vec<Todo> = decode("todos", todos)?;
        run(ctx, &id, owner_id.as_deref(), OperationCommand::UpdateTodos(todos), Some(lease_token), None).await
    }

    /// Record an artifact (`{artifactId, title, kind, sizeBytes?, contentRef}`), once the run
    /// started. While the run holds a lease, only its holder records one (`leaseToken`).
    async fn record_artifact(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: Option<String>,
        artifact: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let artifact: Artifact = decode("artifact", artifact)?;
        run(ctx, &id, owner_id.as_deref(), OperationCommand::RecordArtifact(artifact), lease_token, None).await
    }

    /// Record a review score (`{rubricId, score 0–100, passed, reason?}`), also after the run
    /// ended. While the run holds a lease, only its holder records one (`leaseToken`).
    async fn record_score(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: Option<String>,
        score: Json<serde_json::Value>,
    ) -> GqlResult<OperationPayload> {
        let score: ReviewScore = decode("score", score)?;
        run(ctx, &id, owner_id.as_deref(), OperationCommand::RecordScore(score), lease_token, None).await
    }

    /// Ask a human: the operation waits on the card (`{cardId, title, body?, kind: choice |
    /// input | confirm | form, options / fields, timeout?}`) and releases its lease; once
    /// answered, a worker claims it again. Lease holder only.
    async fn ask_human(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        card: Json<serde_json::Value>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let card: HitlCard = decode("card", card)?;
        run(ctx, &id, owner_id.as_deref(), OperationCommand::AskHuman(card), Some(lease_token), request_id).await
    }

    /// A human answers the pending card (`{kind, values | text | confirmed}`).
    async fn answer_card(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        card_id: String,
        answer: Json<serde_json::Value>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let answer: CardAnswer = decode("answer", answer)?;
        run(ctx, &id, owner_id.as_deref(), OperationCommand::AnswerCard { card_id, answer }, None, request_id).await
    }

    /// Wait for async tool calls or dispatched children (a barrier); releases the lease, and a
    /// worker claims the run again once every key reported. Lease holder only.
    async fn await_async(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        keys: Vec<String>,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, owner_id.as_deref(), OperationCommand::AwaitAsync { keys }, Some(lease_token), None).await
    }

    /// An async tool reported its result.
    async fn receive_async_result(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        key: String,
        success: bool,
        result: Option<String>,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, owner_id.as_deref(), OperationCommand::ReceiveAsyncResult { key, success, result }, None, None)
            .await
    }

    /// The worker finished the run. A task run's `handoff` becomes its topic's hand-off (the
    /// task lifecycle reacts to the completion) and the next run starts from it; its `result`
    /// is the run's last message. `briefJudgement` is the worker's own judge's verdict on
    /// whether the run deserves a result brief; without it the default rule decides (a failed
    /// run always gets an error brief; a task with review enabled none; otherwise a result
    /// brief when `result` has at least 16 characters). Lease holder only.
    #[allow(clippy::too_many_arguments)]
    async fn complete_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        result: Option<String>,
        handoff: Option<HandoffInput>,
        brief_judgement: Option<bool>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let handoff = handoff.map(HandoffInput::into_domain);
        run(
            ctx,
            &id,
            owner_id.as_deref(),
            OperationCommand::Complete { result, handoff, brief_judgement },
            Some(lease_token),
            request_id,
        )
        .await
    }

    /// The worker reports failure. Lease holder only.
    #[allow(clippy::too_many_arguments)]
    async fn fail_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        lease_token: String,
        message: String,
        error_type: Option<String>,
        code: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let error = OperationError { message, error_type, code };
        run(ctx, &id, owner_id.as_deref(), OperationCommand::Fail(error), Some(lease_token), request_id).await
    }

    /// Stop it from outside.
    async fn interrupt_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        reason: String,
        #[graphql(default)] can_resume: bool,
    ) -> GqlResult<OperationPayload> {
        run(ctx, &id, owner_id.as_deref(), OperationCommand::Interrupt { reason, can_resume }, None, None).await
    }

    /// Put an interrupted run whose interruption allows it (`canResume`: a lease expiry, or an
    /// `interruptOperation(canResume: true)`) back into the queue: status `running` with no
    /// lease, announced by `workAvailable`, claimed again by a worker; its history is kept. A
    /// run that cannot resume, or whose conversation has started another run since, is refused
    /// with CONFLICT.
    async fn resume_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        let out = Commands::new(app(ctx), who)
            .with_request_digest(request_digest(ctx))
            .owned_by(owner_id.as_deref())
            .resume_operation(&id, request_id.as_deref())
            .await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }

    /// Cancel it and every unfinished descendant.
    async fn cancel_operation(
        &self,
        ctx: &Context<'_>,
        id: String,
        #[graphql(
            desc = "Whose operation `id` is: an admin acting on another user's names them; absent: the caller's own."
        )]
        owner_id: Option<String>,
        reason: Option<String>,
        request_id: Option<String>,
    ) -> GqlResult<OperationPayload> {
        let who = caller(ctx)?;
        let out = Commands::new(app(ctx), who)
            .with_request_digest(request_digest(ctx))
            .owned_by(owner_id.as_deref())
            .cancel_operation(&id, reason, request_id.as_deref())
            .await?;
        Ok(OperationPayload { operation: Operation::from(&out.state), position: out.position })
    }
}

fn lease(secs: Option<i32>) -> Result<u32, ApiError> {
    match secs {
        None => Ok(300),
        Some(s) if s >= 1 && s.unsigned_abs() <= MAX_LEASE_SECS => Ok(s.unsigned_abs()),
        Some(_) => Err(ApiError::validation("leaseSecs", format!("must be between 1 and {MAX_LEASE_SECS}"))),
    }
}
