//! One operation's life, as the workload plays it: start (through the domain's cross-aggregate
//! rules), claim, steps with tool calls, usage, phases, plans, todos and artifacts, lease
//! renewals, an optional human-in-the-loop card, optional sub-agents behind an async barrier,
//! and one of the endings (done, failed, interrupted, cancelled with cascade, lease expiry,
//! max steps, cost limit) — then the reactions the server's reactors would append: the child's
//! result to its parent, the task lifecycle, and the signal policies' briefs and notifications.

mod follow_up;
mod machine;
mod plan;
mod work;

pub(crate) use follow_up::{brief_poll, notification_poll};
pub(crate) use machine::{RunMachine, RunStart, RunStory};
pub(crate) use plan::RunPlan;
