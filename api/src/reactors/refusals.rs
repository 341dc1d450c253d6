//! No silent drops: when the domain refuses a command a reactor issued in answer to a fact, the
//! reactor hands the refusal here instead of logging it. It becomes a `reactor.command_refused`
//! event (stream `refusal-<refusalId>`, in the fact's chain) appended in one write with the
//! owner's notification (`agentlog_domain::refusals`), and it is counted in `/metrics`
//! (`agentlog_reactor_refusals_total{reactor, code}`).
//!
//! The refusal's ids derive from the refused command's id, so a reactor that meets the same
//! refusal again — after a restart, or in a second server — writes nothing new; only the
//! instance whose append wrote it counts it.
//!
//! A refusal by a budget at its limit (LIMIT) is told once per budget and period
//! ([`budgets::limit_notification`]): every refused fire, tick or dispatch is still recorded on
//! its chain, but only the first of the period brings the notification.

use agentlog_domain::{
    aggregate::{Aggregate, StreamEvents},
    context::Context,
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    ids::derived_id,
    notifications::{CreateNotification, NotificationCommand, Notifications},
    refusals::{RecordRefusal, Refusal, RefusalCommand, RefusedFact, refusal_id, refusal_notification},
};

use crate::reactors::error::ReactorError;
use crate::{commands::budgets, error::ApiError, state::App};
use agentlog_eventlog::{CommandError, EventLogError};

/// What a reactor asked that was refused, and whom it concerns.
#[derive(Debug, Clone)]
pub struct Refused {
    /// The reactor (its `NAME`).
    pub reactor: &'static str,
    /// `<aggregate>.<command>`, e.g. `group.advance_orchestration`.
    pub command: &'static str,
    /// The stream that refused it.
    pub target_stream_id: String,
    /// The run it concerns.
    pub operation_id: Option<String>,
    /// The task it concerns.
    pub task_id: Option<String>,
    /// The owner, who is told.
    pub user_id: String,
}

impl Refused {
    /// A refusal of `reactor`'s `command` on `target_stream_id`, concerning the owner of `fact`.
    pub fn new(reactor: &'static str, command: &'static str, target_stream_id: String, fact: &RecordedEvent) -> Self {
        Self {
            reactor,
            command,
            target_stream_id,
            operation_id: None,
            task_id: None,
            user_id: fact.metadata.user_id.clone(),
        }
    }

    /// A refusal of a clock pass's `command` on `target_stream_id`, owned by `user_id`.
    pub fn of(reactor: &'static str, command: &'static str, target_stream_id: String, user_id: &str) -> Self {
        Self { reactor, command, target_stream_id, operation_id: None, task_id: None, user_id: user_id.to_string() }
    }

    /// The same, about run `operation_id`.
    pub fn operation(mut self, operation_id: impl Into<String>) -> Self {
        self.operation_id = Some(operation_id.into());
        self
    }

    /// The same, about task `task_id`.
    pub fn task(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }
}

/// Record that the command `ctx` issued in answer to `fact` was refused with `error`, and tell
/// the owner with the default notification ([`refusal_notification`]).
pub async fn record(
    state: &App,
    fact: &RecordedEvent,
    ctx: &Context,
    refused: Refused,
    error: &DomainError,
) -> Result<(), ReactorError> {
    record_with(state, fact, ctx, refused, error, None).await
}

/// [`record`], telling the owner with `notification` instead of the default one.
pub async fn record_with(
    state: &App,
    fact: &RecordedEvent,
    ctx: &Context,
    refused: Refused,
    error: &DomainError,
    notification: Option<CreateNotification>,
) -> Result<(), ReactorError> {
    let rctx = refusal_context(fact, ctx, &refused);
    let reason = Reason { code: error.code().as_str(), message: error.to_string() };
    let told = match notification {
        Some(n) => Told::Own(n),
        None => told_of(state, error, &refused.user_id, rctx.now).await?,
    };
    write(state, fact, ctx, rctx, refused, reason, told).await
}

/// [`record`] for a write the log itself refused (a payload past its bound, an id too long):
/// like a domain refusal it cannot succeed however often it is tried, so a reactor records it,
/// tells the owner and moves on, instead of stopping on that fact for every user.
pub async fn record_log_refusal(
    state: &App,
    fact: &RecordedEvent,
    ctx: &Context,
    refused: Refused,
    error: agentlog_eventlog::ValidationError,
) -> Result<(), ReactorError> {
    let rctx = refusal_context(fact, ctx, &refused);
    let error = ApiError::from(CommandError::Log(EventLogError::Validation(error)));
    let reason = Reason { code: error.code(), message: error.to_string() };
    write(state, fact, ctx, rctx, refused, reason, Told::Default).await
}

/// The refusal's own context: in the fact's chain, its ids derived from the refused command's.
fn refusal_context(fact: &RecordedEvent, ctx: &Context, refused: &Refused) -> Context {
    let mut rctx = Context::reacting_to(fact, refused.reactor, Actor::system(refused.reactor));
    rctx.command_id = derived_id("refusal", &ctx.command_id.to_string(), fact.recorded_at.timestamp_millis());
    rctx
}

/// How the owner is told of a refusal.
enum Told {
    /// With the default notification, keyed on the refusal.
    Default,
    /// With this notification, keyed on the refusal.
    Own(CreateNotification),
    /// With this notification, keyed on something many refusals share (a budget's period): a
    /// refusal that finds it already told is recorded alone.
    Shared(CreateNotification),
}

