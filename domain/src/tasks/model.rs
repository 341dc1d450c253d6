//! The value types of a task: statuses, automation, dependencies, documents, comments, topics
//! and hand-offs.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::values::ReviewScore;

/// A task's status (upstream's 7).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    #[default]
    Backlog,
    /// A topic (run) is in progress.
    Running,
    /// Waiting for a human.
    Paused,
    /// Automated, waiting for its next tick.
    Scheduled,
    /// Done.
    Completed,
    /// Given up.
    Failed,
    /// Called off.
    Canceled,
}

impl TaskStatus {
    /// Every status.
    pub const ALL: [TaskStatus; 7] = [
        Self::Backlog,
        Self::Running,
        Self::Paused,
        Self::Scheduled,
        Self::Completed,
        Self::Failed,
        Self::Canceled,
    ];

    /// Completed, failed or canceled.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backlog => "backlog",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Scheduled => "scheduled",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a task runs on its own. Exclusive by construction: one mode or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutomationMode {
    /// Runs every `heartbeat.intervalSecs` after the previous run.
    Heartbeat,
    /// Runs on a cron pattern.
    Schedule,
}

/// Heartbeat settings (kept when the mode changes, as upstream does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatConfig {
    /// Seconds between runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_secs: Option<u64>,
    /// A run without a heartbeat for this long is timed out (none = off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// A tick runs only when there is new input since the last run ([`super::tick::new_input`]);
    /// otherwise it is skipped (`task.tick_skipped`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_input: bool,
}

/// Schedule settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleConfig {
    /// 5-field cron pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// IANA time zone of the pattern.
    pub timezone: String,
    /// Runs allowed per schedule window (since the schedule was started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_executions: Option<u32>,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self { pattern: None, timezone: "UTC".into(), max_executions: None }
    }
}

/// Settings that shape a run and what follows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskConfig {
    /// Model pinned for runs (snapshotted from the agent at the first run when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider pinned for runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `checkpoint.topic.after`: pause a non-automated task after each topic (none = yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_topic: Option<bool>,
    /// A reviewer scores topics (then the reviewer, not the lifecycle, owns the result brief).
    #[serde(default)]
    pub review_enabled: bool,
}

/// A dependency's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyKind {
    /// The upstream must complete first.
    Blocks,
    /// Informational.
    Relates,
}

/// Who pinned a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PinnedBy {
    /// An agent.
    Agent,
    /// A user.
    User,
    /// agentlog itself.
    System,
}

/// The author of a comment: a user or an agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum CommentAuthor {
    /// A user.
    User(String),
    /// An agent.
    Agent(String),
}

/// A topic's (run's) status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopicStatus {
    /// In progress.
    Running,
    /// Finished well.
    Completed,
    /// Finished with an error.
    Failed,
    /// No heartbeat within the timeout.
    Timeout,
    /// Called off.
    Canceled,
}

impl TopicStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::Canceled => "canceled",
        }
    }
}

impl fmt::Display for TopicStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunTrigger {
    /// A human or an API call.
    #[default]
    Manual,
    /// A schedule tick.
    Schedule,
    /// A heartbeat tick.
    Heartbeat,
    /// A goal loop.
    Goal,
}

impl RunTrigger {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Schedule => "schedule",
            Self::Heartbeat => "heartbeat",
            Self::Goal => "goal",
        }
    }
}

/// A topic's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicReview {
    /// Overall score, 0 to 100.
    pub score: u8,
    /// Passed.
    pub passed: bool,
    /// Per-rubric scores.
    #[serde(default)]
    pub scores: Vec<ReviewScore>,
}

/// One run of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Topic {
    /// The topic (conversation) id.
    pub topic_id: String,
    /// 1, 2, 3 … within the task.
    pub seq: u32,
    /// The current run's operation.
    pub operation_id: String,
    /// Status.
    pub status: TopicStatus,
    /// What started it.
    pub trigger: RunTrigger,
    /// This run moved the task to running (so a failed start may roll that back).
    pub set_running: bool,
    /// The task's status before this run set it running.
    pub previous_status: Option<TaskStatus>,
    /// Started (or continued).
    pub started_at: DateTime<Utc>,
    /// Ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Review.
    pub review: Option<TopicReview>,
}

/// After this many consecutive failed automated runs, the task pauses for a human.
pub const FAILURE_FUSE: u32 = 3;
