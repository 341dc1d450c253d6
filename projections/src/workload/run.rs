//! One operation's life, as the workload plays it: start (through the domain's cross-aggregate
//! rules), claim, steps with tool calls, usage, phases, plans, todos and artifacts, lease
//! renewals, an optional human-in-the-loop card, optional sub-agents behind an async barrier,
//! and one of the endings (done, failed, interrupted, cancelled with cascade, lease expiry,
//! max steps, cost limit) — then the reactions the server's reactors would append: the child's
//! result to its parent, the task lifecycle, and the signal policies' briefs and notifications.

use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    brief::{BriefCommand, BriefEvent, CreateBrief},
    envelope::{Actor, NewEvent},
    error::DomainError,
    notification::{CreateNotification, NotificationCommand},
    operation::{
        AgentRef, Artifact, CreateOperation, ItemStatus, Operation, OperationCommand, OperationError, OperationEvent,
        OperationKind, Phase, Plan, PlanStep, StepReport, Todo, ToolCall, Usage,
        hitl::{CardAnswer, CardKind, ChoiceOption, FieldKind, FormField, HitlCard, OnTimeout},
    },
    rules::{cancel_cascade::cancel_cascade, operation_start, task_run::start_task_run},
    signal::policy::{self, Reaction},
    task::{Handoff, RunTask, RunTrigger, TaskCommand, TaskEvent, TopicEnd, TopicOutcome},
};
use chrono::Duration;
use serde_json::json;

use agentlog_eventlog::StreamAppend;

use super::{
    story::{Gen, Poll, Story, all_events, caused_by, find, stream_events},
    world::{Decision, Part, World},
};

/// Lease length workers ask for.
const LEASE_SECS: u32 = 300;
/// Renew when the lease has less than this left.
const RENEW_BEFORE_SECS: i64 = 90;

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

/// How the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Complete,
    Fail,
    Interrupt,
    Cancel,
    LeaseExpiry,
    MaxSteps,
    CostLimit,
}

/// How a card is resolved.
#[derive(Debug, Clone)]
enum CardPlan {
    /// A human answers after this many rounds.
    Answer(CardAnswer, u64),
    /// Nobody answers; the card's timeout fires.
    Timeout,
}

#[derive(Debug, Clone)]
struct HitlPlan {
    at_step: u32,
    card: HitlCard,
    resolution: CardPlan,
}

