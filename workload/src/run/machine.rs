//! The run machine: one operation played from start to its ending, step by step.

use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    envelope::{Actor, NewEvent},
    error::DomainError,
    operations::{CreateOperation, Operation, OperationCommand, OperationEvent, OperationKind},
    rules::{operation_start, task_run::start_task_run},
    signal::policy::{self},
    streams::StreamKind,
    tasks::{RunTask, RunTrigger},
    values::AgentRef,
};
use chrono::Duration;

use agentlog_eventlog::StreamAppend;

use crate::{
    story::{Gen, Poll, Story, caused_by, find, stream_events},
    world::{Decision, Part, World},
};

/// Lease length workers ask for.
pub(super) const LEASE_SECS: u32 = 300;
/// Renew when the lease has less than this left.
pub(super) const RENEW_BEFORE_SECS: i64 = 90;

use super::plan::{Ending, RunPlan};

/// How the operation comes to exist.
#[derive(Debug, Clone)]
pub(crate) enum RunStart {
    /// A conversation's main run (conversation busy rule applies).
    Conversation {
        /// The conversation.
        topic_id: String,
    },
    /// A sub-agent (created by its parent's run, so the child starts at the claim).
    Child,
    /// A task's topic run.
    Task {
        /// The task.
        task_id: String,
        /// The topic (new).
        topic_id: String,
        /// What triggered it.
        trigger: RunTrigger,
    },
    /// A run with no conversation (a cron fire, a signal).
    Plain {
        /// `cron`, `signal`, …
        trigger: &'static str,
    },
    /// A chat group's supervisor run.
    Group {
        /// The group.
        group_id: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase_ {
    Start,
    Claim,
    Work,
    NotifyHuman,
    WaitHuman { asked_round: u64 },
    Spawn { left: u32 },
    Await,
    WaitChildren { since_round: u64 },
    Expire,
    FollowUp(FollowUp),
    Done,
}

/// The reactions after the end, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FollowUp {
    /// The child-result reactor tells the parent.
    ChildResult,
    /// The task lifecycle completes the topic.
    CompleteTopic,
    /// A policy turns the topic's end or the run's failure into a brief.
    Brief,
    /// A policy turns the brief into a notification.
    BriefNotification,
}

/// One operation's life.
#[derive(Debug, Clone)]
pub(crate) struct RunMachine {
    /// The operation.
    pub op_id: String,
    pub(super) user: String,
    pub(super) agent: AgentRef,
    pub(super) worker: String,
    /// The token of the worker's last claim (reports present it).
    pub(super) lease_token: Option<String>,
    pub(super) start: RunStart,
    pub(super) plan: RunPlan,
    pub(super) phase: Phase_,
    pub(super) steps_done: u32,
    pub(super) hitl_done: bool,
    pub(super) children: Vec<String>,
    /// The events of the last decision applied that a reaction starts from (the cause of the
    /// next reaction): only the types in `REACTED_TO`, so a run copies no other event.
    pub(super) last: Vec<NewEvent>,
    /// The operation's terminal event, once it ended through this machine.
    pub(super) terminal: Option<NewEvent>,
    /// What caused the start (a cron fire, a signal), when it is not a source itself.
    pub(super) start_cause: Option<agentlog_domain::context::Cause>,
}

/// The event types a follow-up reaction looks for in `RunMachine::last`.
const REACTED_TO: [&str; 4] = ["operation.human_asked", "task.topic_completed", "task.topic_failed", "brief.created"];

/// The events of `appends` a reaction may start from, in order.
fn reacted_to(appends: &[StreamAppend]) -> Vec<NewEvent> {
    appends.iter().flat_map(|a| &a.events).filter(|e| REACTED_TO.contains(&e.event_type.as_str())).cloned().collect()
}

/// Did the decision write an event of `event_type`?
fn wrote(appends: &[StreamAppend], event_type: &str) -> bool {
    appends.iter().flat_map(|a| &a.events).any(|e| e.event_type == event_type)
}

pub(super) fn is_terminal(event_type: &str) -> bool {
    matches!(event_type, "operation.completed" | "operation.failed" | "operation.interrupted" | "operation.cancelled")
}

pub(super) fn decode_op(event: &NewEvent) -> Option<OperationEvent> {
    OperationEvent::decode(&event.event_type, event.schema_version, &event.payload).ok()
}

impl RunMachine {
    /// A run of `agent` for `user`, started by `start`.
    pub(crate) fn new(g: &mut Gen, user: &str, agent: AgentRef, start: RunStart, plan: RunPlan) -> Self {
        let phase = if matches!(start, RunStart::Child) { Phase_::Claim } else { Phase_::Start };
        let op_id = g.id("op");
        Self::with_id(g, op_id, user, agent, start, plan, phase)
    }

