//! The agent roster: the built-ins registered at boot, and users' own agents — registered,
//! reconfigured a few times (new model, new prompt, new tools: each a new config version), and
//! sometimes archived.

use agentlog_domain::{
    agents::{Agent, AgentCommand, AgentConfig, AgentConfigPatch, AgentKind, RegisterAgent, builtin_agents},
    aggregate::Aggregate,
    envelope::Actor,
    error::DomainError,
};
use agentlog_eventlog::StreamAppend;

use super::{
    story::{Gen, Poll, Story},
    world::{Decision, Part, World},
};

/// Models the generator spreads runs over (model, provider).
pub(crate) const MODELS: [(&str, &str); 6] = [
    ("gpt-4.1", "openai"),
    ("gpt-4.1-mini", "openai"),
    ("claude-sonnet-4", "anthropic"),
    ("claude-haiku-4", "anthropic"),
    ("gemini-2.5-pro", "google"),
    ("deepseek-v3", "deepseek"),
];

/// Registers every built-in agent (owner `system`) in one decision, as the server does at boot.
pub(crate) struct BootStory {
    done: bool,
}

impl BootStory {
    /// The boot registrations.
    pub(crate) fn new() -> Self {
        Self { done: false }
    }
}

impl Story for BootStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        if self.done {
            return Ok(Poll::Done);
        }
        let ctx = g.ctx(Actor::system("boot"), "system", None);
        let mut parts = Vec::new();
        for register in builtin_agents() {
            let id = register.agent_id.clone();
            let events = world.agents.get(&id).decide(&AgentCommand::Register(register), &ctx)?;
            parts.push(Part::Agent(id, events));
        }
        Ok(Poll::Decide(Decision { ctx, parts }))
    }

    fn applied(&mut self, _: &[StreamAppend], _: &World, _: &mut Gen, _: &mut Vec<Box<dyn Story>>) {
        self.done = true;
    }
}

/// One user agent's life.
pub(crate) struct AgentStory {
    user: String,
    agent_id: String,
    updates_left: u32,
    archive: bool,
    registered: bool,
}

impl AgentStory {
    /// A new agent of `user`.
    pub(crate) fn new(g: &mut Gen, user: &str) -> Self {
        let r = &mut g.rng;
        let updates_left = r.range(0, 3) as u32;
        let archive = r.chance(8);
        Self { user: user.to_string(), agent_id: g.id("agent"), updates_left, archive, registered: false }
    }

    fn decision(&self, world: &World, g: &mut Gen, cmd: AgentCommand) -> Result<Poll, DomainError> {
        let ctx = g.ctx(Actor::user(self.user.clone()), &self.user, None);
        let events = world.agents.get(&self.agent_id).decide(&cmd, &ctx)?;
        Ok(Poll::Decide(Decision::one(ctx, Part::Agent(self.agent_id.clone(), events))))
    }
}

impl Story for AgentStory {
    fn poll(&mut self, world: &World, g: &mut Gen) -> Result<Poll, DomainError> {
        let r = &mut g.rng;
        if !self.registered {
            let (model, provider) = MODELS[r.below(MODELS.len())];
            let kind = if r.chance(10) {
                AgentKind::Heterogeneous {
                    runtime: ["claude-code", "codex", "opencode"][r.below(3)].into(),
                    capabilities: vec!["edit-files".into(), "run-commands".into()],
                }
            } else {
                AgentKind::Native
            };
            let config = AgentConfig {
                slug: format!("{}-{}", r.words(1, 1), r.next_u64() % 100_000),
                title: r.words(1, 3),
                description: r.chance(60).then(|| r.words(5, 20)),
                model: Some(model.into()),
                provider: Some(provider.into()),
                system_role: Some(r.words(10, 60)),
                plugins: (0..r.range(0, 3)).map(|i| format!("plugin-{i}")).collect(),
                kind,
            };
            let register = RegisterAgent { agent_id: self.agent_id.clone(), config, builtin: false };
            return self.decision(world, g, AgentCommand::Register(register));
        }
        // Reconfigure now and then, not every round.
        if self.updates_left > 0 {
            if !r.chance(5) {
                return Ok(Poll::Wait);
            }
            let (model, provider) = MODELS[r.below(MODELS.len())];
            let patch = AgentConfigPatch {
                model: Some(model.into()),
                provider: Some(provider.into()),
                system_role: r.chance(50).then(|| r.words(10, 60)),
                title: r.chance(20).then(|| r.words(1, 3)),
                ..AgentConfigPatch::default()
            };
            return self.decision(world, g, AgentCommand::UpdateConfig(patch));
        }
        if self.archive && !world.agents.get(&self.agent_id).archived {
            if !r.chance(3) {
                return Ok(Poll::Wait);
            }
            return self.decision(world, g, AgentCommand::Archive);
        }
        Ok(Poll::Done)
    }

    fn applied(&mut self, _: &[StreamAppend], _: &World, _: &mut Gen, _: &mut Vec<Box<dyn Story>>) {
        if !self.registered {
            self.registered = true;
        } else if self.updates_left > 0 {
            self.updates_left -= 1;
        } else {
            self.archive = false;
        }
    }
}

/// The agent a story should run: one of the user's own live agents, or a built-in.
pub(crate) fn pick_agent(world: &World, g: &mut Gen, user: &str) -> Option<Agent> {
    let own: Vec<&String> = world.user_agents.get(user).into_iter().flatten().collect();
    let id = if !own.is_empty() && g.rng.chance(80) {
        g.rng.pick(&own).map(|s| s.to_string())
    } else {
        let builtins = ["inbox", "task-agent", "page-agent", "agent-builder"];
        g.rng.pick(&builtins).map(|s| s.to_string())
    }?;
    let agent = world.agents.get(&id);
    (agent.exists() && !agent.archived).then(|| agent.clone())
}
