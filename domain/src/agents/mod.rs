//! Agent: the roster (LobeHub's agent manager). Every config change is an event carrying the
//! whole new config and its version, and an operation records the version it ran under, so a
//! replay shows exactly which model and prompt a run used.
//!
//! The built-in agents of upstream ([`BUILTIN_AGENT_SLUGS`]) exist from the start: the server
//! registers [`builtin_agents`] at boot (stream `agent-<slug>`, expected version "no stream",
//! so two instances racing write once). Tasks with no assignee fall back to [`INBOX_AGENT_ID`].
//!
//! ```
//! use agentlog_domain::agents::{builtin_agents, INBOX_AGENT_ID};
//! assert!(builtin_agents().iter().any(|a| a.agent_id == INBOX_AGENT_ID));
//! ```

use serde::{Deserialize, Serialize};

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::scope::Scope;
use crate::streams::StreamKind;
use crate::values::AgentRef;

/// The built-in inbox agent: the default assistant and the fallback assignee of tasks.
pub const INBOX_AGENT_ID: &str = "inbox";

/// Upstream's built-in agent slugs (`packages/builtin-agents`, `BUILTIN_AGENT_SLUGS`).
pub const BUILTIN_AGENT_SLUGS: [&str; 12] = [
    "inbox",
    "group-supervisor",
    "group-agent-builder",
    "agent-builder",
    "task-agent",
    "verify-agent",
    "page-agent",
    "web-onboarding",
    "skill-management",
    "self-reflection",
    "self-feedback-intent",
    "nightly-review",
];

/// Native (runs on agentlog's model settings) or heterogeneous (an external CLI runtime that
/// ignores model and plugins).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentKind {
    /// Uses the model, provider and plugins below.
    #[default]
    Native,
    /// An external runtime (`claude-code`, `codex`, `amp`, `hermes`, `opencode`, `openclaw`).
    Heterogeneous {
        /// The runtime.
        runtime: String,
        /// What it can do (`edit-files`, `run-commands`, …).
        #[serde(default)]
        capabilities: Vec<String>,
    },
}

/// An agent's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    /// Unique short name.
    pub slug: String,
    /// Display title.
    pub title: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Model (none = the user's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// Plugins (tool identifiers).
    #[serde(default)]
    pub plugins: Vec<String>,
    /// Native or heterogeneous.
    #[serde(default)]
    pub kind: AgentKind,
}

/// A partial config change; `None` leaves a field as it is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfigPatch {
    /// New title.
    pub title: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New model.
    pub model: Option<String>,
    /// New provider.
    pub provider: Option<String>,
    /// New system prompt.
    pub system_role: Option<String>,
    /// New plugin list (replaces the old one).
    pub plugins: Option<Vec<String>>,
    /// New kind.
    pub kind: Option<AgentKind>,
}

/// Register an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterAgent {
    /// Its id.
    pub agent_id: String,
    /// Its config.
    pub config: AgentConfig,
    /// One of upstream's built-in agents.
    #[serde(default)]
    pub builtin: bool,
}

/// A command to an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentCommand {
    /// Register it (config version 1).
    Register(RegisterAgent),
    /// Change its config (version + 1); a patch that changes nothing records nothing.
    UpdateConfig(AgentConfigPatch),
    /// Retire it; it can no longer run.
    Archive,
}

/// `agent.registered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRegistered {
    /// What was registered.
    #[serde(flatten)]
    pub agent: RegisterAgent,
    /// Config version (1).
    pub version: u64,
    /// The owner (`system` for built-ins).
    pub user_id: String,
}

/// `agent.config_updated`: the whole new config and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfigUpdated {
    /// The new version.
    pub version: u64,
    /// The new config.
    pub config: AgentConfig,
    /// Names of the changed fields.
    pub changed: Vec<String>,
}

/// `agent.archived`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentArchived {
    /// When.
    pub at: chrono::DateTime<chrono::Utc>,
}

crate::domain_events! {
    /// Everything an agent records.
    pub enum AgentEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// Registered.
        Registered(AgentRegistered) = "agent.registered" v 1,
        /// Config changed.
        ConfigUpdated(AgentConfigUpdated) = "agent.config_updated" v 1,
        /// Retired.
        Archived(AgentArchived) = "agent.archived" v 1,
    }
}

/// The state of one agent, folded from `agent-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    /// Its id (empty while it does not exist).
    pub agent_id: String,
    /// The owner.
    pub user_id: String,
    /// Current config.
    pub config: AgentConfig,
    /// Current config version (0 while it does not exist).
    pub version: u64,
    /// A built-in agent.
    pub builtin: bool,
    /// Retired.
    pub archived: bool,
}

impl Agent {
    /// Does it exist?
    pub fn exists(&self) -> bool {
        self.version > 0
    }

    /// What an operation records when it runs under this agent now.
    pub fn run_ref(&self) -> Result<AgentRef, DomainError> {
        if !self.exists() {
            return Err(DomainError::not_found("agent", self.agent_id.clone()));
        }
        if self.archived {
            return Err(DomainError::transition("agent", "archived", "run"));
        }
        Ok(AgentRef {
            agent_id: self.agent_id.clone(),
            config_version: self.version,
            model: self.config.model.clone(),
            provider: self.config.provider.clone(),
        })
    }
}

fn check_config(config: &AgentConfig) -> Result<(), DomainError> {
    if config.slug.trim().is_empty() {
        return Err(DomainError::validation("config.slug", "must not be empty"));
    }
    if let AgentKind::Heterogeneous { runtime, .. } = &config.kind
        && runtime.trim().is_empty()
    {
        return Err(DomainError::validation("config.kind.runtime", "must not be empty"));
    }
    Ok(())
}

