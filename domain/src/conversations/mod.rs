//! Conversation: a topic's messages (stream `conversation@<owner>/<topicId>`: topic ids are per
//! owner).
//!
//! Messages are appended (idempotent on the client's `requestId`), edited, deleted (soft),
//! branches are switched by setting `metadata.activeBranchIndex` on a parent, and threads are
//! side branches (messages with a `threadId`). The read model is the conversation tree.
//!
//! The decision state is small on purpose — a busy conversation must not need its whole stream
//! to decide: per message only its role, parent, thread, deleted flag and number of non-tool
//! children; the request-id → message-id map; threads; and the operations it tracks (its
//! current conversation operation and its background sub-agents). Message bodies live only in
//! the events and the read model.

pub mod event;
mod message_group;
pub mod model;
mod state;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use event::*;
pub use message_group::NewMessageGroup;
use model::non_empty;
pub use model::{
    ChatMessage, MAX_BACKGROUND_SUBAGENTS, MessageFacts, MessageGroupKind, ThreadKind,
};
pub use state::Conversation;

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::operations::OperationKind;
use crate::scope::Scope;
use crate::streams::StreamKind;

/// A command to a conversation.
#[derive(Debug, Clone, PartialEq)]
// Commands are built once and matched; boxing the big variant buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum ConversationCommand {
    /// Open the conversation.
    Create {
        /// Its topic id.
        topic_id: String,
        /// Title.
        title: Option<String>,
        /// Agent it talks to.
        agent_id: Option<String>,
        /// Group it belongs to.
        group_id: Option<String>,
    },
    /// Append a message (a repeat of a known request id records nothing).
    AppendMessage(ChatMessage),
    /// Change a message's content, metadata or extra fields.
    EditMessage {
        /// The message.
        message_id: String,
        /// New content.
        content: Option<String>,
        /// New metadata (replaces the old).
        metadata: Option<Value>,
        /// Fields to set in `extra`.
        extra: Map<String, Value>,
    },
    /// Delete a message (soft: the tree keeps its place).
    DeleteMessage {
        /// The message.
        message_id: String,
    },
    /// Choose a parent's active branch (its `metadata.activeBranchIndex`).
    SwitchBranch {
        /// The parent message.
        message_id: String,
        /// Index among its non-tool children; equal to their count means "a new branch".
        active_branch_index: u32,
    },
    /// Open a thread off a message.
    CreateThread {
        /// The thread.
        thread_id: String,
        /// The message it branches from.
        source_message_id: String,
        /// Its kind.
        kind: ThreadKind,
        /// Title.
        title: Option<String>,
    },
    /// Track an operation started in this conversation (issued by
    /// [`crate::rules::operation_start::start_operation`], which checks the tracked
    /// operations' real status and passes the finished ones in `released`).
    AttachOperation {
        /// The operation.
        operation_id: String,
        /// Its kind.
        kind: OperationKind,
        /// A background sub-agent.
        background: bool,
        /// Tracked operations found finished, no longer tracked.
        released: Vec<String>,
    },
    /// Group messages: compress them behind a summary, or show sibling answers side by side.
    CreateMessageGroup(NewMessageGroup),
    /// Ungroup a message group's members.
    RemoveMessageGroup {
        /// The group.
        group_id: String,
    },
}

impl Aggregate for Conversation {
    type Command = ConversationCommand;
    type Event = ConversationEvent;
    const KIND: StreamKind = StreamKind::Conversation;