    pub(super) fn with_id(
        g: &mut Gen,
        op_id: String,
        user: &str,
        agent: AgentRef,
        start: RunStart,
        plan: RunPlan,
        phase: Phase_,
    ) -> Self {
        let worker = format!("worker-{}", g.rng.below(8));
        Self {
            op_id,
            user: user.to_string(),
            agent,
            worker,
            lease_token: None,
            start,
            plan,
            phase,
            steps_done: 0,
            hitl_done: false,
            children: Vec::new(),
            last: Vec::new(),
            terminal: None,
            start_cause: None,
        }
    }

    /// The same run, started because of `cause`.
    pub(crate) fn caused_by(mut self, cause: agentlog_domain::context::Cause) -> Self {
        self.start_cause = Some(cause);
        self
    }

    /// The run's terminal event, if it ended (through this machine).
    pub(crate) fn terminal(&self) -> Option<&NewEvent> {
        self.terminal.as_ref()
    }

    pub(super) fn worker_ctx(&self, g: &mut Gen) -> agentlog_domain::context::Context {
        g.ctx(Actor::worker(self.worker.clone()), &self.user, None).with_lease_token(self.lease_token.clone())
    }

    pub(super) fn op_decision(
        &self,
        world: &World,
        cmd: OperationCommand,
        ctx: agentlog_domain::context::Context,
    ) -> Result<Poll, DomainError> {
        let events = world.ops.get(&self.op_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Operation(self.op_id.clone(), events))))
    }

    /// The next decision of this run.
    pub(crate) fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let op = world.ops.get(&self.op_id);
        let live = matches!(
            self.phase,
            Phase_::Claim
                | Phase_::Work
                | Phase_::WaitHuman { .. }
                | Phase_::Spawn { .. }
                | Phase_::Await
                | Phase_::WaitChildren { .. }
                | Phase_::Expire
        );
        if live && op.is_finished() {
            // Ended by someone else (an ancestor's cancel cascade): nothing left to do here.
            self.phase = Phase_::Done;
        }
        match self.phase {
            Phase_::Start => self.poll_start(world, g),
            Phase_::Claim => {
                let ctx = self.worker_ctx(g);
                self.lease_token = Some(agentlog_domain::operations::lease_token(&ctx));
                self.op_decision(
                    world,
                    OperationCommand::Claim { worker_id: self.worker.clone(), lease_secs: LEASE_SECS },
                    ctx,
                )
            }
            Phase_::Work => self.poll_work(world, g),
            Phase_::NotifyHuman => {
                let Some(asked_event) = find(&self.last, "operation.human_asked") else {
                    self.phase = Phase_::WaitHuman { asked_round: g.round() };
                    return Ok(Poll::Wait);
                };
                let Some(OperationEvent::HumanAsked(asked)) = decode_op(asked_event) else {
                    self.phase = Phase_::WaitHuman { asked_round: g.round() };
                    return Ok(Poll::Wait);
                };
                let reactions = policy::on_human_asked(op, &asked);
                let cause = caused_by(asked_event);
                self.reaction_decision(world, g, reactions, cause)
            }
            Phase_::WaitHuman { asked_round } => self.poll_human(world, g, asked_round),
            Phase_::Spawn { .. } => match self.renewal(world, g) {
                Some(renewal) => renewal,
                None => self.poll_spawn(world, g),
            },
            Phase_::Await => {
                if let Some(renewal) = self.renewal(world, g) {
                    return renewal;
                }
                let ctx = self.worker_ctx(g);
                self.op_decision(world, OperationCommand::AwaitAsync { keys: self.children.clone() }, ctx)
            }
            Phase_::WaitChildren { since_round } => {
                if self.plan.cancel_while_waiting && g.round() > since_round {
                    return self.poll_cancel(world, g);
                }
                if op.status == agentlog_domain::operations::OperationStatus::Running {
                    // The barrier is complete: a worker claims it again.
                    self.phase = Phase_::Claim;
                    return self.poll(world, g);
                }
                Ok(Poll::Wait)
            }
            Phase_::Expire => {
                let Some(lease) = &op.lease else { return Ok(Poll::Wait) };
                if g.now() <= lease.expires_at {
                    return Ok(Poll::Wait);
                }
                let ctx = g.ctx(Actor::system("lease-reaper"), &self.user, None);
                self.op_decision(world, OperationCommand::ExpireLease, ctx)
            }
            Phase_::FollowUp(f) => self.poll_follow_up(world, g, f),
            Phase_::Done => Ok(Poll::Done),
        }
    }

    pub(super) fn poll_start(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let mut create = CreateOperation::new(self.op_id.clone(), OperationKind::Conversation, self.agent.clone());
        match self.plan.ending {
            Ending::MaxSteps => create.max_steps = Some(self.plan.steps),
            Ending::CostLimit => create.cost_limit_micros = Some(u64::from(self.plan.steps) * 6_000),
            _ => {}
        }
        let empty = Operation::default();
        match &self.start {
            RunStart::Task { task_id, topic_id, trigger } => {
                let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
                let task = world.tasks.get(task_id);
                let run = RunTask {
                    topic_id: topic_id.clone(),
                    operation_id: self.op_id.clone(),
                    trigger: *trigger,
                    continue_topic: false,
                    agent: self.agent.clone(),
                    extra_prompt: g.rng.chance(20).then(|| g.rng.words(3, 10)),
                };
                let max_steps = create.max_steps;
                // Global streams, as `Tracked::write` (a log from before ids were per owner).
                let start = start_task_run(task, &StreamKind::Task.stream_id(task_id), &empty, &run, max_steps, &ctx)?;
                Ok(Poll::Decide(Decision {
                    ctx,
                    parts: vec![Part::task(start.task), Part::operation(start.operation)],
                }))
            }
            RunStart::Conversation { topic_id } => {
                create.topic_id = Some(topic_id.clone());
                create.trigger = Some("chat".into());
                let conversation = world.conversations.get(topic_id);
                let tracked: Vec<Operation> =
                    conversation.tracked_operations().map(|id| world.ops.get(id).clone()).collect();
                let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
                let started =
                    operation_start::start_operation(&create, &empty, Some(conversation), &tracked, None, &ctx)?;
                let mut parts = vec![Part::operation(started.operation)];
                parts.extend(started.conversation.map(Part::conversation));
                Ok(Poll::Decide(Decision { ctx, parts }))
            }
            RunStart::Plain { trigger } => {
                create.trigger = Some((*trigger).to_string());
                create.instruction = Some(g.rng.words(4, 12));
                let ctx = g.ctx(Actor::system("scheduler"), &self.user, self.start_cause.clone());
                let started = operation_start::start_operation(&create, &empty, None, &[], None, &ctx)?;
                Ok(Poll::Decide(Decision { ctx, parts: vec![Part::operation(started.operation)] }))
            }
            RunStart::Group { group_id } => {
                create.kind = OperationKind::Group;
                create.group_id = Some(group_id.clone());
                create.trigger = Some("group".into());
                let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
                let started = operation_start::start_operation(&create, &empty, None, &[], None, &ctx)?;
                Ok(Poll::Decide(Decision { ctx, parts: vec![Part::operation(started.operation)] }))
            }
            RunStart::Child => Ok(Poll::Wait),
        }
    }

    /// Renew a lease about to run out (or, for a run planned to lose its lease, stop working and
    /// wait for the reaper).
    pub(super) fn renewal(&mut self, world: &World, g: &mut Gen) -> Option<Result<Poll, DomainError>> {
        let op = world.ops.get(&self.op_id);
        let lease = op.lease.as_ref()?;
        if lease.expires_at - g.now() >= Duration::seconds(RENEW_BEFORE_SECS) {
            return None;
        }
        if self.plan.ending == Ending::LeaseExpiry {
            self.phase = Phase_::Expire;
            return Some(Ok(Poll::Wait));
        }
        let ctx = self.worker_ctx(g);
        let cmd = OperationCommand::RenewLease { worker_id: self.worker.clone(), lease_secs: LEASE_SECS };
        Some(self.op_decision(world, cmd, ctx))
    }

    /// The decision of the last poll was applied.
    pub(crate) fn applied(
        &mut self,
        appends: &[StreamAppend],
        world: &World,
        g: &mut Gen,
        spawned: &mut Vec<Box<dyn Story>>,
    ) {
        let own = stream_events(appends, &StreamKind::Operation.stream_id(&self.op_id));
        if self.terminal.is_none()
            && let Some(t) = own.iter().find(|e| is_terminal(&e.event_type))
        {
            self.terminal = Some(t.clone());
            self.last = reacted_to(appends);
            self.phase = self.first_follow_up();
            return;
        }
        let renewed_only = own.len() == 1 && own[0].event_type == "operation.lease_renewed";
        match self.phase {
            Phase_::Start => self.phase = Phase_::Claim,
            Phase_::Claim => self.phase = Phase_::Work,
            Phase_::Work => {
                if wrote(appends, "operation.step_recorded") {
                    self.steps_done += 1;
                }
                if wrote(appends, "operation.human_asked") {
                    self.hitl_done = true;
                    self.phase = Phase_::NotifyHuman;
                }
            }
            Phase_::NotifyHuman => self.phase = Phase_::WaitHuman { asked_round: g.round() },
            Phase_::WaitHuman { .. } => self.phase = Phase_::Claim,
            _ if renewed_only => {}
            Phase_::Spawn { left } => {
                if let Some(created) = appends.iter().flat_map(|a| &a.events).find(|e| {
                    e.event_type == "operation.created"
                        && e.payload.get("parentOperationId").and_then(|p| p.as_str()) == Some(self.op_id.as_str())
                }) && let Some(child_id) = created.payload.get("operationId").and_then(|v| v.as_str())
                {
                    self.children.push(child_id.to_string());
                    let plan = RunPlan::draw(g, true);
                    let child = RunMachine::with_id(
                        g,
                        child_id.to_string(),
                        &self.user,
                        self.agent.clone(),
                        RunStart::Child,
                        plan,
                        Phase_::Claim,
                    );
                    spawned.push(Box::new(RunStory { run: child }));
                }
                self.phase = if left > 1 { Phase_::Spawn { left: left - 1 } } else { Phase_::Await };
            }
            Phase_::Await => {
                let waiting = world.ops.get(&self.op_id).status.is_waiting();
                self.phase = if waiting { Phase_::WaitChildren { since_round: g.round() } } else { Phase_::Work };
            }
            Phase_::WaitChildren { .. } | Phase_::Expire => {}
            Phase_::FollowUp(_) => self.phase = self.after_follow_up(),
            Phase_::Done => {}
        }
        self.last = reacted_to(appends);
    }
}

/// A run that is a story of its own (a sub-agent, a cron fire's run).
pub(crate) struct RunStory {
    /// The run.
    pub run: RunMachine,
}

impl Story for RunStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        self.run.poll(world, g)
    }
    fn applied(&mut self, appends: &[StreamAppend], world: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        self.run.applied(appends, world, g, spawned);
    }

    fn forget(&self, world: &mut World) {
        // A sub-agent is forgotten with its root (its parent may still cascade over it).
        if !matches!(self.run.start, RunStart::Child) {
            world.forget_operation_tree(&self.run.op_id);
        }
    }
}
