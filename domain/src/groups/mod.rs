//! Group: a chat group of agents (stream `group-<id>`): members with role participant |
//! supervisor, enabled, order; config with systemPrompt, openingMessage and `maxRounds`
//! (default 10, and really read: it becomes the supervisor's round limit).
//!
//! Each orchestration run (keyed by the supervisor's operation id) is recorded here step by
//! step: `group.orchestration_advanced` carries the executor result, the instruction the
//! [`supervisor`](crate::supervisor::decide) decided and the supervisor state after it. A finished
//! orchestration is dropped from the state, which keeps only the runs in progress.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::scope::Scope;
use crate::streams::StreamKind;
use crate::supervisor::{
    self, DEFAULT_MAX_ROUNDS, ExecutorResult, SupervisorInstruction, SupervisorState,
};

/// A member's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberRole {
    /// Takes part.
    #[default]
    Participant,
    /// Orchestrates (at most one per group).
    Supervisor,
}

/// A member of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupMember {
    /// The agent.
    pub agent_id: String,
    /// Role.
    pub role: MemberRole,
    /// Enabled.
    pub enabled: bool,
    /// Display and speaking order.
    pub order: i32,
}

fn default_max_rounds() -> u32 {
    DEFAULT_MAX_ROUNDS
}

/// A group's config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupConfig {
    /// System prompt for the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Opening message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening_message: Option<String>,
    /// Opening questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opening_questions: Vec<String>,
    /// Direct messages between members allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_dm: Option<bool>,
    /// Most finished actions per orchestration run.
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            system_prompt: None,
            opening_message: None,
            opening_questions: Vec::new(),
            allow_dm: None,
            max_rounds: DEFAULT_MAX_ROUNDS,
        }
    }
}

/// A command to a group.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupCommand {
    /// Create it.
    Create {
        /// Its id.
        group_id: String,
        /// Title.
        title: String,
        /// Config.
        config: GroupConfig,
        /// Initial members.
        members: Vec<GroupMember>,
    },
    /// Replace the config.
    UpdateConfig(GroupConfig),
    /// Add a member (order: after the last when `None`).
    AddMember {
        /// The agent.
        agent_id: String,
        /// Role.
        role: MemberRole,
        /// Enabled.
        enabled: bool,
        /// Order.
        order: Option<i32>,
    },
    /// Change a member.
    UpdateMember {
        /// The agent.
        agent_id: String,
        /// New role.
        role: Option<MemberRole>,
        /// New enabled flag.
        enabled: Option<bool>,
        /// New order.
        order: Option<i32>,
    },
    /// Remove a member.
    RemoveMember {
        /// The agent.
        agent_id: String,
    },
    /// Delete the group.
    Delete,
    /// Start an orchestration run for the supervisor's operation (executor result `init`).
    StartOrchestration {
        /// The supervisor's operation.
        operation_id: String,
    },
    /// Feed an executor result to a running orchestration.
    AdvanceOrchestration {
        /// The supervisor's operation.
        operation_id: String,
        /// What the executor reports.
        result: ExecutorResult,
    },
}

/// `group.created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupCreated {
    /// Its id.
    pub group_id: String,
    /// Title.
    pub title: String,
    /// Config.
    pub config: GroupConfig,
    /// Members.
    pub members: Vec<GroupMember>,
    /// Owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `group.config_updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupConfigUpdated {
    /// The new config.
    pub config: GroupConfig,
}

/// `group.member_added` / `group.member_updated`: the member as it now is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberChanged {
    /// The member.
    #[serde(flatten)]
    pub member: GroupMember,
}

/// `group.member_removed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberRemoved {
    /// The agent.
    pub agent_id: String,
}

/// `group.deleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupDeleted {
    /// When.
    pub at: DateTime<Utc>,
}

/// `group.orchestration_advanced`: one supervisor step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrchestrationAdvanced {
    /// The supervisor's operation.
    pub operation_id: String,
    /// What the executor reported.
    pub result: ExecutorResult,
    /// What the supervisor decided.
    pub instruction: SupervisorInstruction,
    /// The supervisor's state after the step.
    pub state: SupervisorState,
}

