//! A task's life: created (assigned or not, sometimes automated, sometimes a subtask), linked to
//! earlier tasks, documents pinned, comments, edits, a few runs (each a topic and an operation,
//! then the lifecycle's topic completion and the policies' briefs), reviews, and an end.

use agentlog_domain::{
    agents::INBOX_AGENT_ID,
    aggregate::Aggregate,
    envelope::Actor,
    error::DomainError,
    tasks::{
        AutomationMode, BlocksGraph, CommentAuthor, CreateTask, DependencyKind, PinnedBy, RunTrigger, ScheduleConfig,
        TaskCommand, TaskConfig, TaskPatch, TaskStatus,
    },
    values::{AgentRef, ReviewScore},
};
use agentlog_eventlog::StreamAppend;

use super::{
    run::{RunMachine, RunPlan, RunStart},
    story::{Gen, Poll, Story},
    world::{Decision, Part, World},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Create,
    Depend,
    Pin,
    Comment,
    Edit,
    Run,
    Review,
    End,
    Done,
}

/// One task, from creation to its end.
pub(crate) struct TaskStory {
    user: String,
    task_id: String,
    assignee: Option<String>,
    step: Step,
    deps_left: u32,
    runs_left: u32,
    run: Option<RunMachine>,
    last_topic: Option<String>,
    ops: Vec<String>,
}

impl TaskStory {
    /// A task of `user`, assigned to `assignee` (the inbox agent runs it when `None`).
    pub(crate) fn new(g: &mut Gen, user: &str, assignee: Option<String>) -> Self {
        let r = &mut g.rng;
        let deps_left = if r.chance(40) { r.range(1, 2) as u32 } else { 0 };
        let runs_left = r.range(1, 3) as u32;
        Self {
            user: user.to_string(),
            task_id: g.id("task"),
            assignee,
            step: Step::Create,
            deps_left,
            runs_left,
            run: None,
            last_topic: None,
            ops: Vec::new(),
        }
    }

    fn decision(&self, world: &World, g: &mut Gen, actor: Actor, cmd: TaskCommand) -> Result<Poll, DomainError> {
        let ctx = g.ctx(actor, &self.user, None);
        let events = world.tasks.get(&self.task_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Task(self.task_id.clone(), events))))
    }

    fn user_actor(&self) -> Actor {
        Actor::user(self.user.clone())
    }

    /// The agent a run uses: the assignee's current config, else the inbox agent.
    fn run_agent(&self, world: &World) -> Result<AgentRef, DomainError> {
        let task = world.tasks.get(&self.task_id);
        let id = task.assignee_agent_id.as_deref().unwrap_or(INBOX_AGENT_ID);
        let agent = world.agents.get(id);
        match agent.run_ref() {
            Ok(r) => Ok(r),
            // An archived assignee still runs the task under its last config (the roster
            // refuses new runs; a task's pinned agent is the user's to change).
            Err(_) if agent.exists() => Ok(AgentRef {
                agent_id: id.to_string(),
                config_version: agent.version,
                model: agent.config.model.clone(),
                provider: agent.config.provider.clone(),
            }),
            Err(e) => Err(e),
        }
    }

    fn advance(&mut self) {
        self.step = match self.step {
            Step::Create => Step::Depend,
            Step::Depend if self.deps_left > 0 => Step::Depend,
            Step::Depend => Step::Pin,
            Step::Pin => Step::Comment,
            Step::Comment => Step::Edit,
            Step::Edit => Step::Run,
            Step::Run | Step::Review if self.runs_left > 0 => Step::Run,
            Step::Run | Step::Review => Step::End,
            Step::End | Step::Done => Step::Done,
        };
    }
}

