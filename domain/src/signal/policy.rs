//! Signal policies: pure functions from a recorded fact to the commands it calls for. The api's
//! signal bus runs them for every new event and issues the commands with
//! [`Context::reacting_to`](crate::context::Context::reacting_to), so the commands carry the
//! fact's chain and their ids are derived from it (running a policy twice writes once).
//!
//! | fact | policy | commands |
//! |---|---|---|
//! | `operation.failed` of a top-level, non-task run | [`on_operation_failed`] | urgent error brief |
//! | `task.topic_failed` | [`on_topic_failed`] | urgent error brief |
//! | `task.topic_completed` whose brief decision says emit | [`on_topic_completed`] | result brief (normal) |
//! | `brief.created` | [`on_brief_created`] | notification, dedupeKey `brief:<id>` |
//! | `operation.human_asked` | [`on_human_asked`] | decision notification |
//! | `operation.lease_expired` | [`on_lease_expired`] | source `agentlog.operation.lease_expired` |
//! | `cron.fired` | [`on_cron_fired`] | source `agentlog.cron.fired` |
//! | `cron.auto_disabled` | [`on_cron_exhausted`] | source `agentlog.cron.exhausted` |
//! | `agent.execution.completed` source | [`is_run_finished`] | nothing for a pause |
//!
//! The last three bridge agentlog's own facts into the bus as sources (agentlog's own source
//! types, [`AGENTLOG_SOURCE_TYPES`](super::AGENTLOG_SOURCE_TYPES)): the source processors
//! ([`super::processors`]) then decide what they are worth — an interrupted run's owner is
//! told, a fire is recorded, an exhausted job's owner is told — each step an event on the
//! source's stream, in the fact's chain.
//!
//! An operation failure reaches the user as a brief and, one hop later in the same chain, as
//! the brief's notification. Task runs and sub-agents get no operation-failure brief: the task
//! lifecycle reports a task run, and a sub-agent's failure goes to its parent.

use serde_json::{Value, json};

use crate::briefs::{
    BriefCreated, BriefPriority, BriefType, CreateBrief, default_actions, link_action,
};
use crate::cron_jobs::{CronFired, CronJob, CronToggled};
use crate::ids::{derived_id, server_id};
use crate::notifications::CreateNotification;
use crate::operations::event::{HumanAsked, LeaseExpired, OperationFailed};
use crate::operations::{Operation, OperationKind};
use crate::signal::source::SourceReceived;
use crate::tasks::Task;
use crate::tasks::event::{TopicCompleted, TopicFailed};

/// A command a policy calls for.
#[derive(Debug, Clone, PartialEq)]
pub enum Reaction {
    /// Create a brief (stream `brief-<briefId>`).
    CreateBrief(CreateBrief),
    /// Create a notification (stream `notification-<userId>`).
    CreateNotification(CreateNotification),
    /// Receive a source of agentlog's own (stream `source-<sourceId>`).
    ReceiveSource(AgentlogSource),
}

/// A source agentlog produces from one of its facts.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentlogSource {
    /// Derived from the fact, so bridging twice is one source.
    pub source_id: String,
    /// One of [`AGENTLOG_SOURCE_TYPES`](super::AGENTLOG_SOURCE_TYPES).
    pub source_type: &'static str,
    /// Its payload (camelCase, ids the scope key derives from).
    pub payload: Value,
    /// When the fact happened (ms).
    pub timestamp_ms: i64,
}

/// Policy ids, used to derive the reacting command ids.
pub mod ids {
    /// Operation failure → error brief.
    pub const OPERATION_FAILED: &str = "policy.operation-failed-brief";
    /// Topic failure → error brief.
    pub const TOPIC_FAILED: &str = "policy.topic-failed-brief";
    /// Topic completion → result brief.
    pub const TOPIC_COMPLETED: &str = "policy.topic-completed-brief";
    /// Brief → notification.
    pub const BRIEF_NOTIFICATION: &str = "policy.brief-notification";
    /// Human asked → notification.
    pub const HUMAN_ASKED: &str = "policy.human-asked-notification";
    /// Lease expired (the worker vanished) → source `agentlog.operation.lease_expired`.
    pub const LEASE_EXPIRED: &str = "policy.lease-expired-source";
    /// Cron fired → source `agentlog.cron.fired`.
    pub const CRON_FIRED: &str = "policy.cron-fired-source";
    /// Cron job out of executions → source `agentlog.cron.exhausted`.
    pub const CRON_EXHAUSTED: &str = "policy.cron-exhausted-source";
}

