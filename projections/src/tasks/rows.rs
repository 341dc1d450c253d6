//! The rows of the tasks read model: what the API serves (camelCase JSON) and how each maps to
//! its table.

use agentlog_domain::{
    tasks::{AutomationMode, DependencyKind, PinnedBy, RunTrigger, TaskConfig, TaskStatus, TopicStatus},
    values::{Handoff, ReviewScore},
};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::{
    columns::{Columns, from_wire_name, json_text, micros, opt_json_text, opt_micros, wire_name},
    db::{Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A task as it stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRow {
    /// Its id.
    pub task_id: String,
    /// Owner.
    pub user_id: String,
    /// Human identifier (`T-12`).
    pub identifier: String,
    /// Name.
    pub name: Option<String>,
    /// What to do.
    pub instruction: String,
    /// Description.
    pub description: Option<String>,
    /// Status.
    pub status: TaskStatus,
    /// 0 none, 1 urgent, 2 high, 3 normal, 4 low.
    pub priority: i64,
    /// Parent task.
    pub parent_task_id: Option<String>,
    /// Assignee agent.
    pub assignee_agent_id: Option<String>,
    /// The agent that created it.
    pub created_by_agent_id: Option<String>,
    /// Heartbeat, schedule, or none (manual).
    pub automation_mode: Option<AutomationMode>,
    /// Seconds between heartbeat runs.
    pub heartbeat_interval_secs: Option<i64>,
    /// A run without a heartbeat for this long times out.
    pub heartbeat_timeout_secs: Option<i64>,
    /// Last heartbeat.
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// When the next heartbeat tick falls due.
    pub next_heartbeat_at: Option<DateTime<Utc>>,
    /// The current heartbeat tick's token (a tick with another token is stale).
    pub heartbeat_tick_token: Option<String>,
    /// Cron pattern of a scheduled task.
    pub schedule_pattern: Option<String>,
    /// Time zone of the pattern.
    pub schedule_timezone: String,
    /// Runs allowed per schedule window.
    pub schedule_max_executions: Option<i64>,
    /// Start of the current schedule window.
    pub schedule_started_at: Option<DateTime<Utc>>,
    /// Topics opened so far (the quota's count).
    pub total_topics: i64,
    /// Most topics allowed (none = unlimited).
    pub max_topics: Option<i64>,
    /// The latest topic.
    pub current_topic_id: Option<String>,
    /// The latest completed topic (the next run starts from its hand-off).
    pub last_completed_topic_id: Option<String>,
    /// Consecutive failed automated runs.
    pub consecutive_failures: i64,
    /// Run settings (model, provider, pause after topic, review).
    pub config: TaskConfig,
    /// The last error.
    pub error: Option<String>,
    /// Last set running.
    pub started_at: Option<DateTime<Utc>>,
    /// Last reached a terminal status.
    pub completed_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed (log time of its last event).
    pub updated_at: DateTime<Utc>,
    /// A heartbeat tick runs only with new input since the last run.
    pub heartbeat_require_input: bool,
    /// Heartbeat ticks skipped for want of new input.
    pub skipped_ticks: i64,
    /// When the latest tick was skipped.
    pub last_skipped_tick_at: Option<DateTime<Utc>>,
    /// The latest start of a run the schedule triggered (the scheduler's last slot).
    pub last_schedule_run_at: Option<DateTime<Utc>>,
    /// Topics running now.
    pub running_topics: i64,
    /// When its schedule has a slot to run; derived (`tasks::due`).
    pub next_schedule_at: Option<DateTime<Utc>>,
    /// When its heartbeat tick is due, while it may tick; derived.
    pub heartbeat_tick_due_at: Option<DateTime<Utc>>,
    /// When a run's heartbeat goes stale, while it runs; derived.
    pub heartbeat_deadline_at: Option<DateTime<Utc>>,
}

impl TableRow for TaskRow {
    /// `(user_id, task_id)`: task ids are per owner.
    type Key = (String, String);
    const TABLE: &'static str = "tasks";
    const COLUMNS: &'static [&'static str] = &[
        "task_id",
        "user_id",
        "identifier",
        "name",
        "instruction",
        "description",
        "status",
        "priority",
        "parent_task_id",
        "assignee_agent_id",
        "created_by_agent_id",
        "automation_mode",
        "heartbeat_interval_secs",
        "heartbeat_timeout_secs",
        "last_heartbeat_at",
        "next_heartbeat_at",
        "heartbeat_tick_token",
        "schedule_pattern",
        "schedule_timezone",
        "schedule_max_executions",
        "schedule_started_at",
        "total_topics",
        "max_topics",
        "current_topic_id",
        "last_completed_topic_id",
        "consecutive_failures",
        "config",
        "error",
        "started_at",
        "completed_at",
        "created_at",
        "updated_at",
        "heartbeat_require_input",
        "skipped_ticks",
        "last_skipped_tick_at",
        "last_schedule_run_at",
        "running_topics",
        "next_schedule_at",
        "heartbeat_tick_due_at",
        "heartbeat_deadline_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "task_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.task_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.task_id.as_str().into(),
            self.user_id.as_str().into(),
            self.identifier.as_str().into(),
            self.name.as_deref().into(),
            self.instruction.as_str().into(),
            self.description.as_deref().into(),
            self.status.as_str().into(),
            self.priority.into(),
            self.parent_task_id.as_deref().into(),
            self.assignee_agent_id.as_deref().into(),
            self.created_by_agent_id.as_deref().into(),
            self.automation_mode.as_ref().map(wire_name).into(),
            self.heartbeat_interval_secs.into(),
            self.heartbeat_timeout_secs.into(),
            opt_micros(self.last_heartbeat_at),
            opt_micros(self.next_heartbeat_at),
            self.heartbeat_tick_token.as_deref().into(),
            self.schedule_pattern.as_deref().into(),
            self.schedule_timezone.as_str().into(),
            self.schedule_max_executions.into(),
            opt_micros(self.schedule_started_at),
            self.total_topics.into(),
            self.max_topics.into(),
            self.current_topic_id.as_deref().into(),
            self.last_completed_topic_id.as_deref().into(),
            self.consecutive_failures.into(),
            json_text(&self.config),
            self.error.as_deref().into(),
            opt_micros(self.started_at),
            opt_micros(self.completed_at),
            micros(self.created_at),
            micros(self.updated_at),
            i64::from(self.heartbeat_require_input).into(),
            self.skipped_ticks.into(),
            opt_micros(self.last_skipped_tick_at),
            opt_micros(self.last_schedule_run_at),
            self.running_topics.into(),
            opt_micros(self.next_schedule_at),
            opt_micros(self.heartbeat_tick_due_at),
            opt_micros(self.heartbeat_deadline_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            task_id: c.text()?,
            user_id: c.text()?,
            identifier: c.text()?,
            name: c.opt_text(),
            instruction: c.text()?,
            description: c.opt_text(),
            status: from_wire_name(Self::TABLE, &c.text()?)?,
            priority: c.int()?,
            parent_task_id: c.opt_text(),
            assignee_agent_id: c.opt_text(),
            created_by_agent_id: c.opt_text(),
            automation_mode: c.opt_text().map(|m| from_wire_name(Self::TABLE, &m)).transpose()?,
            heartbeat_interval_secs: c.opt_int(),
            heartbeat_timeout_secs: c.opt_int(),
            last_heartbeat_at: c.opt_time()?,
            next_heartbeat_at: c.opt_time()?,
            heartbeat_tick_token: c.opt_text(),
            schedule_pattern: c.opt_text(),
            schedule_timezone: c.text()?,
            schedule_max_executions: c.opt_int(),
            schedule_started_at: c.opt_time()?,
            total_topics: c.int()?,
            max_topics: c.opt_int(),
            current_topic_id: c.opt_text(),
            last_completed_topic_id: c.opt_text(),
            consecutive_failures: c.int()?,
            config: c.json()?,
            error: c.opt_text(),
            started_at: c.opt_time()?,
            completed_at: c.opt_time()?,
            created_at: c.time()?,
            updated_at: c.time()?,
            heartbeat_require_input: c.int()? != 0,
            skipped_ticks: c.int()?,
            last_skipped_tick_at: c.opt_time()?,
            last_schedule_run_at: c.opt_time()?,
            running_topics: c.int()?,
            next_schedule_at: c.opt_time()?,
            heartbeat_tick_due_at: c.opt_time()?,
            heartbeat_deadline_at: c.opt_time()?,
        })
    }
}

