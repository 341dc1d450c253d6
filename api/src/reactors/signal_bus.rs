//! The signal bus: runs the domain's built-in policies (`agentlog_domain::signal::policy`) for
//! every new fact and appends what they call for — an operation that failed becomes an urgent
//! error brief, a finished topic a result brief, a brief a notification, a question to a human
//! a decision notification — and bridges agentlog's own facts (an expired lease, a cron fire, a
//! cron job out of executions) into the bus as `agentlog.*` sources, which the source reactor
//! ([`super::sources`]) carries through signal and action. Each reaction's command id is derived from the fact and the policy
//! (`Context::reacting_to`), so its events carry the fact's chain and reacting twice — after a
//! crash, or in two server processes — appends once.

use agentlog_domain::streams::StreamKind;
use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    briefs::{Brief, BriefCommand, BriefEvent},
    context::Context,
    cron_jobs::{CronEvent, CronJob},
    envelope::{Actor, RecordedEvent},
    notifications::{NotificationCommand, Notifications},
    operations::{Operation, OperationEvent},
    signal::{
        Source, SourceCommand,
        policy::{self, Reaction, ids},
    },
    tasks::{Task, TaskEvent},
};
use agentlog_eventlog::{CommandError, EventLogError, Limits};

use super::refusals;
use super::refusals::Refused;
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::state::App;

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "signal-bus";

/// The facts the built-in policies react to.
pub const FACTS: [&str; 8] = [
    "operation.failed",
    "operation.human_asked",
    "operation.lease_expired",
    "task.topic_failed",
    "task.topic_completed",
    "brief.created",
    "cron.fired",
    "cron.auto_disabled",
];

/// The signal bus as a log follower.
pub struct SignalBus;

impl Reactor for SignalBus {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &FACTS;

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        react(state, fact).await
    }
}

/// The aggregate of `fact`'s stream as it was right after `fact` (what the policy saw).
pub(crate) async fn state_at<A: Aggregate>(state: &App, fact: &RecordedEvent) -> Result<A, ReactorError> {
    Ok(state.handler.state_at::<A>(&fact.stream_id, fact.stream_version).await?)
}

pub(crate) fn decode<E: DomainEvent>(fact: &RecordedEvent) -> Result<E, ReactorError> {
    E::decode(&fact.event_type, fact.schema_version, &fact.payload)
        .map_err(|e| ReactorError::Undecodable { position: fact.position, reason: e.to_string() })
}

/// What the policies call for in answer to `fact`, each with the policy that called for it.
pub async fn reactions(state: &App, fact: &RecordedEvent) -> Result<Vec<(&'static str, Reaction)>, ReactorError> {
    let tagged = |policy: &'static str, rs: Vec<Reaction>| rs.into_iter().map(move |r| (policy, r)).collect();
    Ok(match decode_fact(fact)? {
        Fact::Operation(OperationEvent::Failed(failed)) => {
            let op = state_at::<Operation>(state, fact).await?;
            tagged(ids::OPERATION_FAILED, policy::on_operation_failed(&op, &failed))
        }
        Fact::Operation(OperationEvent::HumanAsked(asked)) => {
            let op = state_at::<Operation>(state, fact).await?;
            tagged(ids::HUMAN_ASKED, policy::on_human_asked(&op, &asked))
        }
        Fact::Operation(OperationEvent::LeaseExpired(expired)) => {
            let op = state_at::<Operation>(state, fact).await?;
            tagged(ids::LEASE_EXPIRED, policy::on_lease_expired(&op, &expired))
        }
        Fact::Task(TaskEvent::TopicFailed(failed)) => {
            let task = state_at::<Task>(state, fact).await?;
            tagged(ids::TOPIC_FAILED, policy::on_topic_failed(&task, &failed))
        }
        Fact::Task(TaskEvent::TopicCompleted(completed)) => {
            let task = state_at::<Task>(state, fact).await?;
            tagged(ids::TOPIC_COMPLETED, policy::on_topic_completed(&task, &completed))
        }
        Fact::Brief(BriefEvent::Created(created)) => {
            tagged(ids::BRIEF_NOTIFICATION, policy::on_brief_created(&created))
        }
        Fact::Cron(CronEvent::Fired(fired)) => {
            let job = state_at::<CronJob>(state, fact).await?;
            tagged(ids::CRON_FIRED, owned_sources(fact, policy::on_cron_fired(&job, &fired)))
        }
        Fact::Cron(CronEvent::AutoDisabled(disabled)) => {
            let job = state_at::<CronJob>(state, fact).await?;
            tagged(ids::CRON_EXHAUSTED, owned_sources(fact, policy::on_cron_exhausted(&job, &disabled)))
        }
        _ => Vec::new(),
    })
}