/// How the owner is told of a refusal with `error` at `now`: once per budget and period for a
/// budget at its limit, else by the default notification.
async fn told_of(
    state: &App,
    error: &DomainError,
    user_id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Told, ReactorError> {
    let DomainError::BudgetReached { budget_id, .. } = error else { return Ok(Told::Default) };
    Ok(budgets::limit_notification(state, budget_id, user_id, now).await?.map_or(Told::Default, Told::Shared))
}

/// Record that a clock pass's command (a cron fire, a scheduled or heartbeat run) was refused
/// with `code` and `message`. A clock pass answers no fact, so the refusal hangs in the chain of
/// the aggregate that asked (`stream_id`'s latest event) and its ids derive from the pass's
/// context for the slot (`ctx`): however many passes, on however many instances, meet the same
/// refused slot, it is recorded and told once.
pub async fn record_for_pass(
    state: &App,
    stream_id: &str,
    ctx: &Context,
    refused: Refused,
    error: &ApiError,
) -> Result<(), ReactorError> {
    let version = state.store.stream_version(stream_id).await?;
    let Some(fact) = state.store.read_stream(stream_id, version.max(1), 1).await?.into_iter().next() else {
        return Ok(());
    };
    let mut rctx = Context::reacting_to(&fact, refused.reactor, Actor::system(refused.reactor));
    rctx.now = ctx.now;
    rctx.command_id = derived_id("refusal", &ctx.command_id.to_string(), ctx.now.timestamp_millis());
    let told = match error {
        ApiError::Domain(e) => told_of(state, e, &refused.user_id, ctx.now).await?,
        _ => Told::Default,
    };
    let reason = Reason { code: error.code(), message: error.to_string() };
    match write(state, &fact, ctx, rctx, refused, reason, told).await {
        // The same slot's refusal, recorded by an earlier pass whose latest event was another.
        Err(
            ReactorError::Log(EventLogError::IdempotencyConflict { .. })
            | ReactorError::Command(
                ApiError::Log(EventLogError::IdempotencyConflict { .. })
                | ApiError::Domain(DomainError::AlreadyExists { .. }),
            ),
        ) => Ok(()),
        other => other,
    }
}

/// Why a command was refused: its code and the domain's message.
struct Reason<'a> {
    code: &'a str,
    message: String,
}

/// Append the refusal and the owner's notification in one write, as `rctx`; count it when this
/// instance's append wrote it. A shared notification already in the log (another refusal of
/// the same budget and period told it) makes the append an idempotency conflict: the refusal is
/// then appended alone.
async fn write(
    state: &App,
    fact: &RecordedEvent,
    ctx: &Context,
    mut rctx: Context,
    refused: Refused,
    Reason { code, message }: Reason<'_>,
    told: Told,
) -> Result<(), ReactorError> {
    let record = RecordRefusal {
        refusal_id: refusal_id(ctx.command_id),
        reactor: refused.reactor.to_string(),
        command: refused.command.to_string(),
        target_stream_id: refused.target_stream_id,
        code: code.to_string(),
        message,
        fact: RefusedFact {
            event_id: fact.event_id.to_string(),
            event_type: fact.event_type.clone(),
            stream_id: fact.stream_id.clone(),
            position: fact.position,
        },
        operation_id: refused.operation_id,
        task_id: refused.task_id,
        user_id: refused.user_id,
    };
    let (notification, shared) = match told {
        Told::Default => (refusal_notification(&record), false),
        Told::Own(n) => (n, false),
        Told::Shared(n) => (n, true),
    };
    rctx.user_id = record.user_id.clone();
    let results = match append(state, &rctx, &record, Some(&notification)).await {
        Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) if shared => {
            append(state, &rctx, &record, None).await?
        }
        other => other?,
    };
    // Logged once, by the pass that wrote it: a pass meeting a slot already refused (every
    // second, until the slot passes) says nothing.
    if results.iter().any(|r| !r.duplicate && !r.positions.is_empty()) {
        tracing::warn!(
            reactor = record.reactor,
            command = record.command,
            stream = %record.target_stream_id,
            fact = fact.position,
            code,
            error = %record.message,
            "a reactor's command was refused; recorded"
        );
        state.metrics.refused(refused.reactor, code);
    }
    Ok(())
}

/// Append `record` to its refusal stream and, when given, `notification` to its user's inbox,
/// in one write.
async fn append(
    state: &App,
    rctx: &Context,
    record: &RecordRefusal,
    notification: Option<&CreateNotification>,
) -> Result<Vec<agentlog_eventlog::AppendResult>, CommandError> {
    state
        .handler
        .execute_multi(rctx, || async {
            let h = &state.handler;
            let refusal = h.load::<Refusal>(&record.refusal_id).await?;
            let recorded = refusal.state.decide(&RefusalCommand::Record(record.clone()), rctx)?;
            let mut stamper = rctx.stamper();
            let refusal_part = StreamEvents::new(refusal.stream_id.clone(), recorded);
            let mut writes = vec![(stamper.write(&refusal.state, &refusal_part), refusal.version)];
            if let Some(notification) = notification {
                let inbox = h.load::<Notifications>(&notification.user_id).await?;
                let told = inbox.state.decide(&NotificationCommand::Create(notification.clone()), rctx)?;
                let inbox_part = StreamEvents::new(inbox.stream_id.clone(), told);
                writes.push((stamper.write(&inbox.state, &inbox_part), inbox.version));
            }
            Ok(writes)
        })
        .await
}
