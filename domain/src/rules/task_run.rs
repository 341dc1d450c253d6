//! Starting a task run: the task's topic and the run's operation, in one decision.

use crate::aggregate::{Aggregate, StreamEvents};
use crate::context::Context;
use crate::error::DomainError;
use crate::operations::{
    CreateOperation, Operation, OperationCommand, OperationEvent, OperationKind,
};
use crate::stamp::StreamWrite;
use crate::tasks::{RunTask, Task, TaskCommand, TaskEvent};

/// The events of a task run's start, per stream.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRunStart {
    /// The task's stream (`task@<owner>/<id>`): timeouts, inbox fallback, running, model snapshot, topic started.
    pub task: StreamEvents<TaskEvent>,
    /// `operation@<owner>/<id>`: the run's operation (kind task), created.
    pub operation: StreamEvents<OperationEvent>,
}

impl TaskRunStart {
    /// Stamp both parts (task first: a source run makes its first task event the root).
    pub fn stamp(&self, task: &Task, operation: &Operation, ctx: &Context) -> Vec<StreamWrite> {
        let mut stamper = ctx.stamper();
        vec![stamper.write(task, &self.task), stamper.write(operation, &self.operation)]
    }
}

/// Decide a run of `task`: the task's rules (see [`crate::tasks`]) and a new operation of kind
/// `task` for the run, under the agent `run.agent` (the assignee or the inbox agent). The task's
/// events land on `task_stream` (the caller resolved it in the task owner's namespace).
pub fn start_task_run(
    task: &Task,
    task_stream: &str,
    existing_operation: &Operation,
    run: &RunTask,
    max_steps: Option<u32>,
    ctx: &Context,
) -> Result<TaskRunStart, DomainError> {
    let task_events = task.decide(&TaskCommand::Run(run.clone()), ctx)?;
    let mut create =
        CreateOperation::new(run.operation_id.clone(), OperationKind::Task, run.agent.clone());
    create.task_id = Some(task.id().to_string());
    create.topic_id = Some(run.topic_id.clone());
    create.trigger = Some(format!("task:{}", run.trigger.as_str()));
    create.instruction = Some(run_prompt(task));
    create.max_steps = max_steps;
    let operation_events = existing_operation.decide(&OperationCommand::Create(create), ctx)?;
    Ok(TaskRunStart {
        task: StreamEvents::new(task_stream.to_string(), task_events),
        operation: StreamEvents::new(
            crate::rules::operation_start::operation_stream(&ctx.user_id, &run.operation_id),
            operation_events,
        ),
    })
}

/// What a run is told: the task's instruction and, after a completed run, where that run left
/// off (its hand-off's title, summary, key findings and next action), so each run starts from
/// the last one instead of from scratch.
pub fn run_prompt(task: &Task) -> String {
    let Some(h) = &task.last_handoff else { return task.instruction.clone() };
    let mut lines = Vec::new();
    if let Some(title) = h.title.as_deref().filter(|t| !t.trim().is_empty()) {
        lines.push(format!("Last run: {title}"));
    }
    if let Some(summary) = h.summary.as_deref().filter(|t| !t.trim().is_empty()) {
        lines.push(format!("Summary: {summary}"));
    }
    for finding in h.key_findings.iter().filter(|f| !f.trim().is_empty()) {
        lines.push(format!("- {finding}"));
    }
    if let Some(next) = h.next_action.as_deref().filter(|t| !t.trim().is_empty()) {
        lines.push(format!("Next action: {next}"));
    }
    if lines.is_empty() {
        return task.instruction.clone();
    }
    format!("{}\n\n## Where the last run left off\n{}", task.instruction, lines.join("\n"))
}