/// A brief id derived from what caused it, so the same cause never makes two briefs.
pub fn brief_id_for(cause: &str, key: &str) -> String {
    server_id(derived_id("brief", &format!("{cause}:{key}"), 0))
}

fn error_brief(
    brief_id: String,
    title: String,
    summary: String,
    code: Option<String>,
) -> CreateBrief {
    let mut brief = CreateBrief::new(brief_id, BriefType::Error, title, summary);
    brief.priority = BriefPriority::Urgent;
    brief.error_code = code;
    brief
}

/// `operation.failed` → an urgent error brief, for top-level runs that are not task runs.
pub fn on_operation_failed(op: &Operation, failed: &OperationFailed) -> Vec<Reaction> {
    let Some(spec) = &op.spec else { return Vec::new() };
    if spec.kind == OperationKind::Task || spec.parent_operation_id.is_some() {
        return Vec::new();
    }
    let mut brief = error_brief(
        brief_id_for("operation-failed", &spec.operation_id),
        "A run failed".into(),
        failed.error.message.clone(),
        failed.error.code.clone(),
    );
    brief.operation_id = Some(spec.operation_id.clone());
    brief.topic_id = spec.topic_id.clone();
    brief.agent_id = Some(spec.agent.agent_id.clone());
    brief.trigger = Some("agent".into());
    vec![Reaction::CreateBrief(brief)]
}

/// `task.topic_failed` → an urgent error brief (retry + feedback, or upgrade + feedback for a
/// billing error). The copy names the task, not internal ids.
pub fn on_topic_failed(task: &Task, failed: &TopicFailed) -> Vec<Reaction> {
    let name = task
        .name
        .clone()
        .unwrap_or_else(|| task.spec.as_ref().map_or_else(String::new, |s| s.identifier.clone()));
    let mut brief = error_brief(
        brief_id_for("topic-failed", &format!("{}:{}", failed.topic_id, failed.operation_id)),
        format!("{name} failed"),
        failed.error.clone(),
        failed.error_code.clone(),
    );
    brief.task_id = Some(task.id().to_string());
    brief.topic_id = Some(failed.topic_id.clone());
    brief.operation_id = Some(failed.operation_id.clone());
    brief.agent_id = task.assignee_agent_id.clone();
    brief.trigger = Some("task".into());
    vec![Reaction::CreateBrief(brief)]
}

/// `task.topic_completed` → a result brief (normal; approve, comment and a link to the run)
/// when its brief decision says so.
pub fn on_topic_completed(task: &Task, completed: &TopicCompleted) -> Vec<Reaction> {
    let emit = completed.handoff.brief_decision.as_ref().is_some_and(|d| d.emit);
    if !emit {
        return Vec::new();
    }
    let handoff = &completed.handoff;
    let title = handoff
        .title
        .clone()
        .or_else(|| task.name.clone())
        .unwrap_or_else(|| "A run finished".into());
    let summary = handoff
        .summary
        .clone()
        .or_else(|| handoff.content.clone())
        .unwrap_or_else(|| "The run finished.".into());
    let mut brief = CreateBrief::new(
        brief_id_for("topic-completed", &completed.topic_id),
        BriefType::Result,
        title,
        summary,
    );
    brief.priority = BriefPriority::Normal;
    brief.task_id = Some(task.id().to_string());
    brief.topic_id = Some(completed.topic_id.clone());
    brief.operation_id = Some(completed.operation_id.clone());
    brief.agent_id = task.assignee_agent_id.clone();
    brief.trigger = Some("task".into());
    let mut actions = default_actions(BriefType::Result, None);
    actions.push(link_action(
        "link",
        "Open the run",
        &format!("/tasks/{}/topics/{}", task.id(), completed.topic_id),
    ));
    brief.actions = Some(actions);
    vec![Reaction::CreateBrief(brief)]
}

/// `brief.created` → a notification for its owner, deduplicated on `brief:<id>`.
pub fn on_brief_created(created: &BriefCreated) -> Vec<Reaction> {
    let b = &created.brief;
    vec![Reaction::CreateNotification(CreateNotification {
        user_id: created.user_id.clone(),
        category: "brief".into(),
        notification_type: format!("brief_{}", b.brief_type.as_str()),
        title: b.title.clone(),
        body: b.summary.clone(),
        dedupe_key: Some(format!("brief:{}", b.brief_id)),
        action_url: Some(format!("/briefs/{}", b.brief_id)),
        metadata: Some(
            json!({ "briefId": b.brief_id, "priority": b.priority, "taskId": b.task_id }),
        ),
    })]
}

