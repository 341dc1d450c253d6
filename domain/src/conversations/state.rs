//! The state of one conversation: what `evolve` folds and `decide` reads.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::model::MessageFacts;
use crate::error::DomainError;

/// The decision state of a conversation, folded from its stream (`conversation@<owner>/<topicId>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    /// Topic id (empty while it does not exist).
    pub topic_id: String,
    /// Owner.
    pub user_id: String,
    /// Agent.
    pub agent_id: Option<String>,
    /// Group.
    pub group_id: Option<String>,
    /// Message id → facts.
    pub messages: BTreeMap<String, MessageFacts>,
    /// Request id → message id.
    pub request_ids: BTreeMap<String, String>,
    /// Thread id → its source message.
    pub threads: BTreeMap<String, String>,
    /// The last conversation operation started here (unfinished unless proven otherwise).
    pub active_operation: Option<String>,
    /// Background sub-agents started here and not yet seen finished.
    pub background_operations: BTreeSet<String>,
    /// Message group id → its members.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub message_groups: BTreeMap<String, Vec<String>>,
}

impl Conversation {
    /// Does it exist?
    pub fn exists(&self) -> bool {
        !self.topic_id.is_empty()
    }

    /// The message a request id produced, for answering a repeated append.
    pub fn message_for_request(&self, request_id: &str) -> Option<&str> {
        self.request_ids.get(request_id).map(String::as_str)
    }

    /// Every operation this conversation tracks (the handler loads them for
    /// [`crate::rules::operation_start::start_operation`]).
    pub fn tracked_operations(&self) -> impl Iterator<Item = &str> {
        self.active_operation.iter().chain(self.background_operations.iter()).map(String::as_str)
    }

    pub(crate) fn live_message(&self, id: &str) -> Result<&MessageFacts, DomainError> {
        match self.messages.get(id) {
            None => Err(DomainError::not_found("message", id)),
            Some(m) if m.deleted => Err(DomainError::transition("message", "deleted", "change")),
            Some(m) => Ok(m),
        }
    }
}
