//! Group orchestration: the runtime around the supervisor's decision table
//! (`agentlog_domain::supervisor`).
//!
//! 1. The supervisor's worker reports its decision as a tool call in a step
//!    (`speak`, `broadcast`, `executeAgentTask`, `executeAgentTasks`, `delegate`, `finish`, with
//!    their arguments); the group records `supervisor_decided` and the instruction it yields.
//! 2. An instruction that calls members dispatches one operation per member (kind sub-agent,
//!    child of the supervisor's operation, told the instruction) and holds the supervisor in
//!    `waiting_for_async_tool` until every one of them reported (the barrier; results reach
//!    the supervisor through [`super::child_results`]).
//! 3. When the barrier opens, the group records the action's result (`agent_spoke`,
//!    `agents_broadcasted`, `task_completed`, `tasks_completed`, `delegated`); the table then
//!    calls the supervisor again (its worker finds it running with the members' results), or
//!    finishes — after `maxRounds` rounds, a delegation, `finish` or `skipCallSupervisor` — and
//!    the supervisor's operation completes with the reason.
//!
//! Cancelling the supervisor's operation cancels its members (the cancel cascade). Every
//! append's ids derive from the fact it answers, so a restart or a second server re-reacting
//! appends nothing new.

use agentlog_domain::{
    aggregate::{Aggregate, StreamEvents},
    context::Context,
    envelope::{Actor, RecordedEvent},
    error::DomainError,
    groups::{Group, GroupCommand, GroupEvent, OrchestrationAdvanced},
    ids::server_id,
    operations::{CreateOperation, Operation, OperationCommand, OperationError, OperationEvent, OperationKind},
    rules::operation_start::child_depth,
    supervisor::{ActionPayload, ExecutorResult, SupervisorInstruction, decision_for_tool},
    values::AgentRef,
};
use agentlog_eventlog::{CommandError, EventLogError};
use agentlog_projections::budgets::RunScope;
use serde_json::Value;

use super::{
    refusals::{self, Refused},
    signal_bus,
};
use crate::reactors::error::ReactorError;
use crate::reactors::follow::Reactor;
use crate::{
    auth::Caller,
    commands::{Commands, budgets},
    state::App,
};

/// The reactor's name (checkpoint, actor, command-id derivation).
pub const NAME: &str = "orchestration";

/// A supervisor's steps, the group's steps, and results reaching a supervisor.
pub const FACTS: [&str; 3] =
    ["operation.step_recorded", "group.orchestration_advanced", "operation.async_result_received"];

/// Group orchestration as a log follower.
pub struct Orchestration;

impl Reactor for Orchestration {
    const NAME: &'static str = NAME;
    const FACTS: &'static [&'static str] = &FACTS;

    async fn react(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
        match fact.event_type.as_str() {
            "group.orchestration_advanced" => {
                let GroupEvent::OrchestrationAdvanced(step) = signal_bus::decode(fact)? else { return Ok(()) };
                carry_out(state, fact, &step).await
            }
            _ => match signal_bus::decode::<OperationEvent>(fact)? {
                OperationEvent::StepRecorded(step) => {
                    let decision =
                        step.tool_calls.iter().find_map(|c| decision_for_tool(&c.name, c.arguments.as_ref()));
                    match decision {
                        None => Ok(()),
                        Some(Ok(payload)) => advance(state, fact, ExecutorResult::SupervisorDecided { payload }).await,
                        Some(Err(refused)) => unsupported(state, fact, &refused).await,
                    }
                }
                OperationEvent::AsyncResultReceived(r) if r.resumes => barrier_opened(state, fact).await,
                _ => Ok(()),
            },
        }
    }
}

/// The group a supervisor operation (at `fact`) orchestrates, when it is one.
async fn supervised_group(state: &App, fact: &RecordedEvent) -> Result<Option<(Operation, String)>, ReactorError> {
    let op = signal_bus::state_at::<Operation>(state, fact).await?;
    let group = op.spec.as_ref().filter(|s| s.kind == OperationKind::Group).and_then(|s| s.group_id.clone());
    let Some(group_id) = group else { return Ok(None) };
    // The group is named in the namespace of the fact's owner.
    let stream = state.handler.stream_of::<Group>(fact.user_id(), &group_id).await?;
    Ok(Some((op, stream)))
}

