//! The state of one task: what `evolve` folds and `decide` reads.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::command::CreateTask;
use super::model::*;
use crate::values::Handoff;

/// The state of one task, folded from `task-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// What it was created with; `None` while it does not exist.
    pub spec: Option<CreateTask>,
    /// Owner.
    pub user_id: String,
    /// Name.
    pub name: Option<String>,
    /// Instruction.
    pub instruction: String,
    /// Description.
    pub description: Option<String>,
    /// Priority (0 none … 4 low).
    pub priority: u8,
    /// Status.
    pub status: TaskStatus,
    /// The last error.
    pub error: Option<String>,
    /// Assignee agent.
    pub assignee_agent_id: Option<String>,
    /// Automation mode.
    pub automation_mode: Option<AutomationMode>,
    /// Heartbeat settings.
    pub heartbeat: HeartbeatConfig,
    /// Schedule settings.
    pub schedule: ScheduleConfig,
    /// Most topics.
    pub max_topics: Option<u32>,
    /// Topics opened.
    pub total_topics: u32,
    /// The latest topic.
    pub current_topic_id: Option<String>,
    /// The latest completed topic (the next run's prompt starts from its hand-off).
    pub last_completed_topic_id: Option<String>,
    /// Run settings.
    pub config: TaskConfig,
    /// Upstream task → kind.
    pub dependencies: BTreeMap<String, DependencyKind>,
    /// Pinned document → who pinned it.
    pub documents: BTreeMap<String, PinnedBy>,
    /// Live comment ids.
    pub comment_ids: BTreeSet<String>,
    /// Topic id → topic.
    pub topics: BTreeMap<String, Topic>,
    /// Last heartbeat.
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// Last set running.
    pub started_at: Option<DateTime<Utc>>,
    /// Last reached a terminal status.
    pub completed_at: Option<DateTime<Utc>>,
    /// Consecutive failed automated runs.
    pub consecutive_failures: u32,
    /// The current heartbeat tick's token.
    pub tick_token: Option<String>,
    /// When the current heartbeat tick falls due.
    pub next_tick_at: Option<DateTime<Utc>>,
    /// Start of the current schedule max-executions window.
    pub schedule_started_at: Option<DateTime<Utc>>,
    /// The hand-off of the last completed topic: the next run starts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handoff: Option<Handoff>,
    /// The latest comment or document a user (not a run) added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_input_at: Option<DateTime<Utc>>,
    /// Heartbeat ticks skipped for want of new input.
    #[serde(default)]
    pub skipped_ticks: u32,
    /// When the latest tick was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_skipped_tick_at: Option<DateTime<Utc>>,
}

impl Task {
    /// Does it exist?
    pub fn exists(&self) -> bool {
        self.spec.is_some()
    }

    /// Its id (empty while it does not exist).
    pub fn id(&self) -> &str {
        self.spec.as_ref().map_or("", |s| s.task_id.as_str())
    }

    /// Its parent task.
    pub fn parent_task_id(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.parent_task_id.as_deref())
    }

    /// Running topics, by id.
    pub fn running_topics(&self) -> impl Iterator<Item = &Topic> {
        self.topics.values().filter(|t| t.status == TopicStatus::Running)
    }

    /// The `blocks` upstreams of this task.
    pub fn blocked_by(&self) -> impl Iterator<Item = &str> {
        self.dependencies
            .iter()
            .filter(|(_, k)| **k == DependencyKind::Blocks)
            .map(|(id, _)| id.as_str())
    }

    /// Is its last heartbeat older than its heartbeat timeout at `now`?
    pub fn heartbeat_stale(&self, now: DateTime<Utc>) -> bool {
        match (self.last_heartbeat_at, self.heartbeat.timeout_secs) {
            (Some(last), Some(timeout)) => {
                let timeout = i64::try_from(timeout).unwrap_or(i64::MAX);
                (now - last).num_seconds() > timeout
            }
            _ => false,
        }
    }

    /// When its heartbeat goes stale ([`heartbeat_deadline`] of its last heartbeat and
    /// timeout); `None` without a heartbeat or a timeout.
    pub fn heartbeat_deadline(&self) -> Option<DateTime<Utc>> {
        heartbeat_deadline(self.last_heartbeat_at?, self.heartbeat.timeout_secs?)
    }

    /// Runs triggered by the schedule since the current schedule window opened.
    pub fn schedule_runs_in_window(&self) -> u32 {
        let since = self.schedule_started_at;
        let count = self
            .topics
            .values()
            .filter(|t| {
                t.trigger == RunTrigger::Schedule && since.is_none_or(|s| t.started_at >= s)
            })
            .count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// Has the topic quota (max topics, or the schedule's max executions in its window) been
    /// reached? The schedule cap only counts once a window was opened, as upstream.
    pub fn quota_reached(&self) -> bool {
        let topics_full = self.max_topics.is_some_and(|max| self.total_topics >= max);
        let schedule_full = self.automation_mode == Some(AutomationMode::Schedule)
            && self.schedule_started_at.is_some()
            && self
                .schedule
                .max_executions
                .is_some_and(|max| max > 0 && self.schedule_runs_in_window() >= max);
        topics_full || schedule_full
    }
}

/// When a heartbeat at `last` with a timeout of `timeout_secs` goes stale: the first whole
/// second past the timeout, the first instant at which [`Task::heartbeat_stale`] holds. `None`
/// when that is past the end of representable time (it never goes stale).
pub fn heartbeat_deadline(last: DateTime<Utc>, timeout_secs: u64) -> Option<DateTime<Utc>> {
    let secs = i64::try_from(timeout_secs).ok()?.checked_add(1)?;
    last.checked_add_signed(chrono::Duration::try_seconds(secs)?)
}