/// A dependency: `task_id` waits for (`blocks`) or relates to `depends_on_id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyRow {
    /// The dependent task.
    pub task_id: String,
    /// The upstream task.
    pub depends_on_id: String,
    /// Blocks or relates.
    pub kind: DependencyKind,
    /// Owner.
    pub user_id: String,
    /// Added (log time).
    pub created_at: DateTime<Utc>,
}

impl TableRow for DependencyRow {
    /// `(user_id, task_id, depends_on_id)`: task ids are per owner.
    type Key = (String, String, String);
    const TABLE: &'static str = "task_dependencies";
    const COLUMNS: &'static [&'static str] = &["task_id", "depends_on_id", "kind", "user_id", "created_at"];
    const KEY: &'static [&'static str] = &["user_id", "task_id", "depends_on_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.task_id.clone(), self.depends_on_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.task_id.as_str().into(),
            self.depends_on_id.as_str().into(),
            wire_name(&self.kind).into(),
            self.user_id.as_str().into(),
            micros(self.created_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            task_id: c.text()?,
            depends_on_id: c.text()?,
            kind: from_wire_name(Self::TABLE, &c.text()?)?,
            user_id: c.text()?,
            created_at: c.time()?,
        })
    }
}

/// A document pinned to a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentRow {
    /// The task.
    pub task_id: String,
    /// The document.
    pub document_id: String,
    /// Agent, user or system.
    pub pinned_by: PinnedBy,
    /// Owner.
    pub user_id: String,
    /// Pinned.
    pub pinned_at: DateTime<Utc>,
}