/// A decision the table does not carry out ends the supervisor's run with the refusal as its
/// error (the signal bus then tells the owner with an error brief); a run that cannot take
/// the failure any more has the refusal recorded ([`refusals::record`]).
async fn unsupported(state: &App, fact: &RecordedEvent, refused: &DomainError) -> Result<(), ReactorError> {
    let Some((op, _)) = supervised_group(state, fact).await? else { return Ok(()) };
    let ctx = Context::reacting_to(fact, &format!("{NAME}#unsupported"), Actor::system(NAME));
    let error = OperationError {
        message: refused.to_string(),
        error_type: Some("unsupported_decision".into()),
        code: Some(refused.code().as_str().into()),
    };
    // The fact is the supervisor's own: its stream is the run's.
    let command = OperationCommand::Fail(error);
    let outcome = state.handler.execute_stream::<Operation>(&fact.stream_id, &command, &ctx).await.map(|_| ());
    let record = Refused::new(NAME, "operation.fail", fact.stream_id.clone(), fact).operation(op.id());
    match outcome {
        Err(CommandError::Domain(_)) => refusals::record(state, fact, &ctx, record, refused).await,
        other => settle(state, fact, &ctx, other, record).await,
    }
}

/// Record an executor result on the group (idempotently).
async fn advance(state: &App, fact: &RecordedEvent, result: ExecutorResult) -> Result<(), ReactorError> {
    let Some((op, group_stream)) = supervised_group(state, fact).await? else { return Ok(()) };
    // An orchestration that is gone (finished, its group deleted) refuses the step: recorded
    // as a refusal, never skipped unseen.
    let ctx = Context::reacting_to(fact, NAME, Actor::system(NAME));
    let command = GroupCommand::AdvanceOrchestration { operation_id: op.id().to_string(), result };
    let outcome = state.handler.execute_stream::<Group>(&group_stream, &command, &ctx).await.map(|_| ());
    let refused = Refused::new(NAME, ADVANCE, group_stream, fact).operation(op.id());
    settle(state, fact, &ctx, outcome, refused).await
}

/// `refused`'s command, as the group's step advancing.
const ADVANCE: &str = "group.advance_orchestration";

/// Settle an orchestration command: a refusal is recorded and its owner told
/// ([`refusals::record`]), never only logged.
async fn settle(
    state: &App,
    fact: &RecordedEvent,
    ctx: &Context,
    outcome: Result<(), CommandError>,
    refused: Refused,
) -> Result<(), ReactorError> {
    match outcome {
        Ok(()) | Err(CommandError::Log(EventLogError::IdempotencyConflict { .. })) => Ok(()),
        Err(CommandError::Domain(e)) => refusals::record(state, fact, ctx, refused, &e).await,
        Err(e) => Err(e.into()),
    }
}

