//! Cancelling an operation cancels every unfinished descendant, however deep, in one decision.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::aggregate::{Aggregate, StreamEvents};
use crate::context::Context;
use crate::error::DomainError;
use crate::operations::event::OperationCancelled;
use crate::operations::{Operation, OperationCommand, OperationEvent};
use crate::rules::operation_start::operation_stream;
use crate::stamp::StreamWrite;
use crate::streams::StreamKind;

/// Decide the cancellation of `root` and of every unfinished descendant.
///
/// `descendants` must hold the state of every operation reachable from `root` through
/// children (the handler walks [`Operation::child_ids`]); a child it cannot find is refused
/// with [`DomainError::NotFound`] rather than silently left running. Finished descendants are
/// walked through (a finished child may have unfinished background children) but not touched.
/// The root first, then descendants breadth-first.
pub fn cancel_cascade(
    root: &Operation,
    descendants: &[Operation],
    reason: Option<String>,
    ctx: &Context,
) -> Result<Vec<StreamEvents<OperationEvent>>, DomainError> {
    let root_events = root.decide(&OperationCommand::Cancel { reason: reason.clone() }, ctx)?;
    let by_id: BTreeMap<&str, &Operation> = descendants.iter().map(|op| (op.id(), op)).collect();
    let mut out = vec![StreamEvents::new(operation_stream(&ctx.user_id, root.id()), root_events)];
    let mut seen = BTreeSet::from([root.id()]);
    let mut queue: VecDeque<&Operation> = VecDeque::from([root]);
    while let Some(op) = queue.pop_front() {
        for child_id in op.child_ids() {
            if !seen.insert(child_id) {
                continue;
            }
            let child =
                by_id.get(child_id).ok_or_else(|| DomainError::not_found("operation", child_id))?;
            if !child.is_finished() {
                out.push(StreamEvents::new(
                    operation_stream(&ctx.user_id, child_id),
                    vec![OperationEvent::Cancelled(OperationCancelled {
                        reason: reason.clone(),
                        cascade_from: Some(root.id().to_string()),
                        at: ctx.now,
                    })],
                ));
            }
            queue.push_back(child);
        }
    }
    Ok(out)
}

/// Stamp a cascade: `states` must hold every operation named in `parts` (the root included).
pub fn stamp_cascade(
    parts: &[StreamEvents<OperationEvent>],
    states: &[&Operation],
    ctx: &Context,
) -> Vec<StreamWrite> {
    let mut stamper = ctx.stamper();
    parts
        .iter()
        .map(|part| {
            let empty = Operation::default();
            let state = states
                .iter()
                .find(|op| StreamKind::parse(&part.stream_id).is_some_and(|(_, id)| id == op.id()))
                .copied()
                .unwrap_or(&empty);
            stamper.write(state, part)
        })
        .collect()
}