crate::domain_events! {
    /// Everything a group records.
    pub enum GroupEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// Created.
        Created(GroupCreated) = "group.created" v 1,
        /// Config replaced.
        ConfigUpdated(GroupConfigUpdated) = "group.config_updated" v 1,
        /// Member added.
        MemberAdded(MemberChanged) = "group.member_added" v 1,
        /// Member changed.
        MemberUpdated(MemberChanged) = "group.member_updated" v 1,
        /// Member removed.
        MemberRemoved(MemberRemoved) = "group.member_removed" v 1,
        /// Deleted.
        Deleted(GroupDeleted) = "group.deleted" v 1,
        /// A supervisor step.
        OrchestrationAdvanced(OrchestrationAdvanced) = "group.orchestration_advanced" v 1,
    }
}

/// The state of a group, folded from `group-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// Its id (empty while it does not exist).
    pub group_id: String,
    /// Owner.
    pub user_id: String,
    /// Title.
    pub title: String,
    /// Config.
    pub config: GroupConfig,
    /// Agent id → member.
    pub members: BTreeMap<String, GroupMember>,
    /// Deleted.
    pub deleted: bool,
    /// Orchestration runs in progress: supervisor operation → supervisor state.
    pub orchestrations: BTreeMap<String, SupervisorState>,
}

impl Group {
    /// Does it exist (and was not deleted)?
    pub fn exists(&self) -> bool {
        !self.group_id.is_empty() && !self.deleted
    }

    /// The supervisor member, if any.
    pub fn supervisor(&self) -> Option<&GroupMember> {
        self.members.values().find(|m| m.role == MemberRole::Supervisor)
    }
}

fn check_config(config: &GroupConfig) -> Result<(), DomainError> {
    if config.max_rounds == 0 {
        return Err(DomainError::validation("config.maxRounds", "must be at least 1"));
    }
    Ok(())
}

fn check_members(members: &BTreeMap<String, GroupMember>) -> Result<(), DomainError> {
    if members.values().filter(|m| m.role == MemberRole::Supervisor).count() > 1 {
        return Err(DomainError::validation("members", "a group has at most one supervisor"));
    }
    Ok(())
}

impl Aggregate for Group {
    type Command = GroupCommand;
    type Event = GroupEvent;
    const KIND: StreamKind = StreamKind::Group;

