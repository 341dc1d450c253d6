//! A chat group: created with members and a supervisor, reconfigured, members added, changed
//! and removed, and orchestration runs — the supervisor's run, and its decision table driven
//! step by step (`group.orchestration_advanced`) until it finishes.

use agentlog_domain::{
    aggregate::Aggregate,
    envelope::Actor,
    error::DomainError,
    groups::{GroupCommand, GroupConfig, GroupMember, MemberRole},
    supervisor::{ActionPayload, DecidedPayload, ExecutorResult},
    values::AgentRef,
};
use agentlog_eventlog::StreamAppend;
use serde_json::{Map, json};

use super::{
    run::{RunMachine, RunPlan, RunStart, RunStory},
    story::{Gen, Poll, Story},
    world::{Decision, Part, World},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Create,
    Configure,
    AddMember,
    UpdateMember,
    Orchestrate,
    RemoveMember,
    Delete,
    Done,
}

/// One group's life.
pub(crate) struct GroupStory {
    user: String,
    group_id: String,
    members: Vec<String>,
    spare: Option<String>,
    supervisor: AgentRef,
    step: Step,
    /// The orchestration in progress: the supervisor's operation and where it is.
    orchestration: Option<(String, u32)>,
}

impl GroupStory {
    /// A group of `user` with `members` (agent ids) run by `supervisor`.
    pub(crate) fn new(
        g: &mut Gen,
        user: &str,
        supervisor: AgentRef,
        members: Vec<String>,
        spare: Option<String>,
    ) -> Self {
        Self {
            user: user.to_string(),
            group_id: g.id("group"),
            members,
            spare,
            supervisor,
            step: Step::Create,
            orchestration: None,
        }
    }

    fn decision(&self, world: &World, g: &mut Gen, cmd: GroupCommand) -> Result<Poll, DomainError> {
        let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
        let events = world.groups.get(&self.group_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Group(self.group_id.clone(), events))))
    }

    fn orchestrate(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let Some((op_id, round)) = self.orchestration.clone() else {
            self.step = Step::RemoveMember;
            return self.poll(world, g);
        };
        let running = world.groups.get(&self.group_id).orchestrations.contains_key(&op_id);
        let ctx = g.ctx(Actor::system("group-orchestration"), &self.user, None);
        let cmd = if round == 0 {
            GroupCommand::StartOrchestration { operation_id: op_id }
        } else if !running {
            self.orchestration = None;
            return self.poll(world, g);
        } else if round % 2 == 1 {
            let finish = round >= 5 || g.rng.chance(20);
            let speaker = g.rng.pick(&self.members).cloned();
            let mut params = Map::new();
            if let Some(agent) = speaker {
                params.insert("agentId".into(), json!(agent));
                params.insert("instruction".into(), json!(g.rng.words(3, 10)));
            }
            let decision = if finish { "finish" } else { ["speak", "broadcast"][g.rng.below(2)] };
            GroupCommand::AdvanceOrchestration {
                operation_id: op_id,
                result: ExecutorResult::SupervisorDecided {
                    payload: DecidedPayload { decision: decision.into(), params, skip_call_supervisor: None },
                },
            }
        } else {
            let payload = ActionPayload {
                agent_id: g.rng.pick(&self.members).cloned(),
                completed: Some(true),
                success: Some(true),
                result: Some(json!(g.rng.words(4, 20))),
                ..ActionPayload::default()
            };
            GroupCommand::AdvanceOrchestration { operation_id: op_id, result: ExecutorResult::AgentSpoke { payload } }
        };
        let events = world.groups.get(&self.group_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Group(self.group_id.clone(), events))))
    }
}

