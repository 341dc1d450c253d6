//! Message groups: a compression group (messages replaced in the tree by their summary, some of
//! them pinned) or a parallel group (sibling answers shown side by side), upstream LobeHub's
//! `message_groups` rows (`type` `compression` / `parallel`).
//!
//! A message belongs to at most one group, as upstream's single `messages.message_group_id`
//! column allows; a group's id shares the topic's message id space, because the tree shows a
//! compression group as a message with that id.

use serde_json::Value;

use super::event::{ConversationEvent, MessageGroupCreated, MessageGroupRemoved};
use super::model::{MessageGroupKind, non_empty};
use super::state::Conversation;
use crate::context::Context;
use crate::error::DomainError;

/// A group as a command asks for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewMessageGroup {
    /// Its id (unique among the topic's messages and groups).
    pub group_id: String,
    /// Compression or parallel (`None` is refused).
    pub kind: Option<MessageGroupKind>,
    /// Its members.
    pub message_ids: Vec<String>,
    /// Compression only: members kept visible beside the summary.
    pub pinned_message_ids: Vec<String>,
    /// Compression only: the summary.
    pub content: Option<String>,
    /// Parallel only: title.
    pub title: Option<String>,
    /// Parallel only: description.
    pub description: Option<String>,
    /// Compression only: free metadata (a JSON object; upstream's `CompressionGroupMetadata`).
    pub metadata: Option<Value>,
}

/// Every message listed once, else VALIDATION.
fn distinct(field: &str, ids: &[String]) -> Result<(), DomainError> {
    let mut seen = std::collections::BTreeSet::new();
    for id in ids {
        non_empty(field, id)?;
        if !seen.insert(id.as_str()) {
            return Err(DomainError::validation(field, format!("message {id} is listed twice")));
        }
    }
    Ok(())
}

impl Conversation {
    pub(super) fn create_group(
        &self,
        g: &NewMessageGroup,
        ctx: &Context,
    ) -> Result<Vec<ConversationEvent>, DomainError> {
        non_empty("groupId", &g.group_id)?;
        if self.message_groups.contains_key(&g.group_id) || self.messages.contains_key(&g.group_id)
        {
            return Err(DomainError::AlreadyExists {
                aggregate: "message group",
                id: g.group_id.clone(),
            });
        }
        let Some(kind) = g.kind else {
            return Err(DomainError::validation("kind", "compression or parallel"));
        };
        distinct("messageIds", &g.message_ids)?;
        distinct("pinnedMessageIds", &g.pinned_message_ids)?;
        let least = match kind {
            MessageGroupKind::Compression => 1,
            MessageGroupKind::Parallel => 2,
        };
        if g.message_ids.len() < least {
            return Err(DomainError::validation(
                "messageIds",
                format!("a {} group needs at least {least} messages", kind.name()),
            ));
        }
        for id in &g.message_ids {
            let m = self.live_message(id)?;
            if m.thread_id.is_some() {
                return Err(DomainError::validation(
                    "messageIds",
                    format!("message {id} is in a thread"),
                ));
            }
            if let Some(other) = &m.message_group {
                return Err(DomainError::AlreadyExists {
                    aggregate: "message group member",
                    id: format!("{id} (in {other})"),
                });
            }
        }
        if let Some(stray) = g.pinned_message_ids.iter().find(|p| !g.message_ids.contains(p)) {
            return Err(DomainError::validation(
                "pinnedMessageIds",
                format!("message {stray} is not in the group"),
            ));
        }
        let mut parent_message_id = None;
        match kind {
            MessageGroupKind::Compression => {
                if g.title.is_some() || g.description.is_some() {
                    return Err(DomainError::validation(
                        "title",
                        "a compression group has a summary (content), not a title",
                    ));
                }
                if g.content.is_none() {
                    return Err(DomainError::validation(
                        "content",
                        "a compression group needs its summary",
                    ));
                }
                if g.metadata.as_ref().is_some_and(|m| !m.is_object()) {
                    return Err(DomainError::validation("metadata", "must be a JSON object"));
                }
            }
            MessageGroupKind::Parallel => {
                if !g.pinned_message_ids.is_empty() || g.content.is_some() || g.metadata.is_some() {
                    return Err(DomainError::validation(
                        "pinnedMessageIds",
                        "only a compression group has pins, a summary or metadata",
                    ));
                }
                let parents: std::collections::BTreeSet<Option<&String>> = g
                    .message_ids
                    .iter()
                    .filter_map(|id| self.messages.get(id))
                    .map(|m| m.parent_id.as_ref())
                    .collect();
                if parents.len() != 1 {
                    return Err(DomainError::validation(
                        "messageIds",
                        "a parallel group's messages answer one message: they need the same parent",
                    ));
                }
                parent_message_id = parents.into_iter().next().flatten().cloned();
            }
        }
        Ok(vec![ConversationEvent::MessageGroupCreated(MessageGroupCreated {
            group_id: g.group_id.clone(),
            kind,
            message_ids: g.message_ids.clone(),
            pinned_message_ids: g.pinned_message_ids.clone(),
            parent_message_id,
            content: g.content.clone(),
            title: g.title.clone(),
            description: g.description.clone(),
            metadata: g.metadata.clone(),
            at: ctx.now,
        })])
    }

    pub(super) fn remove_group(
        &self,
        group_id: &str,
        ctx: &Context,
    ) -> Result<Vec<ConversationEvent>, DomainError> {
        if !self.message_groups.contains_key(group_id) {
            return Err(DomainError::not_found("message group", group_id));
        }
        Ok(vec![ConversationEvent::MessageGroupRemoved(MessageGroupRemoved {
            group_id: group_id.to_string(),
            at: ctx.now,
        })])
    }

    pub(super) fn evolve_group_created(&mut self, e: &MessageGroupCreated) {
        for id in &e.message_ids {
            if let Some(m) = self.messages.get_mut(id) {
                m.message_group = Some(e.group_id.clone());
            }
        }
        self.message_groups.insert(e.group_id.clone(), e.message_ids.clone());
    }

    pub(super) fn evolve_group_removed(&mut self, e: &MessageGroupRemoved) {
        for id in self.message_groups.remove(&e.group_id).unwrap_or_default() {
            if let Some(m) = self.messages.get_mut(&id) {
                m.message_group = None;
            }
        }
    }
}