    fn decide(
        &self,
        command: &GroupCommand,
        ctx: &Context,
    ) -> Result<Vec<GroupEvent>, DomainError> {
        use GroupCommand as C;
        use GroupEvent as E;
        match command {
            C::Create { group_id, title, config, members } => {
                if !self.group_id.is_empty() {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "group",
                        id: self.group_id.clone(),
                    });
                }
                if group_id.trim().is_empty() {
                    return Err(DomainError::validation("groupId", "must not be empty"));
                }
                check_config(config)?;
                let mut by_id = BTreeMap::new();
                for m in members {
                    if by_id.insert(m.agent_id.clone(), m.clone()).is_some() {
                        return Err(DomainError::validation(
                            "members",
                            format!("agent {} is listed twice", m.agent_id),
                        ));
                    }
                }
                check_members(&by_id)?;
                Ok(vec![E::Created(GroupCreated {
                    group_id: group_id.clone(),
                    title: title.clone(),
                    config: config.clone(),
                    members: members.clone(),
                    user_id: ctx.user_id.clone(),
                    at: ctx.now,
                })])
            }
            _ if !self.exists() => Err(DomainError::not_found("group", self.group_id.clone())),
            C::UpdateConfig(config) => {
                check_config(config)?;
                if *config == self.config {
                    return Ok(Vec::new());
                }
                Ok(vec![E::ConfigUpdated(GroupConfigUpdated { config: config.clone() })])
            }
            C::AddMember { agent_id, role, enabled, order } => {
                if agent_id.trim().is_empty() {
                    return Err(DomainError::validation("agentId", "must not be empty"));
                }
                if self.members.contains_key(agent_id) {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "group member",
                        id: agent_id.clone(),
                    });
                }
                let order = order.unwrap_or_else(|| {
                    self.members.values().map(|m| m.order + 1).max().unwrap_or(0)
                });
                let member = GroupMember {
                    agent_id: agent_id.clone(),
                    role: *role,
                    enabled: *enabled,
                    order,
                };
                let mut next = self.members.clone();
                next.insert(agent_id.clone(), member.clone());
                check_members(&next)?;
                Ok(vec![E::MemberAdded(MemberChanged { member })])
            }
            C::UpdateMember { agent_id, role, enabled, order } => {
                let current = self
                    .members
                    .get(agent_id)
                    .ok_or_else(|| DomainError::not_found("group member", agent_id.clone()))?;
                let member = GroupMember {
                    agent_id: agent_id.clone(),
                    role: role.unwrap_or(current.role),
                    enabled: enabled.unwrap_or(current.enabled),
                    order: order.unwrap_or(current.order),
                };
                if member == *current {
                    return Ok(Vec::new());
                }
                let mut next = self.members.clone();
                next.insert(agent_id.clone(), member.clone());
                check_members(&next)?;
                Ok(vec![E::MemberUpdated(MemberChanged { member })])
            }
            C::RemoveMember { agent_id } => {
                if !self.members.contains_key(agent_id) {
                    return Err(DomainError::not_found("group member", agent_id.clone()));
                }
                Ok(vec![E::MemberRemoved(MemberRemoved { agent_id: agent_id.clone() })])
            }
            C::Delete => Ok(vec![E::Deleted(GroupDeleted { at: ctx.now })]),
            C::StartOrchestration { operation_id } => {
                if self.orchestrations.contains_key(operation_id) {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "orchestration",
                        id: operation_id.clone(),
                    });
                }
                let supervisor = self.supervisor().filter(|m| m.enabled).ok_or_else(|| {
                    DomainError::validation("members", "the group has no enabled supervisor")
                })?;
                let state =
                    SupervisorState::new(self.config.max_rounds, supervisor.agent_id.clone());
                let result = ExecutorResult::Init {
                    payload: supervisor::InitPayload { group_id: Some(self.group_id.clone()) },
                };
                let (state, instruction) = supervisor::decide(&state, &result);
                Ok(vec![E::OrchestrationAdvanced(OrchestrationAdvanced {
                    operation_id: operation_id.clone(),
                    result,
                    instruction,
                    state,
                })])
            }
            C::AdvanceOrchestration { operation_id, result } => {
                let state = self
                    .orchestrations
                    .get(operation_id)
                    .ok_or_else(|| DomainError::not_found("orchestration", operation_id.clone()))?;
                let (state, instruction) = supervisor::decide(state, result);
                Ok(vec![E::OrchestrationAdvanced(OrchestrationAdvanced {
                    operation_id: operation_id.clone(),
                    result: result.clone(),
                    instruction,
                    state,
                })])
            }
        }
    }

    fn evolve(mut self, event: &GroupEvent) -> Self {
        use GroupEvent as E;
        match event {
            E::Created(e) => {
                self.group_id = e.group_id.clone();
                self.user_id = e.user_id.clone();
                self.title = e.title.clone();
                self.config = e.config.clone();
                self.members = e.members.iter().map(|m| (m.agent_id.clone(), m.clone())).collect();
            }
            E::ConfigUpdated(e) => self.config = e.config.clone(),
            E::MemberAdded(e) | E::MemberUpdated(e) => {
                self.members.insert(e.member.agent_id.clone(), e.member.clone());
            }
            E::MemberRemoved(e) => {
                self.members.remove(&e.agent_id);
            }
            E::Deleted(_) => {
                self.deleted = true;
                self.orchestrations.clear();
            }
            E::OrchestrationAdvanced(e) => {
                if matches!(e.instruction, SupervisorInstruction::Finish { .. }) {
                    self.orchestrations.remove(&e.operation_id);
                } else {
                    self.orchestrations.insert(e.operation_id.clone(), e.state.clone());
                }
            }
        }
        self
    }

    fn scope(&self) -> Scope {
        Scope {
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.members.values().filter(|m| m.role == MemberRole::Supervisor).count() > 1 {
            return Err("two supervisors".into());
        }
        if self.config.max_rounds == 0 && self.exists() {
            return Err("maxRounds 0".into());
        }
        if let Some((op, s)) = self.orchestrations.iter().find(|(_, s)| s.round >= s.max_rounds) {
            return Err(format!("orchestration {op} runs past its max rounds ({})", s.round));
        }
        for (id, m) in &self.members {
            if *id != m.agent_id {
                return Err(format!("member key {id} holds {}", m.agent_id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
