//! No silent drops: when the domain refuses a command a reactor issued in answer to a fact, the
//! reactor hands the refusal here instead of logging it. It becomes a `reactor.command_refused`
//! event (stream `refusal-<refusalId>`, in the fact's chain) appended in one write with the
//! owner's notification (`agentlog_domain::refusals`), and it is counted in `/metrics`
//! (`agentlog_reactor_refusals_total{reactor, code}`).
//!
//! The refusal's ids derive from the refused command's id, so a reactor that meets the same
//! refusal again — after a restart, or in a second server — writes nothing new; only the
//! instance whose append wrote it counts it.

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
use crate::{error::ApiError, state::App};
use agentlog_eventlog::EventLogError;

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
    let rctx = {
        let mut rctx = Context::reacting_to(fact, refused.reactor, Actor::system(refused.reactor));
        rctx.command_id = derived_id("refusal", &ctx.command_id.to_string(), fact.recorded_at.timestamp_millis());
        rctx
    };
    let reason = Reason { code: error.code().as_str(), message: error.to_string() };
    write(state, fact, ctx, rctx, refused, reason, notification).await
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
    code: &str,
    message: String,
) -> Result<(), ReactorError> {
    let version = state.store.stream_version(stream_id).await?;
    let Some(fact) = state.store.read_stream(stream_id, version.max(1), 1).await?.into_iter().next() else {
        return Ok(());
    };
    let mut rctx = Context::reacting_to(&fact, refused.reactor, Actor::system(refused.reactor));
    rctx.now = ctx.now;
    rctx.command_id = derived_id("refusal", &ctx.command_id.to_string(), ctx.now.timestamp_millis());
    match write(state, &fact, ctx, rctx, refused, Reason { code, message }, None).await {
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
/// instance's append wrote it.
async fn write(
    state: &App,
    fact: &RecordedEvent,
    ctx: &Context,
    mut rctx: Context,
    refused: Refused,
    Reason { code, message }: Reason<'_>,
    notification: Option<CreateNotification>,
) -> Result<(), ReactorError> {
    tracing::warn!(
        reactor = refused.reactor,
        command = refused.command,
        stream = %refused.target_stream_id,
        fact = fact.position,
        code,
        error = %message,
        "a reactor's command was refused; recorded"
    );
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
    let notification = notification.unwrap_or_else(|| refusal_notification(&record));
    rctx.user_id = record.user_id.clone();
    let refusal_stream = record.refusal_id.clone();
    let user = notification.user_id.clone();
    let results = state
        .handler
        .execute_multi(&rctx, || async {
            let h = &state.handler;
            let refusal = h.load::<Refusal>(&refusal_stream).await?;
            let recorded = refusal.state.decide(&RefusalCommand::Record(record.clone()), &rctx)?;
            let inbox = h.load::<Notifications>(&user).await?;
            let told = inbox.state.decide(&NotificationCommand::Create(notification.clone()), &rctx)?;
            let mut stamper = rctx.stamper();
            let refusal_part = StreamEvents::new(refusal.stream_id.clone(), recorded);
            let inbox_part = StreamEvents::new(inbox.stream_id.clone(), told);
            Ok(vec![
                (stamper.write(&refusal.state, &refusal_part), refusal.version),
                (stamper.write(&inbox.state, &inbox_part), inbox.version),
            ])
        })
        .await?;
    if results.iter().any(|r| !r.duplicate && !r.positions.is_empty()) {
        state.metrics.refused(refused.reactor, code);
    }
    Ok(())
}
