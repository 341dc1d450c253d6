//! A run at work: steps, phases, plans, todos, artifacts, scores, its ending, a cancel, a
//! human's answer, sub-agents spawned.

use agentlog_domain::values::Usage;
use agentlog_domain::{
    envelope::Actor,
    error::DomainError,
    operations::{
        Artifact, CreateOperation, ItemStatus, Operation, OperationCommand, OperationError, OperationKind, Phase, Plan,
        PlanStep, StepReport, Todo, ToolCall,
    },
    rules::{cancel_cascade::cancel_cascade, operation_start},
    values::ReviewScore,
};

use super::machine::*;
use super::plan::{CardPlan, Ending};
use crate::{
    story::{Gen, Poll},
    world::{Decision, Part, World},
};

impl RunMachine {
    pub(super) fn poll_work(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
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
        let cmd = match r.weighted(&[70, 8, 6, 5, 5, 3]) {
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
            5 => {
                let score = r.range(20, 100) as u8;
                OperationCommand::RecordScore(ReviewScore {
                    rubric_id: ["accuracy", "helpfulness", "safety"][r.below(3)].into(),
                    score,
                    passed: score >= 60,
                    reason: r.chance(50).then(|| r.words(3, 10)),
                })
            }
            _ => OperationCommand::RecordStep(self.step_report(g)),
        };
        self.op_decision(world, cmd, ctx)
    }

    pub(super) fn step_report(&self, g: &mut Gen) -> StepReport {
        let r = &mut g.rng;
        let index = self.steps_done + 1;
        let calls = if r.chance(60) { r.range(1, 3) } else { 0 };
        let tools = ["web-search/search", "code/run", "files/read", "calendar/list", "lobe-memory/recall"];
        let tool_calls = (0..calls)
            .map(|n| ToolCall {
                id: format!("{}-{index}-{n}", self.op_id),
                name: tools[r.below(tools.len())].into(),
                status: Some(if r.chance(92) { "succeeded" } else { "failed" }.into()),
                arguments: None,
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
        StepReport { phase, tool_calls, usage, budgets: Vec::new() }
    }

    pub(super) fn poll_end(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        match self.plan.ending {
            Ending::Complete | Ending::MaxSteps | Ending::CostLimit => {
                let ctx = self.worker_ctx(g);
                let result = Some(g.rng.words(5, 40));
                self.op_decision(
                    world,
                    OperationCommand::Complete { result, handoff: None, brief_judgement: None },
                    ctx,
                )
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

    pub(super) fn poll_cancel(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
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

    pub(super) fn poll_human(&self, world: &World, g: &mut Gen, asked_round: u64) -> Result<Poll, DomainError> {
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

    pub(super) fn poll_spawn(&self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
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
                    < agentlog_domain::conversations::MAX_BACKGROUND_SUBAGENTS
        });
        if background_room && g.rng.chance(40) {
            create.background = true;
        }
        // A sub-agent runs in its parent's conversation.
        create.topic_id = topic;
        let tracked: Vec<Operation> = match (create.background, conversation) {
            (true, Some(c)) => c.tracked_operations().map(|id| world.ops.get(id).clone()).collect(),
            _ => Vec::new(),
        };

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
}
