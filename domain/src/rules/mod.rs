//! Cross-aggregate rules: pure functions over several states that return events for several
//! streams, appended atomically by the handler (`append_multi`).
//!
//! | rule | function |
//! |---|---|
//! | conversation busy, ≤ 3 background sub-agents, child registered on its parent | [`operation_start::start_operation`] |
//! | a child's result reported to its parent | [`operation_start::child_result_for_parent`] |
//! | cancel cascades to every unfinished descendant | [`cancel_cascade::cancel_cascade`] |
//! | an interrupted run resumes, its conversation still tracking it | [`operation_resume::resume_operation`] |
//! | a task run creates its topic and its operation | [`task_run::start_task_run`] |
//! | approving a result brief completes its task | [`brief_resolution::resolve_brief`] |
//! | a completion starts the dependants it released, reports the ones it cannot | [`crate::tasks::graph::cascade_on_completion`], [`task_cascade::held_notification`] |
//!
//! The `blocks`-cycle check needs the other tasks' edges: it is
//! [`crate::tasks::graph::BlocksGraph`], passed in the task's `AddDependency` command.

pub mod brief_resolution;
pub mod cancel_cascade;
pub mod operation_resume;
pub mod operation_start;
pub mod task_cascade;
pub mod task_run;

#[cfg(test)]
mod tests;
