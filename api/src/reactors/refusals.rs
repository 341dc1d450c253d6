//! No silent drops: when the domain refuses a command a reactor issued in answer to a fact, the
//! reactor hands the refusal here instead of logging it. It becomes a `reactor.command_refused`
//! event (stream `refusal-<refusalId>`, in the fact's chain) appended in one write with the
//! owner's notification (`agentlog_domain::refusal`), and it is counted in `/metrics`
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
    notification::{CreateNotification, NotificationCommand, Notifications},
    refusal::{RecordRefusal, Refusal, RefusalCommand, RefusedFact, refusal_id, refusal_notification},
};

use crate::{error::ApiError, state::AppState};

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
    state: &AppState,
    fact: &RecordedEvent,
    ctx: &Context,
    refused: Refused,
    error: &DomainError,
) -> Result<(), ApiError> {
    record_with(state, fact, ctx, refused, error, None).await
}

/// [`record`], telling the owner with `notification` instead of the default one.
pub async fn record_with(
    state: &AppState,
    fact: &RecordedEvent,
    ctx: &Context,
    refused: Refused,
    error: &DomainError,
    notification: Option<CreateNotification>,
) -> Result<(), ApiError> {
    let code = error.code().as_str();
    tracing::warn!(
        reactor = refused.reactor,
        command = refused.command,
        stream = %refused.target_stream_id,
        fact = fact.position,
        code,
        error = %error,
        "a reactor's command was refused; recorded"
    );
    let record = RecordRefusal {
        refusal_id: refusal_id(ctx.command_id),
        reactor: refused.reactor.to_string(),
        command: refused.command.to_string(),
        target_stream_id: refused.target_stream_id,
        code: code.to_string(),
        message: error.to_string(),
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
    let mut rctx = Context::reacting_to(fact, refused.reactor, Actor::system(refused.reactor));
    rctx.command_id = derived_id("refusal", &ctx.command_id.to_string(), fact.recorded_at.timestamp_millis());
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