/// `operation.human_asked` → a decision notification for the operation's owner.
pub fn on_human_asked(op: &Operation, asked: &HumanAsked) -> Vec<Reaction> {
    if op.user_id.is_empty() {
        return Vec::new();
    }
    vec![Reaction::CreateNotification(CreateNotification {
        user_id: op.user_id.clone(),
        category: "hitl".into(),
        notification_type: "decision_required".into(),
        title: asked.card.title.clone(),
        body: asked
            .card
            .body
            .clone()
            .unwrap_or_else(|| "An agent is waiting for your answer.".into()),
        dedupe_key: Some(format!("hitl:{}:{}", op.id(), asked.card.card_id)),
        action_url: Some(format!("/operations/{}", op.id())),
        metadata: Some(
            json!({ "operationId": op.id(), "cardId": asked.card.card_id, "deadline": asked.deadline }),
        ),
    })]
}

/// `operation.lease_expired` → source `agentlog.operation.lease_expired`: its worker stopped
/// renewing and the run was interrupted (the `lease-expiry` processor tells the owner).
pub fn on_lease_expired(op: &Operation, expired: &LeaseExpired) -> Vec<Reaction> {
    if op.user_id.is_empty() {
        return Vec::new();
    }
    let at_ms = expired.expired_at.timestamp_millis();
    let spec = op.spec.as_ref();
    vec![Reaction::ReceiveSource(AgentlogSource {
        source_id: server_id(format_args!("lease-expired:{}:{at_ms}", op.id())),
        source_type: "agentlog.operation.lease_expired",
        payload: json!({
            "operationId": op.id(),
            "workerId": expired.worker_id,
            "expiredAt": expired.expired_at,
            "agentId": spec.map(|s| s.agent.agent_id.clone()),
            "topicId": spec.and_then(|s| s.topic_id.clone()),
            "userId": op.user_id,
        }),
        timestamp_ms: at_ms,
    })]
}

/// `cron.fired` → source `agentlog.cron.fired` (one per execution).
pub fn on_cron_fired(job: &CronJob, fired: &CronFired) -> Vec<Reaction> {
    vec![Reaction::ReceiveSource(AgentlogSource {
        source_id: server_id(format_args!(
            "cron-fired:{}:{}",
            fired.job_id, fired.total_executions
        )),
        source_type: "agentlog.cron.fired",
        payload: json!({
            "jobId": fired.job_id,
            "name": job.name,
            "agentId": job.agent_id,
            "localTime": fired.local_time,
            "totalExecutions": fired.total_executions,
            "remainingExecutions": fired.remaining_executions,
            "userId": job.user_id,
        }),
        timestamp_ms: fired.at.timestamp_millis(),
    })]
}

/// `cron.auto_disabled` → source `agentlog.cron.exhausted`: the job used its last execution.
pub fn on_cron_exhausted(job: &CronJob, disabled: &CronToggled) -> Vec<Reaction> {
    if job.user_id.is_empty() {
        return Vec::new();
    }
    vec![Reaction::ReceiveSource(AgentlogSource {
        source_id: server_id(format_args!(
            "cron-exhausted:{}:{}",
            job.job_id, job.total_executions
        )),
        source_type: "agentlog.cron.exhausted",
        payload: json!({
            "jobId": job.job_id,
            "name": job.name,
            "agentId": job.agent_id,
            "totalExecutions": job.total_executions,
            "userId": job.user_id,
        }),
        timestamp_ms: disabled.at.timestamp_millis(),
    })]
}

/// Does an `agent.execution.completed` source mean the run really finished? Upstream reuses
/// it for pauses (`reason` `waiting_for_human` / `waiting_for_async_tool`), which are not ends.
pub fn is_run_finished(source: &SourceReceived) -> bool {
    match source.source_type.as_str() {
        "agent.execution.completed" => !matches!(
            source.payload.get("reason").and_then(Value::as_str),
            Some("waiting_for_human" | "waiting_for_async_tool")
        ),
        "agent.execution.failed" => true,
        _ => false,
    }
}