impl TableRow for DocumentRow {
    /// `(user_id, task_id, document_id)`: task ids are per owner.
    type Key = (String, String, String);
    const TABLE: &'static str = "task_documents";
    const COLUMNS: &'static [&'static str] = &["task_id", "document_id", "pinned_by", "user_id", "pinned_at"];
    const KEY: &'static [&'static str] = &["user_id", "task_id", "document_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.task_id.clone(), self.document_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.task_id.as_str().into(),
            self.document_id.as_str().into(),
            wire_name(&self.pinned_by).into(),
            self.user_id.as_str().into(),
            micros(self.pinned_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            task_id: c.text()?,
            document_id: c.text()?,
            pinned_by: from_wire_name(Self::TABLE, &c.text()?)?,
            user_id: c.text()?,
            pinned_at: c.time()?,
        })
    }
}

/// One topic (run) of a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicRow {
    /// The task.
    pub task_id: String,
    /// The topic (its conversation's id).
    pub topic_id: String,
    /// Owner.
    pub user_id: String,
    /// 1, 2, 3 … within the task.
    pub seq: i64,
    /// The current run's operation.
    pub operation_id: String,
    /// The agent running it.
    pub agent_id: String,
    /// Running, completed, failed, timeout or canceled.
    pub status: TopicStatus,
    /// What started the run.
    pub trigger: RunTrigger,
    /// The hand-off of its last completed run.
    pub handoff: Option<Handoff>,
    /// Error of a failed run.
    pub error: Option<String>,
    /// Error code of a failed run.
    pub error_code: Option<String>,
    /// Review score, 0 to 100.
    pub review_score: Option<i64>,
    /// Review passed.
    pub review_passed: Option<bool>,
    /// Per-rubric review scores.
    pub review_scores: Option<Vec<ReviewScore>>,
    /// Reviewed.
    pub reviewed_at: Option<DateTime<Utc>>,
    /// The current run started.
    pub started_at: DateTime<Utc>,
    /// The current run ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
}

