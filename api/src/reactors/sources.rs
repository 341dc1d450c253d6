//! Signal sources: source → policy → signal → handler → action → result, each an event on the
//! source's stream (`source-<sourceId>`) carrying the source's chain.
//!
//! Three registries, as upstream (`agentlog_domain::signal::registry`): source processors
//! (a source's type → the signals it is worth), signal processors (a signal's type → the actions
//! it calls for) and action handlers (an action's type → what carries it out). Each has
//! several entries per type, run in registration order. The processors are the domain's pure
//! built-ins ([`agentlog_domain::signal::processors`]); the action handlers are here because they
//! do I/O.
//!
//! Each stage is its own fact (`signal.source_received`, `signal.emitted`,
//! `signal.action_dispatched`), and each reaction's command id derives from the fact and the
//! registry entry, so re-reacting after a crash or in a second server appends nothing new.

use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    notifications::{CreateNotification, NotificationCommand, Notifications},
    signal::{
        ActionStatus, Source, SourceCommand, SourceEvent,
        processors::{self, CREATE_NOTIFICATION, RECORD_OUTCOME},
        registry::Registry,
        source::{ActionDispatched, ActionError},
    },
};
use agentlog_eventlog::{CommandError, EventLogError};
use serde_json::Value;

use super::refusals;
use super::refusals::Refused;
use super::signal_bus;
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::state::App;

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "signal-sources";

/// The three stages.
pub const FACTS: [&str; 3] = ["signal.source_received", "signal.emitted", "signal.action_dispatched"];

/// What an action handler reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ActionOutcome {
    /// Done, with a detail for the record.
    Applied(String),
    /// Deliberately not done.
    Skipped(String),
    /// Failed.
    Failed(ActionError),
}

/// An action handler: carries out one action of its type.
#[derive(Debug, Clone, Copy)]
pub struct ActionHandler {
    /// Its id.
    pub id: &'static str,
    /// What it does.
    pub kind: HandlerKind,
}

/// The built-in handlers (an enum rather than boxed closures: each is one async function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerKind {
    /// Create a notification for the source's owner.
    Notify,
    /// Acknowledge: the dispatched action is the record.
    Record,
}

/// The built-in action handlers.
pub fn action_handlers() -> Registry<ActionHandler> {
    let mut r = Registry::default();
    r.register(CREATE_NOTIFICATION, ActionHandler { id: "notification", kind: HandlerKind::Notify })
        .register(RECORD_OUTCOME, ActionHandler { id: "outcome-record", kind: HandlerKind::Record });
    r
}

/// Signal sources as a log follower.
pub struct Sources;

impl Reactor for Sources {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &FACTS;

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        // Every stage appends to the source's own stream (its owner's).
        let source_id = fact.stream_id.clone();
        match signal_bus::decode::<SourceEvent>(fact)? {
            SourceEvent::Received(received) => {
                for processor in processors::source_processors().matches(&received.source_type) {
                    for (i, plan) in (processor.handle)(&received).into_iter().enumerate() {
                        let command = SourceCommand::EmitSignal {
                            signal_type: plan.signal_type,
                            policy_id: processor.id.to_string(),
                            payload: plan.payload,
                        };
                        append(state, fact, &source_id, &format!("{}#{i}", processor.id), command).await?;
                    }
                }
            }
            SourceEvent::SignalEmitted(signal) => {
                for processor in processors::signal_processors().matches(&signal.signal_type) {
                    for (i, plan) in (processor.handle)(&signal).into_iter().enumerate() {
                        let command = SourceCommand::DispatchAction {
                            signal_id: signal.signal_id.clone(),
                            action_type: plan.action_type,
                            payload: plan.payload,
                        };
                        append(state, fact, &source_id, &format!("{}#{i}", processor.id), command).await?;
                    }
                }
            }
            SourceEvent::ActionDispatched(action) => {
                let handlers = action_handlers().matches(&action.action_type);
                let outcome = if handlers.is_empty() {
                    ActionOutcome::Skipped(format!("no handler for {}", action.action_type))
                } else {
                    let mut outcome = ActionOutcome::Skipped("nothing to do".into());
                    for handler in handlers {
                        outcome = carry_out(state, fact, &action, handler).await?;
                        if matches!(outcome, ActionOutcome::Failed(_)) {
                            break;
                        }
                    }
                    outcome
                };
                let (status, detail, error) = match outcome {
                    ActionOutcome::Applied(d) => (ActionStatus::Applied, Some(d), None),
                    ActionOutcome::Skipped(d) => (ActionStatus::Skipped, Some(d), None),
                    ActionOutcome::Failed(e) => (ActionStatus::Failed, None, Some(e)),
                };
                let command = SourceCommand::RecordActionResult {
                    action_id: action.action_id.clone(),
                    status,
                    attempt: 1,
                    detail,
                    error,
                };
                append(state, fact, &source_id, "result", command).await?;
            }
            _ => {}
        }
        Ok(())
    }
}