fn apply_patch(config: &AgentConfig, patch: &AgentConfigPatch) -> (AgentConfig, Vec<String>) {
    let mut next = config.clone();
    let mut changed = Vec::new();
    fn set<T: PartialEq + Clone>(
        slot: &mut T,
        value: &Option<T>,
        name: &str,
        changed: &mut Vec<String>,
    ) {
        if let Some(v) = value
            && slot != v
        {
            *slot = v.clone();
            changed.push(name.to_string());
        }
    }
    set(&mut next.title, &patch.title, "title", &mut changed);
    let wrap = |v: &Option<String>| v.as_ref().map(|s| Some(s.clone()));
    set(&mut next.description, &wrap(&patch.description), "description", &mut changed);
    set(&mut next.model, &wrap(&patch.model), "model", &mut changed);
    set(&mut next.provider, &wrap(&patch.provider), "provider", &mut changed);
    set(&mut next.system_role, &wrap(&patch.system_role), "systemRole", &mut changed);
    set(&mut next.plugins, &patch.plugins, "plugins", &mut changed);
    set(&mut next.kind, &patch.kind, "kind", &mut changed);
    (next, changed)
}

impl Aggregate for Agent {
    type Command = AgentCommand;
    type Event = AgentEvent;
    const KIND: StreamKind = StreamKind::Agent;

    /// The built-ins are everyone's: their global streams `agent-<slug>`.
    fn shared_id(id: &str) -> bool {
        BUILTIN_AGENT_SLUGS.contains(&id)
    }

    fn decide(
        &self,
        command: &AgentCommand,
        ctx: &Context,
    ) -> Result<Vec<AgentEvent>, DomainError> {
        match (self.exists(), command) {
            (false, AgentCommand::Register(register)) => {
                if register.agent_id.trim().is_empty() {
                    return Err(DomainError::validation("agentId", "must not be empty"));
                }
                // Upstream's built-in ids are reserved for the built-ins, and only they are.
                let reserved = BUILTIN_AGENT_SLUGS.contains(&register.agent_id.as_str());
                if reserved && !register.builtin {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "built-in agent",
                        id: register.agent_id.clone(),
                    });
                }
                if register.builtin && !reserved {
                    return Err(DomainError::validation(
                        "builtin",
                        "only upstream's built-in agents are built in",
                    ));
                }
                check_config(&register.config)?;
                Ok(vec![AgentEvent::Registered(AgentRegistered {
                    agent: register.clone(),
                    version: 1,
                    user_id: ctx.user_id.clone(),
                })])
            }
            (true, AgentCommand::Register(_)) => {
                Err(DomainError::AlreadyExists { aggregate: "agent", id: self.agent_id.clone() })
            }
            (false, _) => Err(DomainError::not_found("agent", self.agent_id.clone())),
            (true, _) if self.archived => {
                Err(DomainError::transition("agent", "archived", "change"))
            }
            (true, AgentCommand::UpdateConfig(patch)) => {
                let (config, changed) = apply_patch(&self.config, patch);
                if changed.is_empty() {
                    return Ok(Vec::new());
                }
                check_config(&config)?;
                Ok(vec![AgentEvent::ConfigUpdated(AgentConfigUpdated {
                    version: self.version + 1,
                    config,
                    changed,
                })])
            }
            (true, AgentCommand::Archive) if self.builtin => {
                Err(DomainError::transition("agent", "built-in", "archive"))
            }
            (true, AgentCommand::Archive) => {
                Ok(vec![AgentEvent::Archived(AgentArchived { at: ctx.now })])
            }
        }
    }

    fn evolve(mut self, event: &AgentEvent) -> Self {
        match event {
            AgentEvent::Registered(e) => {
                self.agent_id = e.agent.agent_id.clone();
                self.config = e.agent.config.clone();
                self.builtin = e.agent.builtin;
                self.version = e.version;
                self.user_id = e.user_id.clone();
            }
            AgentEvent::ConfigUpdated(e) => {
                self.config = e.config.clone();
                self.version = e.version;
            }
            AgentEvent::Archived(_) => self.archived = true,
        }
        self
    }

    fn scope(&self) -> Scope {
        Scope {
            agent_id: (!self.agent_id.is_empty()).then(|| self.agent_id.clone()),
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.exists() && self.agent_id.is_empty() {
            return Err("an existing agent without id".into());
        }
        if !self.exists() && (self.archived || self.builtin) {
            return Err("flags on an agent that does not exist".into());
        }
        Ok(())
    }
}

/// The registrations of upstream's built-in agents (id = slug, no model: the user's default).
pub fn builtin_agents() -> Vec<RegisterAgent> {
    BUILTIN_AGENT_SLUGS
        .iter()
        .map(|slug| RegisterAgent {
            agent_id: (*slug).to_string(),
            config: AgentConfig {
                slug: (*slug).to_string(),
                title: builtin_title(slug).to_string(),
                ..AgentConfig::default()
            },
            builtin: true,
        })
        .collect()
}

fn builtin_title(slug: &str) -> &'static str {
    match slug {
        "inbox" => "Inbox",
        "group-supervisor" => "Group Supervisor",
        "group-agent-builder" => "Group Builder",
        "agent-builder" => "Agent Builder",
        "task-agent" => "Task Agent",
        "verify-agent" => "Verify Agent",
        "page-agent" => "Page Agent",
        "web-onboarding" => "Onboarding",
        "skill-management" => "Skill Management",
        "self-reflection" => "Self Reflection",
        "self-feedback-intent" => "Self Feedback",
        "nightly-review" => "Nightly Review",
        _ => "Agent",
    }
}

#[cfg(test)]
mod tests;
