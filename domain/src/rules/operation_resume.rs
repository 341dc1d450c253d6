//! Resuming an interrupted run: the run goes back into the queue (status running, no lease),
//! and a conversation it belongs to must still track it (no other run took its place since).
//! The conversation records the run again (`conversation.operation_attached`), so a start on
//! the same conversation at the same moment conflicts with the resume instead of racing it.

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::conversations::{Conversation, ConversationEvent, OperationAttached};
use crate::error::DomainError;
use crate::operations::{Operation, OperationCommand, OperationEvent};
use crate::stamp::StreamWrite;

/// What a resume decided.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumedOperation {
    /// The run's events.
    pub operation: Vec<OperationEvent>,
    /// Its conversation's (when it has one).
    pub conversation: Vec<ConversationEvent>,
}

impl ResumedOperation {
    /// Stamp both parts.
    pub fn stamp(
        &self,
        op: &Operation,
        conversation: Option<&Conversation>,
        ctx: &Context,
    ) -> Vec<StreamWrite> {
        let mut stamper = ctx.stamper();
        let mut writes = vec![StreamWrite {
            stream_id: crate::rules::operation_start::operation_stream(&ctx.user_id, op.id()),
            events: stamper.stamp(op, &self.operation),
        }];
        if let Some(c) = conversation.filter(|_| !self.conversation.is_empty()) {
            writes.push(StreamWrite {
                stream_id: crate::rules::operation_start::conversation_stream(
                    &ctx.user_id,
                    &c.topic_id,
                ),
                events: stamper.stamp(c, &self.conversation),
            });
        }
        writes
    }
}

/// Resume `op` (interrupted with `canResume`), given its conversation's state when it has one.
pub fn resume_operation(
    op: &Operation,
    conversation: Option<&Conversation>,
    ctx: &Context,
) -> Result<ResumedOperation, DomainError> {
    let operation = op.decide(&OperationCommand::Resume, ctx)?;
    let Some(spec) = op.spec.as_ref() else { return Err(DomainError::not_found("operation", "")) };
    let mut conversation_events = Vec::new();
    if let Some(c) = conversation.filter(|c| c.exists()) {
        if !c.tracked_operations().any(|id| id == op.id()) {
            return Err(DomainError::transition(
                "operation",
                "released by its conversation (another run started there since)",
                "resume",
            ));
        }
        conversation_events.push(ConversationEvent::OperationAttached(OperationAttached {
            operation_id: op.id().to_string(),
            kind: spec.kind,
            background: spec.background,
            released: Vec::new(),
        }));
    }
    Ok(ResumedOperation { operation, conversation: conversation_events })
}