    fn decide(
        &self,
        command: &ConversationCommand,
        ctx: &Context,
    ) -> Result<Vec<ConversationEvent>, DomainError> {
        use ConversationCommand as C;
        use ConversationEvent as E;
        match command {
            C::Create { topic_id, title, agent_id, group_id } => {
                if self.exists() {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "conversation",
                        id: self.topic_id.clone(),
                    });
                }
                non_empty("topicId", topic_id)?;
                Ok(vec![E::Created(ConversationCreated {
                    topic_id: topic_id.clone(),
                    title: title.clone(),
                    agent_id: agent_id.clone(),
                    group_id: group_id.clone(),
                    user_id: ctx.user_id.clone(),
                    at: ctx.now,
                })])
            }
            _ if !self.exists() => Err(DomainError::not_found("conversation", "")),
            C::AppendMessage(message) => self.append(message, ctx),
            C::EditMessage { message_id, content, metadata, extra } => {
                self.live_message(message_id)?;
                if content.is_none() && metadata.is_none() && extra.is_empty() {
                    return Err(DomainError::validation("edit", "nothing to change"));
                }
                Ok(vec![E::MessageEdited(MessageEdited {
                    message_id: message_id.clone(),
                    content: content.clone(),
                    metadata: metadata.clone(),
                    extra: extra.clone(),
                    at: ctx.now,
                })])
            }
            C::DeleteMessage { message_id } => {
                self.live_message(message_id)?;
                Ok(vec![E::MessageDeleted(MessageDeleted {
                    message_id: message_id.clone(),
                    at: ctx.now,
                })])
            }
            C::SwitchBranch { message_id, active_branch_index } => {
                let parent = self.live_message(message_id)?;
                if *active_branch_index > parent.non_tool_children {
                    return Err(DomainError::validation(
                        "activeBranchIndex",
                        format!(
                            "message {message_id} has {} branches; the index may be at most that (a new branch)",
                            parent.non_tool_children
                        ),
                    ));
                }
                Ok(vec![E::BranchSwitched(BranchSwitched {
                    message_id: message_id.clone(),
                    active_branch_index: *active_branch_index,
                    at: ctx.now,
                })])
            }
            C::CreateThread { thread_id, source_message_id, kind, title } => {
                non_empty("threadId", thread_id)?;
                if self.threads.contains_key(thread_id) {
                    return Err(DomainError::AlreadyExists {
                        aggregate: "thread",
                        id: thread_id.clone(),
                    });
                }
                self.live_message(source_message_id)?;
                Ok(vec![E::ThreadCreated(ThreadCreated {
                    thread_id: thread_id.clone(),
                    source_message_id: source_message_id.clone(),
                    kind: *kind,
                    title: title.clone(),
                    at: ctx.now,
                })])
            }
            C::AttachOperation { operation_id, kind, background, released } => {
                self.attach(operation_id, *kind, *background, released)
            }
            C::CreateMessageGroup(group) => self.create_group(group, ctx),
            C::RemoveMessageGroup { group_id } => self.remove_group(group_id, ctx),
        }
    }

    fn evolve(mut self, event: &ConversationEvent) -> Self {
        use ConversationEvent as E;
        match event {
            E::Created(e) => {
                self.topic_id = e.topic_id.clone();
                self.user_id = e.user_id.clone();
                self.agent_id = e.agent_id.clone();
                self.group_id = e.group_id.clone();
            }
            E::MessageAppended(e) => {
                let m = &e.message;
                if let Some(parent) = m.parent_id.as_ref().and_then(|p| self.messages.get_mut(p))
                    && m.role != "tool"
                {
                    parent.non_tool_children += 1;
                }
                if let Some(request_id) = &m.request_id {
                    self.request_ids.insert(request_id.clone(), m.message_id.clone());
                }
                self.messages.insert(
                    m.message_id.clone(),
                    MessageFacts {
                        role: m.role.clone(),
                        parent_id: m.parent_id.clone(),
                        thread_id: m.thread_id.clone(),
                        deleted: false,
                        non_tool_children: 0,
                        message_group: None,
                    },
                );
            }
            E::MessageEdited(_) | E::BranchSwitched(_) => {}
            E::MessageDeleted(e) => {
                if let Some(m) = self.messages.get_mut(&e.message_id) {
                    m.deleted = true;
                }
            }
            E::ThreadCreated(e) => {
                self.threads.insert(e.thread_id.clone(), e.source_message_id.clone());
            }
            E::MessageGroupCreated(e) => self.evolve_group_created(e),
            E::MessageGroupRemoved(e) => self.evolve_group_removed(e),
            E::OperationAttached(e) => {
                for id in &e.released {
                    self.background_operations.remove(id);
                    if self.active_operation.as_ref() == Some(id) {
                        self.active_operation = None;
                    }
                }
                if e.background {
                    self.background_operations.insert(e.operation_id.clone());
                } else if e.kind == OperationKind::Conversation {
                    self.active_operation = Some(e.operation_id.clone());
                }
            }
        }
        self
    }

    fn scope(&self) -> Scope {
        Scope {
            topic_id: self.exists().then(|| self.topic_id.clone()),
            agent_id: self.agent_id.clone(),
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if !self.exists() && *self != Conversation::default() {
            return Err("state without creation".into());
        }
        for (request, message) in &self.request_ids {
            if !self.messages.contains_key(message) {
                return Err(format!("request {request} points at unknown message {message}"));
            }
        }
        let mut children: BTreeMap<&str, u32> = BTreeMap::new();
        for m in self.messages.values().filter(|m| m.role != "tool") {
            if let Some(parent) = &m.parent_id {
                *children.entry(parent.as_str()).or_default() += 1;
            }
        }
        for (id, facts) in &self.messages {
            let counted = children.get(id.as_str()).copied().unwrap_or(0);
            if counted != facts.non_tool_children {
                return Err(format!(
                    "message {id} counts {} non-tool children, has {counted}",
                    facts.non_tool_children
                ));
            }
        }
        for (group, members) in &self.message_groups {
            if let Some(id) = members.iter().find(|id| {
                self.messages
                    .get(id.as_str())
                    .is_some_and(|m| m.message_group.as_ref() != Some(group))
            }) {
                return Err(format!("message {id} of group {group} does not name it"));
            }
        }
        if self.background_operations.len() > MAX_BACKGROUND_SUBAGENTS {
            return Err("more background sub-agents tracked than allowed".into());
        }
        Ok(())
    }
}

