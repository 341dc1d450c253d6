//! Resolving a brief, and what approving a result brief does to its task.

use crate::aggregate::{Aggregate, StreamEvents};
use crate::briefs::{APPROVE, Brief, BriefCommand, BriefEvent, BriefType};
use crate::context::Context;
use crate::error::DomainError;
use crate::stamp::StreamWrite;
use crate::tasks::event::{StatusChanged, TopicCanceled};
use crate::tasks::{Task, TaskEvent, TaskStatus};

/// The events of a resolution, per stream.
#[derive(Debug, Clone, PartialEq)]
pub struct BriefResolution {
    /// The brief's stream: resolved.
    pub brief: StreamEvents<BriefEvent>,
    /// The task's stream: completed, when a result brief was approved.
    pub task: Option<StreamEvents<TaskEvent>>,
}

impl BriefResolution {
    /// Stamp both parts (the brief first).
    pub fn stamp(&self, brief: &Brief, task: Option<&Task>, ctx: &Context) -> Vec<StreamWrite> {
        let mut stamper = ctx.stamper();
        let mut writes = vec![stamper.write(brief, &self.brief)];
        if let (Some(part), Some(state)) = (&self.task, task) {
            writes.push(stamper.write(state, part));
        }
        writes
    }
}

/// Resolve `brief` with `action`. Approving a `result` brief completes its task (error
/// cleared) unless the task is `scheduled` (an automated task parked for its next tick) or
/// already finished; a decision brief never completes its task. The completion then starts the
/// dependants it released (the api's task cascade, [`crate::tasks::graph::cascade_on_completion`]).
/// `task` is the brief's task, when it has one and it still exists; each comes with its stream
/// (ids are per owner: the api names them in the brief owner's namespace).
pub fn resolve_brief(
    brief: &Brief,
    brief_stream: &str,
    task: Option<(&Task, &str)>,
    action: &str,
    comment: Option<String>,
    ctx: &Context,
) -> Result<BriefResolution, DomainError> {
    let events =
        brief.decide(&BriefCommand::Resolve { action: action.to_string(), comment }, ctx)?;
    let b = brief.brief.as_ref();
    let completes = action == APPROVE && b.is_some_and(|b| b.brief_type == BriefType::Result);
    let task_part = match (completes, b.and_then(|b| b.task_id.as_deref()), task) {
        (true, Some(task_id), Some((task, task_stream)))
            if task.exists() && task.id() == task_id =>
        {
            let finishable =
                !matches!(task.status, TaskStatus::Scheduled) && !task.status.is_terminal();
            finishable.then(|| {
                // A run still going is canceled first, as any move out of running does.
                let mut events: Vec<TaskEvent> = task
                    .running_topics()
                    .map(|t| {
                        TaskEvent::TopicCanceled(TopicCanceled {
                            topic_id: t.topic_id.clone(),
                            operation_id: t.operation_id.clone(),
                            reason: "task completed by an approved brief".into(),
                            at: ctx.now,
                        })
                    })
                    .collect();
                events.push(TaskEvent::StatusChanged(StatusChanged {
                    from: task.status,
                    to: TaskStatus::Completed,
                    error: None,
                    reason: Some("brief_approved".into()),
                    schedule_started_at: None,
                    at: ctx.now,
                }));
                StreamEvents::new(task_stream, events)
            })
        }
        _ => None,
    };
    Ok(BriefResolution { brief: StreamEvents::new(brief_stream, events), task: task_part })
}