async fn append(
    state: &App,
    fact: &RecordedEvent,
    stream_id: &str,
    step: &str,
    command: SourceCommand,
) -> Result<(), ReactorError> {
    let ctx = Context::reacting_to(fact, &format!("{NAME}:{step}"), Actor::system(NAME));
    match state.handler.execute_stream::<Source>(stream_id, &command, &ctx).await {
        Ok(_) | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => Ok(()),
        // Recorded already (a re-run after a crash).
        Err(CommandError::Domain(DomainError::AlreadyFinished { .. })) => Ok(()),
        Err(CommandError::Domain(e)) => {
            let what = command_name(&command);
            refusals::record(state, fact, &ctx, Refused::new(NAME, what, stream_id.to_string(), fact), &e).await
        }
        // The log refused the write itself (an action past the payload bound): no retry passes.
        Err(CommandError::Log(EventLogError::Validation(v))) => {
            let refused = Refused::new(NAME, command_name(&command), stream_id.to_string(), fact);
            refusals::record_log_refusal(state, fact, &ctx, refused, v).await
        }
        Err(e) => Err(e.into()),
    }
}

/// The refusal's name for `command`.
fn command_name(command: &SourceCommand) -> &'static str {
    match command {
        SourceCommand::Receive { .. } => "source.receive",
        SourceCommand::EmitSignal { .. } => "source.emit_signal",
        SourceCommand::DispatchAction { .. } => "source.dispatch_action",
        SourceCommand::RecordActionResult { .. } => "source.record_action_result",
    }
}

async fn carry_out(
    state: &App,
    fact: &RecordedEvent,
    action: &ActionDispatched,
    handler: ActionHandler,
) -> Result<ActionOutcome, ReactorError> {
    match handler.kind {
        HandlerKind::Record => Ok(ActionOutcome::Applied(format!("recorded by {}", handler.id))),
        HandlerKind::Notify => {
            let user = fact.metadata.user_id.clone();
            let p = &action.payload;
            let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
            let notification = CreateNotification {
                user_id: user.clone(),
                category: text("category").unwrap_or_else(|| "signal".into()),
                notification_type: text("type").unwrap_or_else(|| "signal".into()),
                title: text("title").unwrap_or_else(|| action.action_type.clone()),
                body: text("body").unwrap_or_default(),
                dedupe_key: Some(text("dedupeKey").unwrap_or_else(|| action.action_id.clone())),
                action_url: text("actionUrl").or_else(|| text("operationId").map(|op| format!("/operations/{op}"))),
                metadata: Some(serde_json::json!({ "actionId": action.action_id, "signalId": action.signal_id })),
            };
            let ctx = Context::reacting_to(fact, &format!("{NAME}:{}", handler.id), Actor::system(NAME));
            let command = NotificationCommand::Create(notification);
            match state.handler.execute::<Notifications>(&user, &command, &ctx).await {
                Ok(_) => Ok(ActionOutcome::Applied("notification created".into())),
                Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {
                    Ok(ActionOutcome::Skipped("deduplicated".into()))
                }
                Err(CommandError::Domain(e)) => Ok(ActionOutcome::Failed(ActionError {
                    code: "refused".into(),
                    message: e.to_string(),
                    retriable: Some(false),
                    retry_after_ms: None,
                })),
                Err(e) => Err(e.into()),
            }
        }
    }
}