impl TableRow for TopicRow {
    /// `(user_id, task_id, topic_id)`: task ids are per owner.
    type Key = (String, String, String);
    const TABLE: &'static str = "task_topics";
    const COLUMNS: &'static [&'static str] = &[
        "task_id",
        "topic_id",
        "user_id",
        "seq",
        "operation_id",
        "agent_id",
        "status",
        "run_trigger",
        "handoff",
        "error",
        "error_code",
        "review_score",
        "review_passed",
        "review_scores",
        "reviewed_at",
        "started_at",
        "ended_at",
        "updated_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "task_id", "topic_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.task_id.clone(), self.topic_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.task_id.as_str().into(),
            self.topic_id.as_str().into(),
            self.user_id.as_str().into(),
            self.seq.into(),
            self.operation_id.as_str().into(),
            self.agent_id.as_str().into(),
            self.status.as_str().into(),
            self.trigger.as_str().into(),
            opt_json_text(self.handoff.as_ref()),
            self.error.as_deref().into(),
            self.error_code.as_deref().into(),
            self.review_score.into(),
            self.review_passed.into(),
            opt_json_text(self.review_scores.as_ref()),
            opt_micros(self.reviewed_at),
            micros(self.started_at),
            opt_micros(self.ended_at),
            micros(self.updated_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            task_id: c.text()?,
            topic_id: c.text()?,
            user_id: c.text()?,
            seq: c.int()?,
            operation_id: c.text()?,
            agent_id: c.text()?,
            status: from_wire_name(Self::TABLE, &c.text()?)?,
            trigger: from_wire_name(Self::TABLE, &c.text()?)?,
            handoff: c.opt_json()?,
            error: c.opt_text(),
            error_code: c.opt_text(),
            review_score: c.opt_int(),
            review_passed: c.opt_flag(),
            review_scores: c.opt_json()?,
            reviewed_at: c.opt_time()?,
            started_at: c.time()?,
            ended_at: c.opt_time()?,
            updated_at: c.time()?,
        })
    }
}

/// A comment on a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommentRow {
    /// The task.
    pub task_id: String,
    /// The comment.
    pub comment_id: String,
    /// Owner.
    pub user_id: String,
    /// `user` or `agent`.
    pub author_kind: String,
    /// The user's or agent's id.
    pub author_id: String,
    /// Text.
    pub content: String,
    /// The brief it answers.
    pub brief_id: Option<String>,
    /// The topic it concerns.
    pub topic_id: Option<String>,
    /// Written.
    pub created_at: DateTime<Utc>,
}

impl TableRow for CommentRow {
    /// `(user_id, task_id, comment_id)`: task ids are per owner.
    type Key = (String, String, String);
    const TABLE: &'static str = "task_comments";
    const COLUMNS: &'static [&'static str] = &[
        "task_id",
        "comment_id",
        "user_id",
        "author_kind",
        "author_id",
        "content",
        "brief_id",
        "topic_id",
        "created_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "task_id", "comment_id"];

    fn key(&self) -> Self::Key {
        (self.user_id.clone(), self.task_id.clone(), self.comment_id.clone())
    }
    fn key_values(key: &Self::Key) -> Vec<SqlValue> {
        vec![(&key.0).into(), (&key.1).into(), (&key.2).into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.task_id.as_str().into(),
            self.comment_id.as_str().into(),
            self.user_id.as_str().into(),
            self.author_kind.as_str().into(),
            self.author_id.as_str().into(),
            self.content.as_str().into(),
            self.brief_id.as_deref().into(),
            self.topic_id.as_deref().into(),
            micros(self.created_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            task_id: c.text()?,
            comment_id: c.text()?,
            user_id: c.text()?,
            author_kind: c.text()?,
            author_id: c.text()?,
            content: c.text()?,
            brief_id: c.opt_text(),
            topic_id: c.opt_text(),
            created_at: c.time()?,
        })
    }
}