/// The shape of one run, drawn when it is planned.
#[derive(Debug, Clone)]
pub(crate) struct RunPlan {
    steps: u32,
    ending: Ending,
    hitl: Option<HitlPlan>,
    children: u32,
    /// Cancel while waiting for the children (exercises the cascade).
    cancel_while_waiting: bool,
    measured: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase_ {
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
enum FollowUp {
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
    user: String,
    agent: AgentRef,
    worker: String,
    start: RunStart,
    plan: RunPlan,
    phase: Phase_,
    steps_done: u32,
    hitl_done: bool,
    children: Vec<String>,
    /// The events of the last decision applied (the cause of the next reaction).
    last: Vec<NewEvent>,
    /// The operation's terminal event, once it ended through this machine.
    terminal: Option<NewEvent>,
    /// What caused the start (a cron fire, a signal), when it is not a source itself.
    start_cause: Option<agentlog_domain::context::Cause>,
}

impl RunPlan {
    /// Draw a plan; `nested` plans (children) get no children and no card of their own.
    pub(crate) fn draw(g: &mut Gen, nested: bool) -> Self {
        let r = &mut g.rng;
        let steps = r.range(2, 8) as u32;
        let ending = match r.weighted(&[72, 8, 4, 4, 3, 5, 4]) {
            0 => Ending::Complete,
            1 => Ending::Fail,
            2 => Ending::Interrupt,
            3 => Ending::Cancel,
            4 => Ending::LeaseExpiry,
            5 => Ending::MaxSteps,
            _ => Ending::CostLimit,
        };
        let children = if !nested && r.chance(15) { r.range(1, 3) as u32 } else { 0 };
        Self {
            steps,
            ending,
            hitl: None,
            children,
            cancel_while_waiting: children > 0 && r.chance(15),
            measured: r.chance(90),
        }
        .with_card(g, nested)
    }

    fn with_card(mut self, g: &mut Gen, nested: bool) -> Self {
        if nested || !g.rng.chance(15) {
            return self;
        }
        let card_id = g.id("card");
        let r = &mut g.rng;
        let (kind, answer) = match r.below(4) {
            0 => (
                CardKind::Choice {
                    options: vec![ChoiceOption::new("yes", "Yes"), ChoiceOption::new("no", "No")],
                    multiple: false,
                },
                CardAnswer::Choice { values: vec![if r.chance(70) { "yes" } else { "no" }.into()] },
            ),
            1 => {
                (CardKind::Input { required: true, max_length: Some(400) }, CardAnswer::Input { text: r.words(2, 12) })
            }
            2 => (CardKind::Confirm, CardAnswer::Confirm { confirmed: r.chance(80) }),
            _ => (
                CardKind::Form {
                    fields: vec![
                        FormField {
                            name: "title".into(),
                            label: "Title".into(),
                            field: FieldKind::Text { max_length: Some(80) },
                            required: true,
                        },
                        FormField {
                            name: "count".into(),
                            label: "How many".into(),
                            field: FieldKind::Number { min: Some(0), max: Some(10) },
                            required: false,
                        },
                    ],
                },
                CardAnswer::Form {
                    values: [("title".to_string(), json!(r.words(1, 4))), ("count".to_string(), json!(r.range(0, 10)))]
                        .into_iter()
                        .collect(),
                },
            ),
        };
        let mut card = HitlCard::new(card_id, format!("Should I {}?", r.words(2, 5)), kind);
        card.body = r.chance(50).then(|| r.words(5, 20));
        let resolution = if r.chance(25) {
            let on_timeout = match r.below(4) {
                0 => OnTimeout::UseDefault { answer: answer.clone() },
                1 => OnTimeout::Continue,
                2 => OnTimeout::Fail,
                _ => OnTimeout::Cancel,
            };
            card = card.with_timeout(r.range(45, 120), on_timeout);
            CardPlan::Timeout
        } else {
            if r.chance(30) {
                card = card.with_timeout(3_600, OnTimeout::Continue);
            }
            CardPlan::Answer(answer, r.range(1, 3))
        };
        let at_step = r.range(1, u64::from(self.steps.saturating_sub(1)).max(1)) as u32;
        self.hitl = Some(HitlPlan { at_step, card, resolution });
        self
    }
}

fn is_terminal(event_type: &str) -> bool {
    matches!(event_type, "operation.completed" | "operation.failed" | "operation.interrupted" | "operation.cancelled")
}

fn decode_op(event: &NewEvent) -> Option<OperationEvent> {
    OperationEvent::decode(&event.event_type, event.schema_version, &event.payload).ok()
}

impl RunMachine {
    /// A run of `agent` for `user`, started by `start`.
    pub(crate) fn new(g: &mut Gen, user: &str, agent: AgentRef, start: RunStart, plan: RunPlan) -> Self {
        let phase = if matches!(start, RunStart::Child) { Phase_::Claim } else { Phase_::Start };
        let op_id = g.id("op");
        Self::with_id(g, op_id, user, agent, start, plan, phase)
    }

    fn with_id(
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

    fn worker_ctx(&self, g: &mut Gen) -> agentlog_domain::context::Context {
        g.ctx(Actor::worker(self.worker.clone()), &self.user, None)
    }

    fn op_decision(
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
                if op.status == agentlog_domain::operation::OperationStatus::Running {
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

    fn poll_start(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
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
                let start = start_task_run(task, &empty, &run, max_steps, &ctx)?;
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
    fn renewal(&mut self, world: &World, g: &mut Gen) -> Option<Result<Poll, DomainError>> {
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

    fn poll_work(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        if let Some(renewal) = self.renewal(world, g) {
            return renewal;
        }
        if let Some(h) = &self.plan.hitl
            && !self.hitl_done
            && self.steps_done >= h.at_step
        {
            let ctx = self.worker_ctx(g);
            return self.op_decision(world, OperationCommand::AskHuman(h.card.clone()), ctx);
        }
        if self.plan.children > 0 && self.children.is_empty() && self.steps_done >= 1 {
            self.phase = Phase_::Spawn { left: self.plan.children };
            return self.poll(world, g);
        }
        if self.steps_done >= self.plan.steps {
            return self.poll_end(world, g);
        }
        let ctx = self.worker_ctx(g);
        let r = &mut g.rng;
        let cmd = match r.weighted(&[70, 8, 6, 5, 5]) {
            1 => {
                let phases = [Phase::Thinking, Phase::Acting, Phase::Responding, Phase::Finalizing];
                OperationCommand::ChangePhase(phases[r.below(phases.len())])
            }
            2 => OperationCommand::UpdatePlan(Plan {
                explanation: r.chance(50).then(|| r.words(4, 12)),
                steps: (0..r.range(1, 5))
                    .map(|i| PlanStep {
                        text: r.words(2, 6),
                        status: if i < u64::from(self.steps_done) {
                            ItemStatus::Completed
                        } else {
                            ItemStatus::Pending
                        },
                    })
                    .collect(),
            }),
            3 => OperationCommand::UpdateTodos(
                (0..r.range(1, 6))
                    .map(|i| Todo {
                        id: format!("todo-{i}"),
                        text: r.words(2, 6),
                        status: [ItemStatus::Pending, ItemStatus::InProgress, ItemStatus::Completed][r.below(3)],
                    })
                    .collect(),
            ),
            4 => OperationCommand::RecordArtifact(Artifact {
                artifact_id: format!("{}-artifact-{}", self.op_id, r.next_u64() % 1_000_000),
                title: r.words(2, 5),
                kind: ["document", "code", "image", "table"][r.below(4)].into(),
                size_bytes: r.chance(80).then(|| r.range(100, 2_000_000)),
                content_ref: format!("s3://artifacts/{}", r.next_u64()),
            }),
            _ => OperationCommand::RecordStep(self.step_report(g)),
        };
        self.op_decision(world, cmd, ctx)
    }

    fn step_report(&self, g: &mut Gen) -> StepReport {
        let r = &mut g.rng;
        let index = self.steps_done + 1;
        let calls = if r.chance(60) { r.range(1, 3) } else { 0 };
        let tools = ["web-search/search", "code/run", "files/read", "calendar/list", "lobe-memory/recall"];
        let tool_calls = (0..calls)
            .map(|n| ToolCall {
                id: format!("{}-{index}-{n}", self.op_id),
                name: tools[r.below(tools.len())].into(),
                status: Some(if r.chance(92) { "succeeded" } else { "failed" }.into()),
            })
            .collect();
        let usage = if self.plan.measured {
            let input = r.range(200, 4_000);
            let output = r.range(30, 1_500);
            Usage {
                input_tokens: Some(input),
                output_tokens: Some(output),
                total_tokens: Some(input + output),
                cost_micros: r.chance(95).then_some((input + output) * 3),
            }
        } else {
            Usage::default()
        };
        let phase = if calls > 0 { Phase::Acting } else { Phase::Thinking };
        StepReport { phase, tool_calls, usage }
    }

    fn poll_end(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        match self.plan.ending {
            Ending::Complete | Ending::MaxSteps | Ending::CostLimit => {
                let ctx = self.worker_ctx(g);
                let result = Some(g.rng.words(5, 40));
                self.op_decision(world, OperationCommand::Complete { result }, ctx)
            }
            Ending::Fail => {
                let ctx = self.worker_ctx(g);
                let r = &mut g.rng;
                let (kind, code) = [
                    ("provider_error", Some("rate_limited")),
                    ("tool_error", None),
                    ("provider_error", Some("insufficient_budget")),
                    ("runtime_error", Some("context_overflow")),
                ][r.below(4)];
                let error = OperationError {
                    message: format!("{} failed: {}", kind, r.words(3, 8)),
                    error_type: Some(kind.into()),
                    code: code.map(str::to_string),
                };
                self.op_decision(world, OperationCommand::Fail(error), ctx)
            }
            Ending::Interrupt => {
                let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
                let cmd = OperationCommand::Interrupt { reason: "user_stopped".into(), can_resume: g.rng.chance(50) };
                self.op_decision(world, cmd, ctx)
            }
            Ending::Cancel => self.poll_cancel(world, g),
            Ending::LeaseExpiry => {
                self.phase = Phase_::Expire;
                self.poll(world, g)
            }
        }
    }

    fn poll_cancel(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let root = world.ops.get(&self.op_id);
        let mut descendants = Vec::new();
        let mut queue: Vec<String> = root.child_ids().map(str::to_string).collect();
        while let Some(id) = queue.pop() {
            let op = world.ops.get(&id);
            queue.extend(op.child_ids().map(str::to_string));
            descendants.push(op.clone());
        }
        let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
        let parts = cancel_cascade(root, &descendants, Some("cancelled by the user".into()), &ctx)?;
        Ok(Poll::Decide(Decision { ctx, parts: parts.into_iter().map(Part::operation).collect() }))
    }

    fn poll_human(&self, world: &World, g: &mut Gen, asked_round: u64) -> Result<Poll, DomainError> {
        let op = world.ops.get(&self.op_id);
        let (Some(h), Some(pending)) = (&self.plan.hitl, &op.pending_card) else { return Ok(Poll::Wait) };
        match &h.resolution {
            CardPlan::Answer(answer, after_rounds) => {
                if g.round() < asked_round + after_rounds {
                    return Ok(Poll::Wait);
                }
                let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
                let cmd = OperationCommand::AnswerCard { card_id: h.card.card_id.clone(), answer: answer.clone() };
                self.op_decision(world, cmd, ctx)
            }
            CardPlan::Timeout => {
                if pending.deadline.is_none_or(|d| g.now() < d) {
                    return Ok(Poll::Wait);
                }
                let ctx = g.ctx(Actor::system("scheduler"), &self.user, None);
                self.op_decision(world, OperationCommand::TimeoutCard { card_id: h.card.card_id.clone() }, ctx)
            }
        }
    }

    fn poll_spawn(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let parent = world.ops.get(&self.op_id);
        let child_id = g.id("op");
        let mut create = CreateOperation::new(child_id, OperationKind::Subagent, self.agent.clone());
        create.parent_operation_id = Some(self.op_id.clone());
        create.instruction = Some(g.rng.words(4, 14));
        create.trigger = Some("subagent".into());
        let topic = parent.topic_id().map(str::to_string);
        let conversation = topic.as_deref().map(|t| world.conversations.get(t));
        let background_room = conversation.is_some_and(|c| {
            c.exists()
                && c.background_operations.iter().filter(|id| !world.ops.get(id).is_finished()).count()
                    < agentlog_domain::conversation::MAX_BACKGROUND_SUBAGENTS
        });
        if background_room && g.rng.chance(40) {
            create.background = true;
        }
        if create.background {
            create.topic_id = topic;
        }
        let tracked: Vec<Operation> = match (create.background, conversation) {
            (true, Some(c)) => c.tracked_operations().map(|id| world.ops.get(id).clone()).collect(),
            _ => Vec::new(),
        };
        let conversation = if create.background { conversation } else { None };
        let ctx = self.worker_ctx(g);
        let started = operation_start::start_operation(
            &create,
            &Operation::default(),
            conversation,
            &tracked,
            Some(parent),
            &ctx,
        )?;
        let mut parts = vec![Part::operation(started.operation)];
        parts.extend(started.conversation.map(Part::conversation));
        parts.extend(started.parent.map(Part::operation));
        Ok(Poll::Decide(Decision { ctx, parts }))
    }

    fn reaction_decision(
        &self,
        world: &World,
        g: &mut Gen,
        reactions: Vec<Reaction>,
        cause: agentlog_domain::context::Cause,
    ) -> Result<Poll, DomainError> {
        let Some(reaction) = reactions.into_iter().next() else { return Ok(Poll::Wait) };
        reaction_poll(world, g, &self.user, reaction, cause)
    }

    fn poll_follow_up(&mut self, world: &World, g: &mut Gen, f: FollowUp) -> Result<Poll, DomainError> {
        let Some(terminal) = self.terminal.clone() else {
            self.phase = Phase_::Done;
            return Ok(Poll::Done);
        };
        match f {
            FollowUp::ChildResult => {
                let child = world.ops.get(&self.op_id);
                let Some(event) = decode_op(&terminal) else { return self.skip_follow_up(world, g) };
                let Some((parent_id, cmd)) = operation_start::child_result_for_parent(child, &event) else {
                    return self.skip_follow_up(world, g);
                };
                let parent = world.ops.get(&parent_id);
                if parent.is_finished() || !parent.exists() {
                    return self.skip_follow_up(world, g);
                }
                let ctx = g.ctx(Actor::system("child-result"), &self.user, Some(caused_by(&terminal)));
                let events = parent.decide(&cmd, &ctx)?;
                Ok(Poll::Decide(Decision::one(ctx, Part::Operation(parent_id, events))))
            }
            FollowUp::CompleteTopic => {
                let RunStart::Task { task_id, topic_id, trigger } = &self.start else {
                    return self.skip_follow_up(world, g);
                };
                let end = match decode_op(&terminal) {
                    Some(OperationEvent::Completed(_)) => TopicEnd::Done,
                    Some(OperationEvent::Failed(f)) => TopicEnd::Error { message: f.error.message, code: f.error.code },
                    Some(OperationEvent::Cancelled(_)) => TopicEnd::Other { detail: "cancelled".into() },
                    _ => TopicEnd::Other { detail: "interrupted".into() },
                };
                let r = &mut g.rng;
                let handoff = (end == TopicEnd::Done).then(|| Handoff {
                    title: Some(r.words(2, 6)),
                    summary: Some(r.words(8, 30)),
                    key_findings: (0..r.range(0, 4)).map(|_| r.words(3, 9)).collect(),
                    next_action: r.chance(60).then(|| r.words(3, 8)),
                    content: None,
                    brief_decision: None,
                });
                let outcome = TopicOutcome {
                    topic_id: topic_id.clone(),
                    operation_id: self.op_id.clone(),
                    end,
                    run_trigger: *trigger,
                    handoff,
                    last_assistant_content: Some(r.words(4, 40)),
                    human_waiting: false,
                    brief_judgement: Some(r.chance(50)),
                };
                let ctx = g.ctx(Actor::system("task-lifecycle"), &self.user, Some(caused_by(&terminal)));
                let events = world.tasks.get(task_id).decide(&TaskCommand::CompleteTopic(outcome), &ctx)?;
                Ok(Poll::Decide(Decision::one(ctx, Part::Task(task_id.clone(), events))))
            }
            FollowUp::Brief => {
                let (reactions, cause) = match &self.start {
                    RunStart::Task { task_id, .. } => {
                        let task = world.tasks.get(task_id);
                        if let Some(e) = find(&self.last, "task.topic_completed") {
                            match TaskEvent::decode(&e.event_type, e.schema_version, &e.payload) {
                                Ok(TaskEvent::TopicCompleted(c)) => {
                                    (policy::on_topic_completed(task, &c), caused_by(e))
                                }
                                _ => (Vec::new(), caused_by(e)),
                            }
                        } else if let Some(e) = find(&self.last, "task.topic_failed") {
                            match TaskEvent::decode(&e.event_type, e.schema_version, &e.payload) {
                                Ok(TaskEvent::TopicFailed(f)) => (policy::on_topic_failed(task, &f), caused_by(e)),
                                _ => (Vec::new(), caused_by(e)),
                            }
                        } else {
                            return self.skip_follow_up(world, g);
                        }
                    }
                    _ => match decode_op(&terminal) {
                        Some(OperationEvent::Failed(failed)) => {
                            (policy::on_operation_failed(world.ops.get(&self.op_id), &failed), caused_by(&terminal))
                        }
                        _ => return self.skip_follow_up(world, g),
                    },
                };
                if reactions.is_empty() {
                    return self.skip_follow_up(world, g);
                }
                self.reaction_decision(world, g, reactions, cause)
            }
            FollowUp::BriefNotification => {
                let Some(created) = find(&self.last, "brief.created") else { return self.skip_follow_up(world, g) };
                let Ok(BriefEvent::Created(c)) =
                    BriefEvent::decode(&created.event_type, created.schema_version, &created.payload)
                else {
                    return self.skip_follow_up(world, g);
                };
                let cause = caused_by(created);
                self.reaction_decision(world, g, policy::on_brief_created(&c), cause)
            }
        }
    }

    /// Move past a follow-up that has nothing to do, and poll the next one.
    fn skip_follow_up(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        self.phase = self.after_follow_up();
        self.poll(world, g)
    }

    fn first_follow_up(&self) -> Phase_ {
        match self.start {
            RunStart::Child => Phase_::FollowUp(FollowUp::ChildResult),
            RunStart::Task { .. } => Phase_::FollowUp(FollowUp::CompleteTopic),
            _ => Phase_::FollowUp(FollowUp::Brief),
        }
    }

    fn after_follow_up(&self) -> Phase_ {
        match self.phase {
            Phase_::FollowUp(FollowUp::CompleteTopic) => Phase_::FollowUp(FollowUp::Brief),
            Phase_::FollowUp(FollowUp::Brief) => Phase_::FollowUp(FollowUp::BriefNotification),
            _ => Phase_::Done,
        }
    }

    /// The decision of the last poll was applied.
    pub(crate) fn applied(
        &mut self,
        appends: &[StreamAppend],
        world: &World,
        g: &mut Gen,
        spawned: &mut Vec<Box<dyn Story>>,
    ) {
        let events = all_events(appends);
        let own = stream_events(appends, &Operation::stream_id(&self.op_id));
        if self.terminal.is_none()
            && let Some(t) = own.iter().find(|e| is_terminal(&e.event_type))
        {
            self.terminal = Some(t.clone());
            self.last = events;
            self.phase = self.first_follow_up();
            return;
        }
        let renewed_only = own.len() == 1 && own[0].event_type == "operation.lease_renewed";
        let events = &events;
        match self.phase {
            Phase_::Start => self.phase = Phase_::Claim,
            Phase_::Claim => self.phase = Phase_::Work,
            Phase_::Work => {
                if find(events, "operation.step_recorded").is_some() {
                    self.steps_done += 1;
                }
                if find(events, "operation.human_asked").is_some() {
                    self.hitl_done = true;
                    self.phase = Phase_::NotifyHuman;
                }
            }
            Phase_::NotifyHuman => self.phase = Phase_::WaitHuman { asked_round: g.round() },
            Phase_::WaitHuman { .. } => self.phase = Phase_::Claim,
            _ if renewed_only => {}
            Phase_::Spawn { left } => {
                if let Some(created) = events.iter().find(|e| {
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
        self.last = events.clone();
    }
}

/// The decision a policy's reaction calls for, caused by `cause`.
pub(crate) fn reaction_poll(
    world: &World,
    g: &mut Gen,
    user: &str,
    reaction: Reaction,
    cause: agentlog_domain::context::Cause,
) -> Result<Poll, DomainError> {
    match reaction {
        Reaction::CreateBrief(brief) => {
            let ctx = g.ctx(Actor::system("signal-bus"), user, Some(cause));
            let id = brief.brief_id.clone();
            let events = world.briefs.get(&id).decide(&BriefCommand::Create(brief), &ctx)?;
            Ok(Poll::Decide(Decision::one(ctx, Part::Brief(id, events))))
        }
        Reaction::CreateNotification(n) => {
            let ctx = g.ctx(Actor::system("signal-bus"), &n.user_id.clone(), Some(cause));
            notification_poll(world, ctx, n)
        }
    }
}

/// Create a notification for its user.
pub(crate) fn notification_poll(
    world: &World,
    ctx: agentlog_domain::context::Context,
    n: CreateNotification,
) -> Result<Poll, DomainError> {
    let user = n.user_id.clone();
    let events = world.notifications.get(&user).decide(&NotificationCommand::Create(n), &ctx)?;
    Ok(Poll::Decide(Decision::one(ctx, Part::Notification(user, events))))
}

/// A brief created by a person or an agent (not a policy).
pub(crate) fn brief_poll(
    world: &World,
    ctx: agentlog_domain::context::Context,
    brief: CreateBrief,
) -> Result<Poll, DomainError> {
    let id = brief.brief_id.clone();
    let events = world.briefs.get(&id).decide(&BriefCommand::Create(brief), &ctx)?;
    Ok(Poll::Decide(Decision::one(ctx, Part::Brief(id, events))))
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
