//! What a task records.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::command::{CreateTask, TaskPatch};
use super::model::{
    AutomationMode, CommentAuthor, DependencyKind, HeartbeatConfig, PinnedBy, RunTrigger,
    ScheduleConfig, TaskConfig, TaskStatus,
};
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::values::Handoff;
use crate::values::ReviewScore;

/// `task.created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCreated {
    /// What was asked for.
    #[serde(flatten)]
    pub spec: CreateTask,
    /// Owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskUpdated {
    /// The changed fields.
    #[serde(flatten)]
    pub changes: TaskPatch,
}

/// `task.assignee_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssigneeChanged {
    /// The new assignee (none = unassigned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `inbox_fallback` when a run assigned the inbox agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `task.automation_configured`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutomationConfigured {
    /// The mode (none = manual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AutomationMode>,
    /// Heartbeat settings.
    pub heartbeat: HeartbeatConfig,
    /// Schedule settings.
    pub schedule: ScheduleConfig,
}

/// `task.topic_quota_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicQuotaChanged {
    /// Most topics (none = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_topics: Option<u32>,
}

/// `task.configured`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskConfigured {
    /// The new run settings.
    pub config: TaskConfig,
}

/// `task.model_snapshotted`: the first run pinned the agent's model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSnapshotted {
    /// Model.
    pub model: String,
    /// Provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// `task.status_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusChanged {
    /// Before.
    pub from: TaskStatus,
    /// After.
    pub to: TaskStatus,
    /// The task's error after the change (set with failed/paused-by-error, cleared otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why (`run_started`, `topic_completed`, `brief_approved`, `heartbeat_timeout`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Entering `scheduled` in schedule mode from a non-running status starts a new
    /// max-executions window at this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_started_at: Option<DateTime<Utc>>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.dependency_added`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyAdded {
    /// The upstream.
    pub depends_on_id: String,
    /// Blocks or relates.
    pub kind: DependencyKind,
}

/// `task.dependency_removed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyRemoved {
    /// The upstream.
    pub depends_on_id: String,
}