/// A source bridged from a fact of an owned stream is named with that stream: the policy
/// derives its id from the instance id, which two users' jobs `j1` share. A global stream's
/// fact keeps the id it always had.
fn owned_sources(fact: &RecordedEvent, reactions: Vec<Reaction>) -> Vec<Reaction> {
    if StreamKind::parse_owner(&fact.stream_id).is_none() {
        return reactions;
    }
    reactions
        .into_iter()
        .map(|r| match r {
            Reaction::ReceiveSource(mut source) => {
                source.source_id = format!("{}@{}", source.source_id, fact.stream_id);
                Reaction::ReceiveSource(source)
            }
            other => other,
        })
        .collect()
}

enum Fact {
    Operation(OperationEvent),
    Task(TaskEvent),
    Brief(BriefEvent),
    Cron(CronEvent),
    Other,
}

fn decode_fact(fact: &RecordedEvent) -> Result<Fact, ReactorError> {
    let prefix = fact.event_type.split('.').next().unwrap_or_default();
    Ok(match prefix {
        "operation" => Fact::Operation(decode(fact)?),
        "task" => Fact::Task(decode(fact)?),
        "brief" => Fact::Brief(decode(fact)?),
        "cron" => Fact::Cron(decode(fact)?),
        _ => Fact::Other,
    })
}

/// Append what the policies call for in answer to `fact` (idempotently).
pub async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
    for (i, (policy_id, mut reaction)) in reactions(state, fact).await?.into_iter().enumerate() {
        let ctx = Context::reacting_to(fact, &format!("{policy_id}#{i}"), Actor::system(NAME));
        if let Reaction::ReceiveSource(src) = &mut reaction {
            let stream = state.handler.stream_of::<Source>(fact.user_id(), &src.source_id).await?;
            if stream.len() > Limits::default().max_stream_id_bytes {
                // Two long ids joined (a 128-character job id in a long user's stream): named
                // by their hash, which fits. Such an id never reached the log before (it was
                // refused), so no source written earlier changes its name.
                let hashed = agentlog_domain::ids::derived_id("bridged-source", &src.source_id, 0);
                src.source_id = agentlog_domain::ids::server_id(format!("h{}", hashed.simple()));
            }
        }
        let (command, target) = match &reaction {
            // The brief is the fact owner's: its id is named in that owner's namespace.
            Reaction::CreateBrief(b) => {
                ("brief.create", state.handler.stream_of::<Brief>(&ctx.user_id, &b.brief_id).await?)
            }
            Reaction::CreateNotification(n) => ("notification.create", Notifications::stream_id(&n.user_id)),
            // A bridged source is the fact owner's.
            Reaction::ReceiveSource(src) => {
                ("source.receive", state.handler.stream_of::<Source>(fact.user_id(), &src.source_id).await?)
            }
        };
        let outcome = match reaction {
            Reaction::CreateBrief(brief) => state
                .handler
                .execute_stream::<Brief>(&target, &BriefCommand::Create(brief), &ctx)
                .await
                .map(|o| o.last_position()),
            Reaction::CreateNotification(n) => {
                let user = n.user_id.clone();
                let command = NotificationCommand::Create(n);
                state.handler.execute::<Notifications>(&user, &command, &ctx).await.map(|o| o.last_position())
            }
            Reaction::ReceiveSource(source) => {
                let command = SourceCommand::Receive {
                    source_id: source.source_id.clone(),
                    source_type: source.source_type.to_string(),
                    payload: source.payload,
                    scope_key: None,
                    timestamp_ms: source.timestamp_ms,
                };
                state.handler.execute_stream::<Source>(&target, &command, &ctx).await.map(|o| o.last_position())
            }
        };
        match outcome {
            Ok(position) => {
                tracing::debug!(policy = policy_id, fact = fact.position, position, "reacted");
            }
            // Deduplicated: the notification exists already.
            Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => {}
            // The domain refused (e.g. the brief id taken with other content): nothing to
            // retry, so it is recorded and the owner told.
            Err(CommandError::Domain(e)) => {
                let refused = Refused::new(NAME, command, target, fact);
                let refused = match StreamKind::parse(&fact.stream_id) {
                    Some((StreamKind::Operation, op)) => refused.operation(op),
                    Some((StreamKind::Task, task)) => refused.task(task),
                    _ => refused,
                };
                refusals::record(state, fact, &ctx, refused, &e).await?;
            }
            // The log refused the write itself (a payload past its bound): no retry can pass.
            Err(CommandError::Log(EventLogError::Validation(v))) => {
                let refused = Refused::new(NAME, command, target, fact);
                refusals::record_log_refusal(state, fact, &ctx, refused, v).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