impl Story for TaskStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let r = &mut g.rng;
        match self.step {
            Step::Create => {
                let mut create =
                    CreateTask::new(self.task_id.clone(), format!("T-{}", r.range(1, 99_999)), r.words(6, 40));
                create.name = Some(r.words(2, 6));
                create.description = r.chance(50).then(|| r.words(5, 30));
                create.priority = r.range(0, 4) as u8;
                create.assignee_agent_id = self.assignee.clone();
                let recent = world.recent_tasks.get(&self.user);
                if r.chance(20)
                    && let Some(parent) = recent.and_then(|t| t.back())
                {
                    create.parent_task_id = Some(parent.clone());
                }
                if r.chance(20) {
                    create.automation_mode = Some(AutomationMode::Schedule);
                    create.schedule = ScheduleConfig {
                        pattern: Some("0 * * * *".into()),
                        timezone: "UTC".into(),
                        max_executions: None,
                    };
                    create.max_topics = Some(r.range(2, 5) as u32);
                }
                create.config = TaskConfig {
                    model: None,
                    provider: None,
                    pause_after_topic: r.chance(70).then_some(true),
                    review_enabled: r.chance(20),
                };
                self.decision(world, g, self.user_actor(), TaskCommand::Create(create))
            }
            Step::Depend => {
                let task = world.tasks.get(&self.task_id);
                let candidates: Vec<&String> = world
                    .recent_tasks
                    .get(&self.user)
                    .into_iter()
                    .flatten()
                    .filter(|t| **t != self.task_id && !task.dependencies.contains_key(*t))
                    .collect();
                let Some(upstream) = r.pick(&candidates).map(|s| s.to_string()) else {
                    self.deps_left = 0;
                    self.advance();
                    return self.poll(world, g);
                };
                // Dependencies only point at older tasks, so `blocks` edges never close a cycle.
                let kind = if r.chance(60) { DependencyKind::Blocks } else { DependencyKind::Relates };
                let cmd = TaskCommand::AddDependency { depends_on_id: upstream, kind, graph: BlocksGraph::default() };
                self.decision(world, g, self.user_actor(), cmd)
            }
            Step::Pin => {
                let pinned_by = [PinnedBy::User, PinnedBy::Agent, PinnedBy::System][r.below(3)];
                let cmd = TaskCommand::PinDocument { document_id: g.id("doc"), pinned_by };
                self.decision(world, g, self.user_actor(), cmd)
            }
            Step::Comment => {
                let author = if r.chance(60) {
                    CommentAuthor::User(self.user.clone())
                } else {
                    CommentAuthor::Agent(self.assignee.clone().unwrap_or_else(|| INBOX_AGENT_ID.into()))
                };
                let cmd = TaskCommand::AddComment {
                    comment_id: g.id("comment"),
                    author,
                    content: g.rng.words(3, 30),
                    brief_id: None,
                    topic_id: self.last_topic.clone(),
                };
                self.decision(world, g, self.user_actor(), cmd)
            }
            Step::Edit => {
                let patch = TaskPatch {
                    name: r.chance(50).then(|| r.words(2, 6)),
                    instruction: None,
                    description: r.chance(50).then(|| r.words(5, 20)),
                    priority: Some(r.range(0, 4) as u8),
                };
                self.decision(world, g, self.user_actor(), TaskCommand::Update(patch))
            }
            Step::Run => {
                if self.run.is_none() {
                    let task = world.tasks.get(&self.task_id);
                    if task.status == TaskStatus::Canceled {
                        self.runs_left = 0;
                        self.step = Step::End;
                        return self.poll(world, g);
                    }
                    if task.running_topics().next().is_some() {
                        return Ok(Poll::Wait);
                    }
                    if task.max_topics.is_some_and(|max| task.total_topics >= max) {
                        self.runs_left = 0;
                        self.step = Step::End;
                        return self.poll(world, g);
                    }
                    let agent = self.run_agent(world)?;
                    let trigger =
                        if task.automation_mode.is_some() { RunTrigger::Schedule } else { RunTrigger::Manual };
                    let plan = RunPlan::draw(g, false);
                    let topic_id = g.id("topic");
                    let start = RunStart::Task { task_id: self.task_id.clone(), topic_id: topic_id.clone(), trigger };
                    let machine = RunMachine::new(g, &self.user, agent, start, plan);
                    self.ops.push(machine.op_id.clone());
                    self.last_topic = Some(topic_id);
                    self.run = Some(machine);
                }
                let Some(run) = self.run.as_mut() else { return Ok(Poll::Wait) };
                match run.poll(world, g)? {
                    Poll::Done => {
                        self.run = None;
                        self.runs_left = self.runs_left.saturating_sub(1);
                        self.step = if g.rng.chance(30) { Step::Review } else { Step::Run };
                        if self.step == Step::Run && self.runs_left == 0 {
                            self.step = Step::End;
                        }
                        self.poll(world, g)
                    }
                    other => Ok(other),
                }
            }
            Step::Review => {
                let Some(topic_id) = self.last_topic.clone() else {
                    self.advance();
                    return self.poll(world, g);
                };
                let scores: Vec<ReviewScore> = (0..r.range(1, 3))
                    .map(|i| {
                        let score = r.range(20, 100) as u8;
                        ReviewScore {
                            rubric_id: format!("rubric-{i}"),
                            score,
                            passed: score >= 60,
                            reason: r.chance(50).then(|| r.words(3, 12)),
                        }
                    })
                    .collect();
                let score = (scores.iter().map(|s| u32::from(s.score)).sum::<u32>() / scores.len().max(1) as u32) as u8;
                let cmd = TaskCommand::ReviewTopic { topic_id, score, passed: score >= 60, scores };
                self.decision(world, g, Actor::agent("verify-agent"), cmd)
            }
            Step::End => {
                let status = world.tasks.get(&self.task_id).status;
                let to = match r.weighted(&[40, 10, 50]) {
                    0 => TaskStatus::Completed,
                    1 => TaskStatus::Canceled,
                    _ => {
                        self.step = Step::Done;
                        return Ok(Poll::Done);
                    }
                };
                if status == to || status == TaskStatus::Running || !status_can_move(status, to) {
                    self.step = Step::Done;
                    return Ok(Poll::Done);
                }
                self.decision(world, g, self.user_actor(), TaskCommand::ChangeStatus { to, error: None })
            }
            Step::Done => Ok(Poll::Done),
        }
    }

    fn applied(&mut self, appends: &[StreamAppend], world: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        match self.step {
            Step::Run => {
                if let Some(run) = self.run.as_mut() {
                    run.applied(appends, world, g, spawned);
                }
            }
            Step::Depend => {
                self.deps_left = self.deps_left.saturating_sub(1);
                self.advance();
            }
            Step::Review => self.advance(),
            _ => self.advance(),
        }
    }

    fn forget(&self, world: &mut World) {
        world.tasks.forget(&self.task_id);
        for op in &self.ops {
            world.forget_operation_tree(op);
        }
    }
}

/// Mirrors the task's status rule (completed and canceled only go back to backlog or on to
/// canceled), so the story never asks for a refused change.
fn status_can_move(from: TaskStatus, to: TaskStatus) -> bool {
    match from {
        TaskStatus::Canceled => to == TaskStatus::Backlog,
        TaskStatus::Completed => matches!(to, TaskStatus::Backlog | TaskStatus::Canceled),
        _ => true,
    }
}