/// `task.document_pinned`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentPinned {
    /// The document.
    pub document_id: String,
    /// Who.
    pub pinned_by: PinnedBy,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.document_unpinned`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentUnpinned {
    /// The document.
    pub document_id: String,
}

/// `task.comment_added`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommentAdded {
    /// Its id.
    pub comment_id: String,
    /// Author.
    pub author: CommentAuthor,
    /// Text.
    pub content: String,
    /// The brief it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief_id: Option<String>,
    /// The topic it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.comment_deleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommentDeleted {
    /// Its id.
    pub comment_id: String,
}

/// `task.topic_started`: a run began (a new topic, or a continued one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicStarted {
    /// The topic.
    pub topic_id: String,
    /// Its sequence number.
    pub seq: u32,
    /// The run's operation.
    pub operation_id: String,
    /// What started it.
    pub trigger: RunTrigger,
    /// The agent running it.
    pub agent_id: String,
    /// An existing topic continued.
    pub continued: bool,
    /// This run moved the task to running.
    pub set_running: bool,
    /// The status before, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_status: Option<TaskStatus>,
    /// The hand-off the run's prompt starts from (the last completed topic's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_handoff_topic_id: Option<String>,
    /// Extra prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_prompt: Option<String>,
    /// When (also the task's heartbeat).
    pub at: DateTime<Utc>,
}

/// `task.topics_timed_out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicsTimedOut {
    /// The topics.
    pub topic_ids: Vec<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.topic_completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicCompleted {
    /// The topic.
    pub topic_id: String,
    /// Its operation.
    pub operation_id: String,
    /// What triggered the run.
    pub trigger: RunTrigger,
    /// Hand-off (with the brief decision).
    pub handoff: Handoff,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.topic_failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicFailed {
    /// The topic.
    pub topic_id: String,
    /// Its operation.
    pub operation_id: String,
    /// What triggered the run.
    pub trigger: RunTrigger,
    /// Message.
    pub error: String,
    /// Code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Consecutive failed automated runs, this one included (the fuse counter).
    pub consecutive_failures: u32,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.topic_canceled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicCanceled {
    /// The topic.
    pub topic_id: String,
    /// Its operation (not stopped by the cancel: cancel it on its own).
    pub operation_id: String,
    /// Why.
    pub reason: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.topic_reviewed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicReviewed {
    /// The topic.
    pub topic_id: String,
    /// Overall score.
    pub score: u8,
    /// Passed.
    pub passed: bool,
    /// Per-rubric scores.
    #[serde(default)]
    pub scores: Vec<ReviewScore>,
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.heartbeat_recorded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatRecorded {
    /// When.
    pub at: DateTime<Utc>,
}

/// `task.heartbeat_scheduled`: the next heartbeat tick (the scheduler fires it at `dueAt`;
/// a tick carrying another token is stale).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatScheduled {
    /// When the tick falls due.
    pub due_at: DateTime<Utc>,
    /// The tick's generation token.
    pub tick_token: String,
}

/// `task.tick_skipped`: a heartbeat tick of a task that requires input found nothing new
/// since the last run and started none (the next tick is scheduled with it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TickSkipped {
    /// The skipped tick's token.
    pub tick_token: String,
    /// Why (`no-new-input`).
    pub reason: String,
    /// When.
    pub at: DateTime<Utc>,
}

crate::domain_events! {
    /// Everything a task records.
    pub enum TaskEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// Created.
        Created(TaskCreated) = "task.created" v 1,
        /// Text or priority changed.
        Updated(TaskUpdated) = "task.updated" v 1,
        /// Assignee changed.
        AssigneeChanged(AssigneeChanged) = "task.assignee_changed" v 1,
        /// Automation changed.
        AutomationConfigured(AutomationConfigured) = "task.automation_configured" v 1,
        /// Topic quota changed.
        TopicQuotaChanged(TopicQuotaChanged) = "task.topic_quota_changed" v 1,
        /// Run settings changed.
        Configured(TaskConfigured) = "task.configured" v 1,
        /// Model pinned.
        ModelSnapshotted(ModelSnapshotted) = "task.model_snapshotted" v 1,
        /// Status changed.
        StatusChanged(StatusChanged) = "task.status_changed" v 1,
        /// Dependency added.
        DependencyAdded(DependencyAdded) = "task.dependency_added" v 1,
        /// Dependency removed.
        DependencyRemoved(DependencyRemoved) = "task.dependency_removed" v 1,
        /// Document pinned.
        DocumentPinned(DocumentPinned) = "task.document_pinned" v 1,
        /// Document unpinned.
        DocumentUnpinned(DocumentUnpinned) = "task.document_unpinned" v 1,
        /// Comment added.
        CommentAdded(CommentAdded) = "task.comment_added" v 1,
        /// Comment deleted.
        CommentDeleted(CommentDeleted) = "task.comment_deleted" v 1,
        /// A run started.
        TopicStarted(TopicStarted) = "task.topic_started" v 1,
        /// Stale runs timed out.
        TopicsTimedOut(TopicsTimedOut) = "task.topics_timed_out" v 1,
        /// A run completed.
        TopicCompleted(TopicCompleted) = "task.topic_completed" v 1,
        /// A run failed.
        TopicFailed(TopicFailed) = "task.topic_failed" v 1,
        /// A run was canceled.
        TopicCanceled(TopicCanceled) = "task.topic_canceled" v 1,
        /// A run was reviewed.
        TopicReviewed(TopicReviewed) = "task.topic_reviewed" v 1,
        /// Heartbeat.
        HeartbeatRecorded(HeartbeatRecorded) = "task.heartbeat_recorded" v 1,
        /// Next heartbeat tick scheduled.
        HeartbeatScheduled(HeartbeatScheduled) = "task.heartbeat_scheduled" v 1,
        /// A heartbeat tick skipped for want of new input.
        TickSkipped(TickSkipped) = "task.tick_skipped" v 1,
    }
}