impl Story for GroupStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        match self.step {
            Step::Create => {
                let mut members: Vec<GroupMember> = self
                    .members
                    .iter()
                    .enumerate()
                    .map(|(i, agent)| GroupMember {
                        agent_id: agent.clone(),
                        role: MemberRole::Participant,
                        enabled: true,
                        order: i as i32,
                    })
                    .collect();
                members.push(GroupMember {
                    agent_id: self.supervisor.agent_id.clone(),
                    role: MemberRole::Supervisor,
                    enabled: true,
                    order: members.len() as i32,
                });
                let config = GroupConfig {
                    system_prompt: Some(g.rng.words(5, 30)),
                    opening_message: g.rng.chance(50).then(|| g.rng.words(3, 12)),
                    opening_questions: Vec::new(),
                    allow_dm: Some(g.rng.chance(50)),
                    max_rounds: g.rng.range(3, 10) as u32,
                };
                let cmd =
                    GroupCommand::Create { group_id: self.group_id.clone(), title: g.rng.words(1, 4), config, members };
                self.decision(world, g, cmd)
            }
            Step::Configure => {
                let mut config = world.groups.get(&self.group_id).config.clone();
                config.max_rounds = g.rng.range(3, 12) as u32;
                config.system_prompt = Some(g.rng.words(5, 30));
                self.decision(world, g, GroupCommand::UpdateConfig(config))
            }
            Step::AddMember => match self.spare.clone() {
                Some(agent_id) if !world.groups.get(&self.group_id).members.contains_key(&agent_id) => {
                    let cmd =
                        GroupCommand::AddMember { agent_id, role: MemberRole::Participant, enabled: true, order: None };
                    self.decision(world, g, cmd)
                }
                _ => {
                    self.step = Step::UpdateMember;
                    self.poll(world, g)
                }
            },
            Step::UpdateMember => {
                let Some(agent_id) = self.members.first().cloned() else {
                    self.step = Step::Delete;
                    return self.poll(world, g);
                };
                let cmd = GroupCommand::UpdateMember {
                    agent_id,
                    role: None,
                    enabled: Some(g.rng.chance(70)),
                    order: Some(g.rng.range(0, 9) as i32),
                };
                self.decision(world, g, cmd)
            }
            Step::Orchestrate => self.orchestrate(world, g),
            Step::RemoveMember => match self.spare.clone() {
                Some(agent_id) if world.groups.get(&self.group_id).members.contains_key(&agent_id) => {
                    self.decision(world, g, GroupCommand::RemoveMember { agent_id })
                }
                _ => {
                    self.step = Step::Delete;
                    self.poll(world, g)
                }
            },
            Step::Delete => {
                if g.rng.chance(70) {
                    self.step = Step::Done;
                    return Ok(Poll::Done);
                }
                self.decision(world, g, GroupCommand::Delete)
            }
            Step::Done => Ok(Poll::Done),
        }
    }

    fn applied(&mut self, _: &[StreamAppend], _: &World, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        self.step = match self.step {
            Step::Create => Step::Configure,
            Step::Configure => Step::AddMember,
            Step::AddMember => Step::UpdateMember,
            Step::UpdateMember => {
                self.start_orchestration(g, spawned);
                Step::Orchestrate
            }
            Step::Orchestrate => {
                if let Some((_, round)) = self.orchestration.as_mut() {
                    *round += 1;
                }
                Step::Orchestrate
            }
            Step::RemoveMember => Step::Delete,
            Step::Delete | Step::Done => Step::Done,
        };
    }

    fn forget(&self, world: &mut World) {
        world.groups.forget(&self.group_id);
    }
}

impl GroupStory {
    /// The supervisor's run (a story of its own) and a fresh orchestration for it.
    fn start_orchestration(&mut self, g: &mut Gen, spawned: &mut Vec<Box<dyn Story>>) {
        let plan = RunPlan::draw(g, true);
        let run = RunMachine::new(
            g,
            &self.user,
            self.supervisor.clone(),
            RunStart::Group { group_id: self.group_id.clone() },
            plan,
        );
        self.orchestration = Some((run.op_id.clone(), 0));
        spawned.push(Box::new(RunStory { run }));
    }
}
