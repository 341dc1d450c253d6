//! Starting an operation: one decision over the new operation, its conversation and its parent.
//!
//! - a conversation operation is refused with [`DomainError::ConversationBusy`] while the
//!   conversation's current one has not finished;
//! - a background sub-agent is refused with [`DomainError::LimitExceeded`] when the conversation
//!   already has 3 unfinished ones;
//! - a sub-agent is registered on its parent, which must exist and not have finished;
//! - a sub-agent more than `max_depth` levels below its top-level run is refused with
//!   [`DomainError::LimitExceeded`] ([`child_depth`]).
//!
//! The conversation only remembers *which* operations it tracks; whether they finished is read
//! from the operations themselves (`tracked`), so ending an operation never has to write to its
//! conversation, and a tracked operation found finished is released by the next start.

use crate::aggregate::{Aggregate, StreamEvents};
use crate::context::Context;
use crate::conversations::{ChatMessage, Conversation, ConversationCommand, ConversationEvent};
use crate::error::DomainError;
use crate::ids::server_id;
use crate::operations::cap_child_result;
use crate::operations::{
    CreateOperation, Operation, OperationCommand, OperationEvent, OperationKind,
};
use crate::stamp::StreamWrite;

/// The events of a start, per stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StartedOperation {
    /// `operation@<owner>/<id>`: created.
    pub operation: StreamEvents<OperationEvent>,
    /// The owner's conversation `topicId` (named by [`conversation_stream`]): the operation is
    /// tracked (conversation and background kinds).
    pub conversation: Option<StreamEvents<ConversationEvent>>,
    /// `operation@<owner>/<parentId>`: the child is registered.
    pub parent: Option<StreamEvents<OperationEvent>>,
}

impl StartedOperation {
    /// Stamp every part (operation first: a source start makes `operation.created` the root).
    pub fn stamp(
        &self,
        operation: &Operation,
        conversation: Option<&Conversation>,
        parent: Option<&Operation>,
        ctx: &Context,
    ) -> Vec<StreamWrite> {
        let mut stamper = ctx.stamper();
        let mut writes = vec![stamper.write(operation, &self.operation)];
        if let (Some(part), Some(state)) = (&self.conversation, conversation) {
            writes.push(stamper.write(state, part));
        }
        if let (Some(part), Some(state)) = (&self.parent, parent) {
            writes.push(stamper.write(state, part));
        }
        writes
    }
}

/// The stream of `owner`'s conversation `topic_id` (topic ids are per owner). A conversation
/// loaded from another stream (one written before topic ids were per owner) is written where it
/// was loaded: the caller retargets the part.
pub fn conversation_stream(owner: &str, topic_id: &str) -> String {
    crate::streams::StreamKind::Conversation.owned_stream_id(owner, topic_id)
}

/// The stream of `owner`'s operation `id` (operation ids are per owner). An operation loaded
/// from another stream (one written before operation ids were per owner) is written where it
/// was loaded: the caller retargets the part.
pub fn operation_stream(owner: &str, id: &str) -> String {
    crate::streams::StreamKind::Operation.owned_stream_id(owner, id)
}

/// Does the conversation track this operation (and so enforce busy / background limits)?
fn tracked_by_conversation(create: &CreateOperation) -> bool {
    create.background
        || (create.kind == OperationKind::Conversation && create.parent_operation_id.is_none())
}

/// Sub-agent levels a run may have below its top-level run, unless the server says otherwise.
pub const DEFAULT_MAX_SUBAGENT_DEPTH: u32 = 5;

/// The depth of a new child of `parent`: one below it, refused with
/// [`DomainError::LimitExceeded`] beyond `max_depth`.
pub fn child_depth(parent: &Operation, max_depth: u32) -> Result<u32, DomainError> {
    let depth = parent.spec.as_ref().map_or(0, |s| s.depth).saturating_add(1);
    if depth > max_depth {
        return Err(DomainError::LimitExceeded {
            limit: "subagentDepth",
            max: u64::from(max_depth),
        });
    }
    Ok(depth)
}

/// [`start_operation_within`] with the default depth limit ([`DEFAULT_MAX_SUBAGENT_DEPTH`]).
pub fn start_operation(
    create: &CreateOperation,
    existing: &Operation,
    conversation: Option<&Conversation>,
    tracked: &[Operation],
    parent: Option<&Operation>,
    ctx: &Context,
) -> Result<StartedOperation, DomainError> {
    start_operation_within(
        DEFAULT_MAX_SUBAGENT_DEPTH,
        create,
        existing,
        conversation,
        tracked,
        parent,
        ctx,
    )
}