/// The members an instruction calls, with what each is told.
fn calls(instruction: &SupervisorInstruction, group: &Group) -> Option<Vec<(String, Option<String>)>> {
    use SupervisorInstruction as I;
    let one = |agent: &Option<String>, text: &Option<String>| agent.clone().map(|a| vec![(a, text.clone())]);
    match instruction {
        I::CallAgent { payload } => one(&payload.agent_id, &payload.instruction),
        I::ExecAsyncTask { payload } | I::ExecClientAsyncTask { payload } => {
            one(&payload.agent_id, &payload.instruction)
        }
        I::Delegate { payload } => one(&payload.agent_id, &payload.reason),
        I::ParallelCallAgents { payload } => {
            let agents = payload.agent_ids.clone().unwrap_or_else(|| {
                let supervisor = group.supervisor().map(|m| m.agent_id.clone());
                group
                    .members
                    .values()
                    .filter(|m| m.enabled && Some(&m.agent_id) != supervisor.as_ref())
                    .map(|m| m.agent_id.clone())
                    .collect()
            });
            Some(agents.into_iter().map(|a| (a, payload.instruction.clone())).collect())
        }
        I::BatchExecAsyncTasks { payload } => Some(
            payload
                .tasks
                .as_ref()
                .and_then(Value::as_array)
                .map(|tasks| {
                    tasks
                        .iter()
                        .filter_map(|t| {
                            let agent = t.get("agentId").and_then(Value::as_str)?;
                            Some((agent.to_string(), t.get("instruction").and_then(Value::as_str).map(str::to_string)))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        I::CallSupervisor { .. } | I::Finish { .. } => None,
    }
}

/// Carry out a recorded step's instruction.
async fn carry_out(state: &App, fact: &RecordedEvent, step: &OrchestrationAdvanced) -> Result<(), ReactorError> {
    let ctx = Context::reacting_to(fact, NAME, Actor::system(NAME));
    let supervisor_id = step.operation_id.as_str();
    if let SupervisorInstruction::Finish { reason } = &step.instruction {
        let command = OperationCommand::Complete { result: Some(reason.clone()), handoff: None, brief_judgement: None };
        // The supervisor is named in the group owner's namespace.
        let stream = state.handler.stream_of::<Operation>(fact.user_id(), supervisor_id).await?;
        let outcome = state.handler.execute_stream::<Operation>(&stream, &command, &ctx).await.map(|_| ());
        let refused = Refused::new(NAME, "operation.complete", stream, fact).operation(supervisor_id);
        return settle(state, fact, &ctx, outcome, refused).await;
    }
    let group = state.handler.load_stream::<Group>(&fact.stream_id).await?.state;
    let Some(calls) = calls(&step.instruction, &group) else { return Ok(()) };
    // Only enabled, runnable members take part; the supervisor hears about the rest.
    // As the group's owner, never as an admin: a group cannot run another user's agent.
    let caller = Caller { user_id: group.user_id.clone(), admin: false };
    let commands = Commands::new(state, &caller);
    let mut members = Vec::new();
    let mut strangers = Vec::new();
    for (agent_id, told) in calls {
        let runnable = match group.members.get(&agent_id).filter(|m| m.enabled) {
            Some(_) => commands.agent_ref(&group.user_id, &agent_id).await.ok(),
            None => None,
        };
        match runnable {
            Some(agent) => members.push((agent, told)),
            None => strangers.push(agent_id),
        }
    }
    if members.is_empty() {
        let error = format!("no enabled, registered member among {strangers:?}");
        let payload = ActionPayload { error: Some(Value::String(error)), ..ActionPayload::default() };
        let result = result_for(&step.instruction, payload);
        let command = GroupCommand::AdvanceOrchestration { operation_id: supervisor_id.to_string(), result };
        let outcome = state.handler.execute_stream::<Group>(&fact.stream_id, &command, &ctx).await.map(|_| ());
        let refused = Refused::new(NAME, ADVANCE, fact.stream_id.clone(), fact).operation(supervisor_id);
        return settle(state, fact, &ctx, outcome, refused).await;
    }
    if !strangers.is_empty() {
        tracing::warn!(supervisor = supervisor_id, ?strangers, "not members (or not runnable); left out");
    }
    dispatch(state, fact, &group, supervisor_id, &members, MemberRuns::for_instruction(&step.instruction), &ctx).await
}

/// How an instruction's member runs start.
#[derive(Debug, Clone, Copy)]
struct MemberRuns {
    /// `client_task` for a task run in the client (`runInClient`), else `subagent`.
    kind: OperationKind,
    /// A broadcast's members answer without tools (upstream's `disableTools`).
    disable_tools: bool,
}

impl MemberRuns {
    fn for_instruction(instruction: &SupervisorInstruction) -> Self {
        use SupervisorInstruction as I;
        let kind = match instruction {
            I::ExecClientAsyncTask { .. } => OperationKind::ClientTask,
            _ => OperationKind::Subagent,
        };
        let disable_tools =
            matches!(instruction, I::ParallelCallAgents { payload } if payload.disable_tools == Some(true));
        Self { kind, disable_tools }
    }
}

/// One operation per member, registered as the supervisor's children, and the supervisor held
/// until all of them reported — one atomic append, each started as `runs` says.
async fn dispatch(
    state: &App,
    fact: &RecordedEvent,
    group: &Group,
    supervisor_id: &str,
    members: &[(AgentRef, Option<String>)],
    runs: MemberRuns,
    ctx: &Context,
) -> Result<(), ReactorError> {
    let child_ids: Vec<String> = (0..members.len())
        .map(|i| server_id(format_args!("op-{}", ctx.derived_id("member", u32::try_from(i).unwrap_or(u32::MAX)))))
        .collect();
    // Each member's run counts against its budgets (the group's, the member agent's, the owner's).
    let mut member_budgets = Vec::with_capacity(members.len());
    for (agent, _) in members {
        let run = RunScope {
            user_id: group.user_id.clone(),
            agent_id: agent.agent_id.clone(),
            task_id: None,
            group_id: Some(group.group_id.clone()),
        };
        member_budgets.push(budgets::facts(&budgets::standings(state, &run, fact.recorded_at, false).await?));
    }
    let outcome = state
        .handler
        .execute_multi(ctx, || async {
            let h = &state.handler;
            // The supervisor and its members' runs are named in the group owner's namespace.
            let parent = h.load_of::<Operation>(&group.user_id, supervisor_id).await?;
            let mut parent_state = parent.state.clone();
            let mut parent_events = Vec::new();
            let mut stamper = ctx.stamper();
            let mut writes = Vec::new();
            for (((agent, instruction), child_id), budgets) in members.iter().zip(&child_ids).zip(&member_budgets) {
                let child = h.load_of::<Operation>(&group.user_id, child_id).await?;
                if !child.state.exists() {
                    agentlog_domain::budgets::refuse_start(budgets)?;
                }
                let mut create = CreateOperation::new(child_id.clone(), runs.kind, agent.clone());
                create.parent_operation_id = Some(supervisor_id.to_string());
                create.group_id = Some(group.group_id.clone());
                create.trigger = Some(format!("group:{}", group.group_id));
                create.instruction = instruction.clone();
                create.depth = child_depth(&parent.state, state.settings.max_subagent_depth)?;
                create.disable_tools = runs.disable_tools;
                let created = child.state.decide(&OperationCommand::Create(create), ctx)?;
                writes.push((
                    stamper.write(&child.state, &StreamEvents::new(child.stream_id.clone(), created)),
                    child.version,
                ));
                let register =
                    OperationCommand::RegisterChild { child_operation_id: child_id.clone(), background: false };
                for e in parent_state.decide(&register, ctx)? {
                    parent_state = parent_state.evolve(&e);
                    parent_events.push(e);
                }
            }
            let wait = parent_state.decide(&OperationCommand::AwaitAsync { keys: child_ids.clone() }, ctx)?;
            parent_events.extend(wait);
            let part = StreamEvents::new(parent.stream_id.clone(), parent_events);
            writes.push((stamper.write(&parent.state, &part), parent.version));
            Ok(writes)
        })
        .await
        .map(|_| ());
    let stream = state.handler.stream_of::<Operation>(&group.user_id, supervisor_id).await?;
    let refused = Refused::new(NAME, "operation.dispatch_members", stream, fact).operation(supervisor_id);
    match outcome {
        Err(CommandError::Domain(DomainError::AlreadyExists { .. })) => Ok(()),
        other => settle(state, fact, ctx, other, refused).await,
    }
}

/// The action result an instruction's members' results make.
fn result_for(instruction: &SupervisorInstruction, payload: ActionPayload) -> ExecutorResult {
    use SupervisorInstruction as I;
    match instruction {
        I::CallAgent { .. } => ExecutorResult::AgentSpoke { payload },
        I::ParallelCallAgents { .. } => ExecutorResult::AgentsBroadcasted { payload },
        I::ExecAsyncTask { .. } | I::ExecClientAsyncTask { .. } => ExecutorResult::TaskCompleted { payload },
        I::BatchExecAsyncTasks { .. } => ExecutorResult::TasksCompleted { payload },
        I::Delegate { .. } => ExecutorResult::Delegated { payload },
        I::CallSupervisor { .. } | I::Finish { .. } => ExecutorResult::Unknown,
    }
}

/// Every member the supervisor waited on reported: record the action's result on the group.
async fn barrier_opened(state: &App, fact: &RecordedEvent) -> Result<(), ReactorError> {
    let Some((op, group_stream)) = supervised_group(state, fact).await? else { return Ok(()) };
    // The instruction being waited on: the group's last step for this supervisor.
    let steps = state.store.read_stream(&group_stream, 1, usize::MAX).await?;
    let Some(instruction) = steps.iter().rev().find_map(|e| match signal_bus::decode::<GroupEvent>(e).ok()? {
        GroupEvent::OrchestrationAdvanced(s) if s.operation_id == op.id() => Some(s.instruction),
        _ => None,
    }) else {
        return Ok(());
    };
    // The results since the supervisor started waiting, with the member that gave each.
    let events = state.store.read_stream(&fact.stream_id, 1, usize::MAX).await?;
    let since_wait = events.iter().rposition(|e| e.event_type == "operation.async_wait_started").unwrap_or(0);
    let mut results = Vec::new();
    let mut agent_ids = Vec::new();
    for e in events[since_wait..].iter().filter(|e| e.position <= fact.position) {
        if let OperationEvent::AsyncResultReceived(r) = signal_bus::decode::<OperationEvent>(e)? {
            // A member's run is named in the supervisor owner's namespace.
            let child = state.handler.load_of::<Operation>(fact.user_id(), &r.key).await?.state;
            let agent = child.spec.as_ref().map(|s| s.agent.agent_id.clone()).unwrap_or_default();
            agent_ids.push(agent.clone());
            results.push(serde_json::json!({
                "agentId": agent, "operationId": r.key, "success": r.success, "result": r.result,
            }));
        }
    }
    let single = results.len() == 1;
    let payload = ActionPayload {
        agent_id: single.then(|| agent_ids[0].clone()),
        agent_ids: (!single).then_some(agent_ids),
        result: single.then(|| results[0]["result"].clone()),
        results: (!single).then_some(results),
        ..ActionPayload::default()
    };
    advance(state, fact, result_for(&instruction, payload)).await
}
