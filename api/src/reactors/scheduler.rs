//! The scheduler: cron jobs, scheduled (cron-pattern) tasks and heartbeat ticks.
//!
//! Every pass re-reads the truth — the read models to find candidates, then each candidate's
//! aggregate, whose rules (`cron::should_fire`, `task::heartbeat_tick`, `task::schedule_tick`)
//! decide — so a job or task that was disabled, deleted, paused, finished, switched mode, is
//! already running or waits for a human is skipped, whatever an earlier pass saw.
//!
//! **Only what is due.** The candidates are the rows whose due instant, kept by their read
//! model as a pure function of the log, is at or before now: a cron job's first slot after its
//! last fire that its conditions allow (`cron_jobs.next_due_at`), a scheduled task's first slot
//! after its last schedule run (`tasks.next_schedule_at`), a heartbeat task's tick
//! (`tasks.heartbeat_tick_due_at`) and a running task's heartbeat deadline
//! (`tasks.heartbeat_deadline_at`), each an index range. A pass on an idle server reads no row,
//! however many jobs and tasks there are; the due instant is a lower bound of when a pass has
//! something to do, so no slot is missed. A candidate the rules skip stays due until it fires or
//! its row changes: one whose latest slot falls outside its active hours after the server was
//! down (until its next allowed slot), one whose agent is gone or whose budget is spent (until
//! its next fire), a task a human is waiting on, and a job or task in a zone this build does not
//! know (reported skipped on every pass, as before).
//!
//! **Once per slot.** A fire's command id, and so its event ids, the run's topic id and its
//! operation id, derive from the job or task and the slot (the scheduled minute, or the
//! heartbeat's tick token). Two server processes firing the same slot, or a restart in the
//! middle of a pass, write it once: the second attempt finds the events, the topic or the
//! operation there and appends nothing.
//!
//! **Missed slots.** A pass fires only the latest slot at or before now that is after the last
//! fire (a cron job's `lastExecutedAt`, a scheduled task's last run or the start of its
//! schedule). A server that was down for a day fires each job once on start, not once per
//! missed minute. Slots older than [`MAX_CATCH_UP_DAYS`] are not looked for.
//!
//! **Time zones.** Patterns are matched in the job's or task's IANA zone (chrono-tz). A slot in
//! a daylight-saving gap does not exist and is skipped; a slot in the repeated hour fires at its
//! first occurrence.

use std::time::Duration;

use agentlog_domain::{
    aggregate::{Aggregate, StreamEvents},
    context::Context,
    cron_jobs::{CronCommand, CronJob, pattern::CronPattern, slots},
    envelope::Actor,
    error::DomainError,
    ids::{derived_id, server_id},
    operations::{CreateOperation, Operation, OperationCommand, OperationKind},
    streams::StreamKind,
    tasks::{self as domain_task, RunTrigger, Task, TaskStatus},
};
use agentlog_eventlog::{CommandError, EventLogError};
use agentlog_projections::{briefs, budgets::RunScope, cron_jobs, cron_jobs::CronJobRow, tasks};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use tokio::sync::watch;

use super::{
    clock_pass,
    refusals::{self, Refused},
};
use crate::reactors::error::ReactorError;
use crate::{
    auth::Caller,
    commands::{Commands, budgets, is_replay},
    error::ApiError,
    state::App,
};

/// The reactor's name (actor, command-id derivation).
pub const NAME: &str = "scheduler";

/// How far back a pass looks for a missed slot.
pub use agentlog_domain::cron_jobs::slots::MAX_CATCH_UP_DAYS;

/// How often the scheduler passes (cron slots are minutes; heartbeats may be seconds).
pub const PASS_EVERY: Duration = Duration::from_secs(1);

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassReport {
    /// Cron jobs fired, as `job@slot`.
    pub cron_fired: Vec<String>,
    /// Tasks run, as `task:topic`.
    pub tasks_run: Vec<String>,
    /// Scheduled tasks completed because their executions were used up.
    pub tasks_completed: Vec<String>,
    /// Running tasks whose heartbeat timed out.
    pub tasks_timed_out: Vec<String>,
    /// Heartbeat ticks skipped for want of new input (`task.tick_skipped`), as task ids.
    pub ticks_skipped: Vec<String>,
    /// Candidates skipped, with the rule's reason.
    pub skipped: Vec<(String, String)>,
}