/// Decide the start of an operation, a sub-agent at most `max_depth` levels deep.
///
/// `existing` is the state of `operation-<id>` (empty for a new id); `conversation` must be
/// given when `create.topic_id` is set, with `tracked` holding the states of every operation
/// [`Conversation::tracked_operations`] names (one left out counts as unfinished); `parent`
/// must be given when `create.parent_operation_id` is set.
pub fn start_operation_within(
    max_depth: u32,
    create: &CreateOperation,
    existing: &Operation,
    conversation: Option<&Conversation>,
    tracked: &[Operation],
    parent: Option<&Operation>,
    ctx: &Context,
) -> Result<StartedOperation, DomainError> {
    let mut create = create.clone();
    create.depth = match (parent, &create.parent_operation_id) {
        (Some(p), Some(_)) if p.exists() => child_depth(p, max_depth)?,
        _ => 0,
    };
    let create = &create;
    // A sub-agent runs in its parent's conversation, so its limits count there whatever
    // topic it was given.
    if let Some(parent_topic) = parent.and_then(Operation::topic_id)
        && create.parent_operation_id.is_some()
        && create.topic_id.as_deref() != Some(parent_topic)
    {
        return Err(DomainError::validation(
            "topicId",
            format!("a sub-agent runs in its parent's conversation ({parent_topic})"),
        ));
    }
    let operation = existing.decide(&OperationCommand::Create(create.clone()), ctx)?;
    let conversation_part = match &create.topic_id {
        None => None,
        // A foreground sub-agent in its parent's topic is not tracked there (a task run's
        // topic has no conversation at all).
        Some(_) if create.parent_operation_id.is_some() && !tracked_by_conversation(create) => None,
        Some(topic_id) => {
            let conv = conversation
                .filter(|c| c.exists() && &c.topic_id == topic_id)
                .ok_or_else(|| DomainError::not_found("conversation", topic_id.clone()))?;
            if tracked_by_conversation(create) {
                let released: Vec<String> = conv
                    .tracked_operations()
                    .filter(|id| tracked.iter().any(|op| op.id() == *id && op.is_finished()))
                    .map(str::to_string)
                    .collect();
                let events = conv.decide(
                    &ConversationCommand::AttachOperation {
                        operation_id: create.operation_id.clone(),
                        kind: create.kind,
                        background: create.background,
                        released,
                    },
                    ctx,
                )?;
                Some(StreamEvents::new(conversation_stream(&ctx.user_id, topic_id), events))
            } else {
                None
            }
        }
    };
    let parent_part = match &create.parent_operation_id {
        None => None,
        Some(parent_id) => {
            let parent = parent
                .filter(|p| p.exists() && p.id() == parent_id)
                .ok_or_else(|| DomainError::not_found("parent operation", parent_id.clone()))?;
            let events = parent.decide(
                &OperationCommand::RegisterChild {
                    child_operation_id: create.operation_id.clone(),
                    background: create.background,
                },
                ctx,
            )?;
            Some(StreamEvents::new(operation_stream(&ctx.user_id, parent_id), events))
        }
    };
    Ok(StartedOperation {
        operation: StreamEvents::new(
            operation_stream(&ctx.user_id, &create.operation_id),
            operation,
        ),
        conversation: conversation_part,
        parent: parent_part,
    })
}

/// What a parent is told when its child finishes: the child's result, capped at 32,000
/// characters by the parent's decision. `None` for an event that does not end the child.
pub fn child_result_for_parent(
    child: &Operation,
    event: &OperationEvent,
) -> Option<(String, OperationCommand)> {
    let parent = child.parent_operation_id()?.to_string();
    let (success, result) = match event {
        OperationEvent::Completed(e) => (true, e.result.clone()),
        OperationEvent::Failed(e) => (false, Some(e.error.message.clone())),
        OperationEvent::Interrupted(e) => (false, Some(format!("interrupted: {}", e.reason))),
        OperationEvent::Cancelled(e) => {
            (false, e.reason.clone().or_else(|| Some("cancelled".into())))
        }
        _ => return None,
    };
    Some((
        parent,
        OperationCommand::ReceiveAsyncResult { key: child.id().to_string(), success, result },
    ))
}

/// The completion notice of a child that finished after its parent ended (upstream's
/// background sub-agent notice, recorded as a `taskCallback` message): the conversation it goes
/// to and the message, with the child's result capped at 32,000 characters. Its id derives
/// from the child, so delivering twice records one notice. `None` when the child was
/// cancelled by its ancestor's cancel (nobody is owed a result) or has no conversation.
pub fn completion_notice(
    child: &Operation,
    event: &OperationEvent,
) -> Option<(String, ChatMessage)> {
    let (success, result, status) = match event {
        OperationEvent::Cancelled(e) if e.cascade_from.is_some() => return None,
        OperationEvent::Completed(e) => (true, e.result.clone(), "completed"),
        OperationEvent::Failed(e) => (false, Some(e.error.message.clone()), "failed"),
        OperationEvent::Interrupted(e) => {
            (false, Some(format!("interrupted: {}", e.reason)), "interrupted")
        }
        OperationEvent::Cancelled(e) => (false, e.reason.clone(), "cancelled"),
        _ => return None,
    };
    let topic_id = child.topic_id()?.to_string();
    let spec = child.spec.as_ref()?;
    let (content, truncated) = cap_child_result(result.as_deref().unwrap_or_default());
    let message = ChatMessage {
        message_id: server_id(format_args!("notice-{}", child.id())),
        role: "taskCallback".into(),
        content,
        agent_id: Some(spec.agent.agent_id.clone()),
        operation_id: Some(child.id().to_string()),
        metadata: Some(serde_json::json!({
            "notice": "subagent_completed",
            "operationId": child.id(),
            "status": status,
            "success": success,
            "truncated": truncated,
            "background": spec.background,
            "parentOperationId": child.parent_operation_id(),
        })),
        ..ChatMessage::default()
    };
    Some((topic_id, message))
}