impl Conversation {
    fn append(
        &self,
        message: &ChatMessage,
        ctx: &Context,
    ) -> Result<Vec<ConversationEvent>, DomainError> {
        if let Some(request_id) = &message.request_id
            && self.request_ids.contains_key(request_id)
        {
            // The client retried: the first append stands.
            return Ok(Vec::new());
        }
        non_empty("messageId", &message.message_id)?;
        non_empty("role", &message.role)?;
        if self.messages.contains_key(&message.message_id)
            || self.message_groups.contains_key(&message.message_id)
        {
            return Err(DomainError::AlreadyExists {
                aggregate: "message",
                id: message.message_id.clone(),
            });
        }
        if let Some(parent) = &message.parent_id
            && !self.messages.contains_key(parent)
        {
            return Err(DomainError::not_found("parent message", parent.clone()));
        }
        if message.role == "tool" && message.parent_id.is_none() {
            return Err(DomainError::validation(
                "parentId",
                "a tool message answers a call, so it needs a parent",
            ));
        }
        if let Some(thread) = &message.thread_id
            && !self.threads.contains_key(thread)
        {
            return Err(DomainError::not_found("thread", thread.clone()));
        }
        Ok(vec![ConversationEvent::MessageAppended(MessageAppended {
            message: message.clone(),
            at: ctx.now,
        })])
    }

    fn attach(
        &self,
        operation_id: &str,
        kind: OperationKind,
        background: bool,
        released: &[String],
    ) -> Result<Vec<ConversationEvent>, DomainError> {
        non_empty("operationId", operation_id)?;
        if self.tracked_operations().any(|id| id == operation_id) {
            return Err(DomainError::AlreadyExists {
                aggregate: "tracked operation",
                id: operation_id.to_string(),
            });
        }
        let released: Vec<String> = released
            .iter()
            .filter(|id| self.tracked_operations().any(|t| t == id.as_str()))
            .cloned()
            .collect();
        let still = |id: &String| !released.contains(id);
        if kind == OperationKind::Conversation
            && !background
            && let Some(active) = self.active_operation.as_ref().filter(|id| still(id))
        {
            return Err(DomainError::ConversationBusy {
                topic_id: self.topic_id.clone(),
                operation_id: active.clone(),
            });
        }
        if background
            && self.background_operations.iter().filter(|id| still(id)).count()
                >= MAX_BACKGROUND_SUBAGENTS
        {
            return Err(DomainError::LimitExceeded {
                limit: "background sub-agents per conversation",
                max: MAX_BACKGROUND_SUBAGENTS as u64,
            });
        }
        Ok(vec![ConversationEvent::OperationAttached(OperationAttached {
            operation_id: operation_id.to_string(),
            kind,
            background,
            released,
        })])
    }
}