/// Pass every [`PASS_EVERY`] until `stop` turns true. A failed pass is logged; the next one
/// starts from the truth again.
pub async fn run(state: App, stop: watch::Receiver<bool>) {
    let report = |report: PassReport| {
        if report != PassReport::default() {
            tracing::debug!(?report, "scheduler pass");
        }
    };
    clock_pass::every(state, stop, NAME, PASS_EVERY, |s, now| async move { pass(&s, now).await }, report).await
}

/// One pass at `now`: fire what is due. Public so tests can drive the clock.
///
/// One item's failure (a job, a task) does not stop the pass: the others are still fired, and
/// the pass then answers the first failure (logged by the clock; the item is due again next
/// pass). So no user's job or task can hold back another user's.
pub async fn pass(state: &App, now: DateTime<Utc>) -> Result<PassReport, ReactorError> {
    let mut report = PassReport::default();
    let mut failed: Option<ReactorError> = None;
    let mut note = |item: &str, owner: &str, r: Result<(), ReactorError>| {
        if let Err(e) = r {
            tracing::warn!(item, owner, error = %e, "scheduler: an item failed; the pass goes on");
            failed.get_or_insert(e);
        }
    };
    for job in cron_jobs::jobs_due(&state.db, None, now).await? {
        let r = fire_cron_job(state, &job, now, &mut report).await;
        note(&job.job_id, &job.user_id, r);
    }
    for (owner, task_id) in tasks::heartbeat_ticks_due(&state.db, now).await? {
        let r = heartbeat_tick(state, &owner, &task_id, now, &mut report).await;
        note(&task_id, &owner, r);
    }
    for (owner, task_id) in tasks::schedules_due(&state.db, now).await? {
        let r = schedule_tick(state, &owner, &task_id, now, &mut report).await;
        note(&task_id, &owner, r);
    }
    for (owner, task_id) in tasks::heartbeat_timeouts_due(&state.db, now).await? {
        let r = heartbeat_timeout(state, &owner, &task_id, now, &mut report).await;
        note(&task_id, &owner, r);
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// The scheduler acting for the owner of what it fires.
fn system_context(kind: &str, key: &str, at: DateTime<Utc>, owner: &str) -> Context {
    let command_id = derived_id(NAME, &format!("{kind}\u{0}{key}"), at.timestamp_millis());
    Context::new(at, command_id, Actor::system(NAME), owner)
}

/// The name a task's command keys use: its owned stream (two users' tasks `t1` tick apart), or
/// for a global stream the task id its ticks always had.
fn task_key<'a>(stream: &'a str, task_id: &'a str) -> &'a str {
    if StreamKind::parse_owner(stream).is_some() { stream } else { task_id }
}

/// The scheduler acting for `owner`, never as an admin: a user's job or task can only start
/// agents that user may run.
fn owner_caller(owner: &str) -> Caller {
    Caller { user_id: owner.to_string(), admin: false }
}

/// Was this attempt's effect already there (another instance, an earlier pass)?
fn already_done(e: &CommandError) -> bool {
    matches!(
        e,
        CommandError::Log(EventLogError::IdempotencyConflict { .. })
            | CommandError::Domain(DomainError::AlreadyExists { .. } | DomainError::TopicRunning { .. })
    )
}

async fn fire_cron_job(
    state: &App,
    job: &CronJobRow,
    now: DateTime<Utc>,
    report: &mut PassReport,
) -> Result<(), ReactorError> {
    let Ok(tz) = job.timezone.parse::<Tz>() else {
        report.skipped.push((job.job_id.clone(), format!("unknown time zone {}", job.timezone)));
        return Ok(());
    };
    let last = job.last_executed_at.unwrap_or(job.created_at);
    let Ok(pattern) = CronPattern::parse(&job.pattern) else { return Ok(()) };
    let Some(slot) = slots::latest_slot(&pattern, &tz, now, last) else { return Ok(()) };
    let slot_utc = slot.with_timezone(&Utc);
    let stream = state.handler.stream_of::<CronJob>(&job.user_id, &job.job_id).await?;
    // A job in an owned stream is named with its owner: two users' jobs `j1` fire apart. A
    // global stream's job keeps the key its slots always had.
    let name = if StreamKind::parse_owner(&stream).is_some() { stream.as_str() } else { job.job_id.as_str() };
    let key = format!("{name}@{}", slot.naive_local().format("%Y-%m-%dT%H:%M"));
    let fires_today = job.fires_on(&slot.date_naive().to_string());
    let ctx = system_context("cron", &key, slot_utc, &job.user_id);
    let caller = owner_caller(&job.user_id);
    let commands = Commands::new(state, &caller);
    let agent = match commands.agent_ref(&job.user_id, &job.agent_id).await {
        Ok(agent) => agent,
        // Not the job's own rules: the slot cannot fire (its agent is gone). The owner is told,
        // once per slot.
        Err(e @ (ApiError::NotFound { .. } | ApiError::Domain(_))) => {
            report.skipped.push((job.job_id.clone(), format!("agent {}: {e}", job.agent_id)));
            let refused = Refused::of("scheduler", "cron.fire", stream.clone(), &job.user_id);
            return refusals::record_for_pass(state, &stream, &ctx, refused, &e).await;
        }
        Err(e) => return Err(e.into()),
    };
    let operation_id = server_id(format_args!("op-cron-{}", ctx.derived_id("operation", 0)));
    let run = RunScope {
        user_id: job.user_id.clone(),
        agent_id: agent.agent_id.clone(),
        task_id: None,
        group_id: job.group_id.clone(),
    };
    // A budget at its limit: the slot does not fire; the refusal is recorded once per slot and
    // the owner told once per budget period.
    if let Err(e) = budgets::check_start(state, &run, slot_utc).await {
        if !matches!(e, ApiError::Domain(_)) {
            return Err(e.into());
        }
        report.skipped.push((job.job_id.clone(), e.to_string()));
        let refused = Refused::of("scheduler", "cron.fire", stream.clone(), &job.user_id);
        return refusals::record_for_pass(state, &stream, &ctx, refused, &e).await;
    }
    let result = state
        .handler
        .execute_multi(&ctx, || async {
            let h = &state.handler;
            let cron = h.load_stream::<CronJob>(&stream).await?;
            let operation = h.load_of::<Operation>(&job.user_id, &operation_id).await?;
            let fired = cron.state.decide(&CronCommand::Fire { at: slot.fixed_offset(), fires_today }, &ctx)?;
            let mut create = CreateOperation::new(operation_id.clone(), OperationKind::Conversation, agent.clone());
            create.group_id = job.group_id.clone();
            create.trigger = Some(format!("cron:{}", job.job_id));
            create.instruction = Some(cron.state.content.clone());
            let created = operation.state.decide(&OperationCommand::Create(create), &ctx)?;
            let mut stamper = ctx.stamper();
            let cron_write = stamper.write(&cron.state, &StreamEvents::new(cron.stream_id.clone(), fired));
            let op_write = stamper.write(&operation.state, &StreamEvents::new(operation.stream_id.clone(), created));
            Ok(vec![(cron_write, cron.version), (op_write, operation.version)])
        })
        .await;
    match result {
        // Another instance (or an earlier pass that crashed before its checkpoint) fired it.
        Ok(results) if is_replay(&results) => {}
        Ok(_) => report.cron_fired.push(key),
        Err(e) if already_done(&e) => {}
        // The job's own rules said no (active hours, days, daily maximum, disabled meanwhile).
        Err(CommandError::Domain(e)) => report.skipped.push((job.job_id.clone(), e.to_string())),
        // The log refuses what the fire would write (a job's content past what one event holds,
        // from before content was bounded): the job's own refusal, recorded once per slot.
        Err(CommandError::Log(EventLogError::Validation(v))) => {
            report.skipped.push((job.job_id.clone(), v.to_string()));
            let refused = Refused::of("scheduler", "cron.fire", stream.clone(), &job.user_id);
            let e = ApiError::from(CommandError::Log(EventLogError::Validation(v)));
            return refusals::record_for_pass(state, &stream, &ctx, refused, &e).await;
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

async fn heartbeat_tick(
    state: &App,
    owner: &str,
    task_id: &str,
    now: DateTime<Utc>,
    report: &mut PassReport,
) -> Result<(), ReactorError> {
    let loaded = state.handler.load_of::<Task>(owner, task_id).await?;
    let (stream, task) = (loaded.stream_id, loaded.state);
    let name = task_key(&stream, task_id);
    let Some(token) = task.tick_token.clone() else { return Ok(()) };
    if task.next_tick_at.is_some_and(|due| due > now) {
        return Ok(());
    }
    let waiting = briefs::human_waiting(&state.db, &task.user_id, task_id).await?;
    if let Err(skip) = domain_task::tick::heartbeat_tick(&task, Some(&token), waiting) {
        report.skipped.push((task_id.to_string(), skip.as_str().to_string()));
        return Ok(());
    }
    if task.heartbeat.require_input {
        let dependency_finished_at = dependency_finished_at(state, &task).await?;
        if !domain_task::tick::new_input(&task, dependency_finished_at) {
            return skip_idle_tick(state, &stream, &task, token, dependency_finished_at, now, report).await;
        }
    }
    // `now` (not the due time) starts the run: it is also the run's first heartbeat.
    let ctx = system_context("heartbeat", &format!("{name}\u{0}{token}"), now, &task.user_id);
    start_run(state, &stream, &task, RunTrigger::Heartbeat, &ctx, report).await
}

/// When the latest of `task`'s dependencies completed, read from their own streams.
async fn dependency_finished_at(state: &App, task: &Task) -> Result<Option<DateTime<Utc>>, ReactorError> {
    let mut latest = None;
    for id in task.dependencies.keys() {
        // A dependency is named in the task owner's namespace.
        let dependency = state.handler.load_of::<Task>(&task.user_id, id).await?.state;
        if dependency.status == TaskStatus::Completed {
            latest = latest.max(dependency.completed_at);
        }
    }
    Ok(latest)
}

/// Record heartbeat tick `token` of `task` as skipped (nothing new to work on) and schedule the
/// next one. The command id derives from the task and the tick, so a second instance or pass
/// meeting the same tick writes nothing: it finds the tick replaced, or the same events.
async fn skip_idle_tick(
    state: &App,
    stream: &str,
    task: &Task,
    token: String,
    dependency_finished_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    report: &mut PassReport,
) -> Result<(), ReactorError> {
    let task_id = task.id();
    let name = task_key(stream, task_id);
    let ctx = system_context("heartbeat-skip", &format!("{name}\u{0}{token}"), now, &task.user_id);
    let command = domain_task::TaskCommand::SkipIdleTick { tick_token: token, dependency_finished_at };
    match state.handler.execute_stream::<Task>(stream, &command, &ctx).await {
        Ok(o) if o.appended.iter().all(|a| a.duplicate) => {}
        Ok(_) => report.ticks_skipped.push(task_id.to_string()),
        Err(e) if already_done(&e) => {}
        // The tick was replaced meanwhile (another instance skipped or ran it), or input came.
        Err(CommandError::Domain(e)) => report.skipped.push((task_id.to_string(), e.to_string())),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

async fn schedule_tick(
    state: &App,
    owner: &str,
    task_id: &str,
    now: DateTime<Utc>,
    report: &mut PassReport,
) -> Result<(), ReactorError> {
    let loaded = state.handler.load_of::<Task>(owner, task_id).await?;
    let (stream, task) = (loaded.stream_id, loaded.state);
    let name = task_key(&stream, task_id);
    // A schedule runs once the user started it (status scheduled), and goes on after each run.
    if !matches!(task.status, TaskStatus::Scheduled | TaskStatus::Running) {
        return Ok(());
    }
    let (Some(pattern), Some(started)) = (task.schedule.pattern.clone(), task.schedule_started_at) else {
        return Ok(());
    };
    let Ok(tz) = task.schedule.timezone.parse::<Tz>() else {
        report.skipped.push((task_id.to_string(), format!("unknown time zone {}", task.schedule.timezone)));
        return Ok(());
    };
    let last_run = task.topics.values().filter(|t| t.trigger == RunTrigger::Schedule).map(|t| t.started_at).max();
    let last = last_run.map_or(started, |r| r.max(started));
    let Ok(pattern) = CronPattern::parse(&pattern) else { return Ok(()) };
    let Some(slot) = slots::latest_slot(&pattern, &tz, now, last) else { return Ok(()) };
    let key = format!("{name}@{}", slot.naive_local().format("%Y-%m-%dT%H:%M"));
    let waiting = briefs::human_waiting(&state.db, &task.user_id, task_id).await?;
    match domain_task::tick::schedule_tick(&task, waiting) {
        Ok(()) => {
            let ctx = system_context("schedule", &key, now, &task.user_id);
            start_run(state, &stream, &task, RunTrigger::Schedule, &ctx, report).await
        }
        Err(domain_task::tick::TickSkip::MaxExecutionsReached) => {
            // The schedule is used up: the task is done (upstream completes it on the tick).
            let ctx = system_context("schedule-complete", &key, now, &task.user_id);
            let command = domain_task::TaskCommand::ChangeStatus { to: TaskStatus::Completed, error: None };
            match state.handler.execute_stream::<Task>(&stream, &command, &ctx).await {
                Ok(_) => report.tasks_completed.push(task_id.to_string()),
                Err(e) if already_done(&e) => {}
                Err(CommandError::Domain(e)) => report.skipped.push((task_id.to_string(), e.to_string())),
                Err(e) => return Err(e.into()),
            }
            Ok(())
        }
        Err(skip) => {
            report.skipped.push((task_id.to_string(), skip.as_str().to_string()));
            Ok(())
        }
    }
}

/// Time out a running task whose heartbeat is older than its timeout (upstream's lazy check,
/// here driven by the clock): its running topics time out (their operations are then
/// cancelled) and it pauses with the error `Heartbeat timeout`. The command id and `now` derive
/// from the task and the heartbeat that went stale (its due instant), so every instance and
/// every pass decides the same events: written once.
async fn heartbeat_timeout(
    state: &App,
    owner: &str,
    task_id: &str,
    now: DateTime<Utc>,
    report: &mut PassReport,
) -> Result<(), ReactorError> {
    let loaded = state.handler.load_of::<Task>(owner, task_id).await?;
    let (stream, task) = (loaded.stream_id, loaded.state);
    let name = task_key(&stream, task_id);
    let (Some(last), Some(due)) = (task.last_heartbeat_at, task.heartbeat_deadline()) else { return Ok(()) };
    if task.status != TaskStatus::Running || !task.heartbeat_stale(now) {
        return Ok(());
    }
    let key = format!("{name}\u{0}{}", last.timestamp_micros());
    let ctx = system_context("heartbeat-timeout", &key, due, &task.user_id);
    match state.handler.execute_stream::<Task>(&stream, &domain_task::TaskCommand::CheckHeartbeatTimeout, &ctx).await {
        Ok(o) if o.appended.iter().all(|a| a.duplicate) => {}
        Ok(_) => report.tasks_timed_out.push(task_id.to_string()),
        Err(e) if already_done(&e) => {}
        // Another instance timed it out, or a heartbeat came meanwhile.
        Err(CommandError::Domain(e @ (DomainError::InvalidTransition { .. } | DomainError::NotDue { .. }))) => {
            report.skipped.push((task_id.to_string(), e.to_string()));
        }
        Err(CommandError::Domain(e)) => report.skipped.push((task_id.to_string(), e.to_string())),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

async fn start_run(
    state: &App,
    stream: &str,
    task: &Task,
    trigger: RunTrigger,
    ctx: &Context,
    report: &mut PassReport,
) -> Result<(), ReactorError> {
    let topic_id = server_id(format_args!("topic-{}", ctx.derived_id("topic", 0)));
    let operation_id = server_id(format_args!("op-{}", ctx.derived_id("operation", 0)));
    let caller = owner_caller(&task.user_id);
    match Commands::new(state, &caller).start_run(task.id(), &topic_id, &operation_id, trigger, ctx).await {
        // Another instance, or a pass that crashed before its checkpoint, started it.
        Ok((_, true)) => {}
        Ok((_, false)) => report.tasks_run.push(format!("{}:{topic_id}", task.id())),
        Err(
            ApiError::Log(EventLogError::IdempotencyConflict { .. })
            | ApiError::Domain(DomainError::AlreadyExists { .. } | DomainError::TopicRunning { .. }),
        ) => {}
        // The run was refused (its agent gone, the task's state): the owner is told, once per
        // slot or tick.
        Err(e @ (ApiError::NotFound { .. } | ApiError::Domain(_))) => {
            report.skipped.push((task.id().to_string(), e.to_string()));
            let refused = Refused::of("scheduler", "task.start_run", stream.to_string(), &task.user_id).task(task.id());
            refusals::record_for_pass(state, stream, ctx, refused, &e).await?;
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
