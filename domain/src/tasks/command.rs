//! What may be asked of a task.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::model::{
    AutomationMode, CommentAuthor, DependencyKind, HeartbeatConfig, PinnedBy, RunTrigger,
    ScheduleConfig, TaskConfig, TaskStatus,
};
use crate::tasks::graph::BlocksGraph;
use crate::values::Handoff;
use crate::values::{AgentRef, ReviewScore};

/// Everything needed to create a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTask {
    /// Its id.
    pub task_id: String,
    /// Human identifier (`T-12`).
    pub identifier: String,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What to do.
    pub instruction: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// 0 none, 1 urgent, 2 high, 3 normal, 4 low.
    #[serde(default)]
    pub priority: u8,
    /// Parent task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task_id: Option<String>,
    /// Assignee agent (none → the inbox agent at the first run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_agent_id: Option<String>,
    /// The agent that created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_agent_id: Option<String>,
    /// Automation mode (none = manual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation_mode: Option<AutomationMode>,
    /// Heartbeat settings.
    #[serde(default)]
    pub heartbeat: HeartbeatConfig,
    /// Schedule settings.
    #[serde(default)]
    pub schedule: ScheduleConfig,
    /// Most topics (runs) allowed (none = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_topics: Option<u32>,
    /// Run settings.
    #[serde(default)]
    pub config: TaskConfig,
}

impl CreateTask {
    /// A manual task with defaults.
    pub fn new(
        task_id: impl Into<String>,
        identifier: impl Into<String>,
        instruction: impl Into<String>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            identifier: identifier.into(),
            name: None,
            instruction: instruction.into(),
            description: None,
            priority: 0,
            parent_task_id: None,
            assignee_agent_id: None,
            created_by_agent_id: None,
            automation_mode: None,
            heartbeat: HeartbeatConfig::default(),
            schedule: ScheduleConfig::default(),
            max_topics: None,
            config: TaskConfig::default(),
        }
    }
}

/// Changes to a task's text fields and priority; `None` leaves a field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPatch {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
}

/// Start a run (a topic) of the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTask {
    /// The topic: new, or the one given in `continue_topic`.
    pub topic_id: String,
    /// The run's operation.
    pub operation_id: String,
    /// What started it.
    pub trigger: RunTrigger,
    /// Continue this existing topic instead of opening a new one.
    #[serde(default)]
    pub continue_topic: bool,
    /// The agent that runs it: the assignee, or the inbox agent when there is none.
    pub agent: AgentRef,
    /// Extra prompt for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_prompt: Option<String>,
}

/// How a run ended (upstream `onTopicComplete` reasons).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum TopicEnd {
    /// Finished well.
    Done,
    /// Failed.
    Error {
        /// Message.
        message: String,
        /// Code (`insufficient_budget`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// Ended otherwise (`interrupted`, `cancelled`, …).
    Other {
        /// The operation's completion reason.
        detail: String,
    },
}

/// A run finished: what `onTopicComplete` is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOutcome {
    /// The topic.
    pub topic_id: String,
    /// The operation that ran it.
    pub operation_id: String,
    /// How it ended.
    pub end: TopicEnd,
    /// What triggered the run.
    pub run_trigger: RunTrigger,
    /// The hand-off the worker wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
    /// The run's last assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_content: Option<String>,
    /// An unresolved urgent non-error brief waits on a human for this task (blocks the
    /// heartbeat re-arm); the handler reads it from the briefs read model.
    #[serde(default)]
    pub human_waiting: bool,
    /// A model's verdict on whether this run deserves a brief, when the rules defer to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief_judgement: Option<bool>,
}

/// A command to a task.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCommand {
    /// Create it (status backlog).
    Create(CreateTask),
    /// Change text fields or priority.
    Update(TaskPatch),
    /// Assign (or unassign) an agent.
    Assign {
        /// The agent; none = unassigned.
        agent_id: Option<String>,
    },
    /// Change how it runs on its own.
    ConfigureAutomation {
        /// The mode; none = manual.
        mode: Option<AutomationMode>,
        /// Heartbeat settings.
        heartbeat: HeartbeatConfig,
        /// Schedule settings.
        schedule: ScheduleConfig,
    },
    /// Change the topic quota.
    SetTopicQuota {
        /// Most topics (none = unlimited).
        max_topics: Option<u32>,
    },
    /// Replace the run settings.
    Configure(TaskConfig),
    /// Move to another status (not `running`: that is what a run does).
    ChangeStatus {
        /// The new status.
        to: TaskStatus,
        /// An error text, only with `failed`.
        error: Option<String>,
    },
    /// Depend on another task. `graph` holds the `blocks` edges reachable from `depends_on_id`
    /// (the handler reads them from those tasks' streams and holds them at the versions read)
    /// for the cycle check.
    AddDependency {
        /// The upstream.
        depends_on_id: String,
        /// Blocks or relates.
        kind: DependencyKind,
        /// Known `blocks` edges.
        graph: BlocksGraph,
    },
    /// Drop a dependency.
    RemoveDependency {
        /// The upstream.
        depends_on_id: String,
    },
    /// Pin a document.
    PinDocument {
        /// The document.
        document_id: String,
        /// Who pinned it.
        pinned_by: PinnedBy,
    },
    /// Unpin a document.
    UnpinDocument {
        /// The document.
        document_id: String,
    },
    /// Comment.
    AddComment {
        /// Its id.
        comment_id: String,
        /// A user or an agent.
        author: CommentAuthor,
        /// Text.
        content: String,
        /// The brief it answers.
        brief_id: Option<String>,
        /// The topic it concerns.
        topic_id: Option<String>,
    },
    /// Delete a comment.
    DeleteComment {
        /// Its id.
        comment_id: String,
    },
    /// Start a run (see [`crate::rules::task_run::start_task_run`], which also creates the
    /// operation).
    Run(RunTask),
    /// The run could not start: roll back only what it set.
    RunFailed {
        /// The topic.
        topic_id: String,
        /// Why.
        error: String,
    },
    /// A run ended (`onTopicComplete`).
    CompleteTopic(TopicOutcome),
    /// Cancel a running topic; the task pauses.
    CancelTopic {
        /// The topic.
        topic_id: String,
    },
    /// A reviewer scored a topic.
    ReviewTopic {
        /// The topic.
        topic_id: String,
        /// Overall score, 0 to 100.
        score: u8,
        /// Passed.
        passed: bool,
        /// Per-rubric scores.
        scores: Vec<ReviewScore>,
    },
    /// The agent is alive.
    RecordHeartbeat,
    /// The lazy heartbeat-timeout check: a running task whose heartbeat is older than its
    /// timeout pauses and its running topics time out.
    CheckHeartbeatTimeout,
    /// Skip heartbeat tick `tick_token` of a task that requires input and has none new
    /// ([`super::tick::new_input`]); refused when there is new input.
    SkipIdleTick {
        /// The tick.
        tick_token: String,
        /// The server's fact: when the latest of the task's dependencies completed.
        dependency_finished_at: Option<DateTime<Utc>>,
    },
}
