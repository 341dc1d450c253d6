//! The task cascade (upstream `cascadeOnCompletion`): when a task completes — its result brief
//! approved, a status change, a used-up schedule — the tasks it `blocks` whose upstreams are
//! now all completed start a run, in subtask-layer order
//! (`agentlog_domain::tasks::graph::cascade_on_completion`). A dependant with an upstream of
//! unknown state (no such task, or another owner's) is never released: it stays in backlog
//! and its owner gets a `task_held` notification; one whose run is refused gets a
//! `task_start_failed` notification.
//!
//! The dependants are found in the tasks read model (once it includes the completion), then
//! each dependant and each of its upstreams is read from its stream. A run's command id, topic
//! id and operation id derive from the completion event and the dependant, so reacting twice —
//! after a crash, or in two server processes — starts each run once. Runs start as the owner
//! of the completed task (never as an admin): an agent the owner may not run is refused.

use std::{collections::BTreeMap, collections::BTreeSet, time::Duration};

use agentlog_domain::{
    context::Context,
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    ids::server_id,
    notifications::{CreateNotification, NotificationCommand, Notifications},
    rules::task_cascade,
    tasks::graph::{Dependant, cascade_on_completion},
    tasks::{DependencyKind, RunTrigger, Task, TaskEvent, TaskStatus},
};
use agentlog_eventlog::{CommandError, EventLogError};
use agentlog_projections::tasks;

use super::refusals;
use super::refusals::Refused;
use super::signal_bus;
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::{auth::Caller, commands::Commands, error::ApiError, state::App};

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "task-cascade";

/// How long a reaction waits for the tasks read model to include the completion before it
/// fails (and is retried from its checkpoint).
const READ_MODEL_WAIT: Duration = Duration::from_secs(10);

/// The task cascade as a log follower.
pub struct TaskCascade;

impl Reactor for TaskCascade {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &["task.status_changed"];

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        react(state, fact).await
    }
}

/// Start the dependants `fact` (a task reaching `completed`) released; report the held ones.
pub async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
    let TaskEvent::StatusChanged(changed) = signal_bus::decode::<TaskEvent>(fact)? else { return Ok(()) };
    if changed.to != TaskStatus::Completed {
        return Ok(());
    }
    let completed = signal_bus::state_at::<Task>(state, fact).await?;
    if !completed.exists() {
        return Ok(());
    }
    let owner = completed.user_id.clone();
    let completed_id = completed.id().to_string();
    state.runner.wait_for_projections(&["tasks"], fact.position, READ_MODEL_WAIT).await?;
    let mut dependants = Vec::new();
    for row in tasks::task_dependants(&state.db, &owner, &completed_id).await? {
        if row.kind != DependencyKind::Blocks {
            continue;
        }
        // Dependants and their upstreams are named in the completed task owner's namespace.
        let task = state.handler.load_of::<Task>(&owner, &row.task_id).await?.state;
        if !task.exists() || task.user_id != owner || !task.blocked_by().any(|u| u == completed_id) {
            continue;
        }
        let mut upstreams = BTreeMap::new();
        for up in task.blocked_by() {
            let status = if up == completed_id {
                Some(TaskStatus::Completed)
            } else {
                let t = state.handler.load_of::<Task>(&owner, up).await?.state;
                (t.exists() && t.user_id == owner).then_some(t.status)
            };
            upstreams.insert(up.to_string(), status);
        }
        dependants.push(Dependant { task_id: task.id().to_string(), status: task.status, upstreams });
    }
    let cascade = cascade_on_completion(&dependants, &BTreeSet::new());
    let event_id = fact.event_id.to_string();
    let caller = Caller { user_id: owner.clone(), admin: false };
    let commands = Commands::new(state, &caller);
    for task_id in &cascade.start {
        let ctx = Context::reacting_to(fact, &format!("{NAME}#{task_id}"), Actor::system(NAME));
        // In agentlog's own id namespace: no caller can take them first.
        let topic_id = server_id(format_args!("topic-{}", ctx.derived_id("topic", 0)));
        let operation_id = server_id(format_args!("op-{}", ctx.derived_id("operation", 0)));
        match commands.start_run(task_id, &topic_id, &operation_id, RunTrigger::Manual, &ctx).await {
            Ok((position, _)) => tracing::debug!(task = %task_id, from = %completed_id, position, "dependant started"),
            // Another process (or an earlier attempt) started it, or a run is on already.
            Err(
                ApiError::Log(EventLogError::IdempotencyConflict { .. })
                | ApiError::Domain(DomainError::AlreadyExists { .. } | DomainError::TopicRunning { .. }),
            ) => {}
            // Recorded as a refusal, the owner told with the `task_start_failed` notification.
            Err(ApiError::Domain(e)) => {
                let n =
                    task_cascade::start_failed_notification(&owner, &completed_id, &event_id, task_id, &e.to_string());
                let stream = state.handler.stream_of::<Task>(&owner, task_id).await?;
                let refused =
                    Refused::new(NAME, "task.run", stream, fact).task(task_id.clone()).operation(operation_id.clone());
                refusals::record_with(state, fact, &ctx, Refused { user_id: owner.clone(), ..refused }, &e, Some(n))
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    for held in &cascade.held_externally {
        tracing::info!(task = %held.task_id, from = %completed_id, unknown = ?held.unknown_upstreams, "dependant held");
        let n = task_cascade::held_notification(&owner, &completed_id, &event_id, held);
        notify(state, fact, &format!("{NAME}#held#{}", held.task_id), n).await?;
    }
    Ok(())
}

async fn notify(state: &App, fact: &RecordedEvent, key: &str, n: CreateNotification) -> Result<(), ReactorError> {
    let ctx = Context::reacting_to(fact, key, Actor::system(NAME));
    let user = n.user_id.clone();
    match state.handler.execute::<Notifications>(&user, &NotificationCommand::Create(n), &ctx).await {
        Ok(_) | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
