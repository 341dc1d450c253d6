//! The brief row: what the API serves and how it maps to `briefs`.

use agentlog_domain::briefs::{BriefAction, BriefDocument, BriefPriority, BriefType};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::{
    columns::{Columns, from_wire_name, json_text, micros, opt_json_text, opt_micros, wire_name},
    db::{Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A brief as it stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefRow {
    /// Its id.
    pub brief_id: String,
    /// Owner.
    pub user_id: String,
    /// Decision, result, insight or error.
    #[serde(rename = "type")]
    pub brief_type: BriefType,
    /// Urgent, normal or info.
    pub priority: BriefPriority,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Buttons (defaults applied).
    pub actions: Vec<BriefAction>,
    /// Documents it refers to.
    pub documents: Vec<BriefDocument>,
    /// Task it concerns.
    pub task_id: Option<String>,
    /// Topic it concerns.
    pub topic_id: Option<String>,
    /// Operation it concerns.
    pub operation_id: Option<String>,
    /// Cron job it concerns.
    pub cron_job_id: Option<String>,
    /// Agent that produced it.
    pub agent_id: Option<String>,
    /// What produced it (`task`, `agent`, `signal`, …).
    pub trigger: Option<String>,
    /// Error code of an error brief.
    pub error_code: Option<String>,
    /// Namespaced metadata.
    pub metadata: Option<Value>,
    /// First read.
    pub read_at: Option<DateTime<Utc>>,
    /// The action it was resolved with.
    pub resolved_action: Option<String>,
    /// The resolution's comment.
    pub resolved_comment: Option<String>,
    /// Resolved.
    pub resolved_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
}

impl TableRow for BriefRow {
    /// `(user_id, brief_id)`: brief ids are per owner.
    type Key = (String, String);
    const TABLE: &'static str = "briefs";
    const COLUMNS: &'static [&'static str] = &[
        "brief_id",
        "user_id",
        "brief_type",
        "priority",
        "title",
        "summary",
        "actions",
        "documents",
        "task_id",
        "topic_id",
        "operation_id",
        "cron_job_id",
        "agent_id",
        "brief_trigger",
        "error_code",
        "metadata",
        "read_at",
        "resolved_action",
        "resolved_comment",
        "resolved_at",
        "created_at",
        "updated_at",
    ];
    const KEY: &'static [&'static str] = &["user_id", "brief_id"];

    fn key(&self) -> (String, String) {
        (self.user_id.clone(), self.brief_id.clone())
    }
    fn key_values(key: &(String, String)) -> Vec<SqlValue> {
        vec![key.0.as_str().into(), key.1.as_str().into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.brief_id.as_str().into(),
            self.user_id.as_str().into(),
            self.brief_type.as_str().into(),
            wire_name(&self.priority).into(),
            self.title.as_str().into(),
            self.summary.as_str().into(),
            json_text(&self.actions),
            json_text(&self.documents),
            self.task_id.as_deref().into(),
            self.topic_id.as_deref().into(),
            self.operation_id.as_deref().into(),
            self.cron_job_id.as_deref().into(),
            self.agent_id.as_deref().into(),
            self.trigger.as_deref().into(),
            self.error_code.as_deref().into(),
            opt_json_text(self.metadata.as_ref()),
            opt_micros(self.read_at),
            self.resolved_action.as_deref().into(),
            self.resolved_comment.as_deref().into(),
            opt_micros(self.resolved_at),
            micros(self.created_at),
            micros(self.updated_at),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            brief_id: c.text()?,
            user_id: c.text()?,
            brief_type: from_wire_name(Self::TABLE, &c.text()?)?,
            priority: from_wire_name(Self::TABLE, &c.text()?)?,
            title: c.text()?,
            summary: c.text()?,
            actions: c.json()?,
            documents: c.json()?,
            task_id: c.opt_text(),
            topic_id: c.opt_text(),
            operation_id: c.opt_text(),
            cron_job_id: c.opt_text(),
            agent_id: c.opt_text(),
            trigger: c.opt_text(),
            error_code: c.opt_text(),
            metadata: c.opt_json()?,
            read_at: c.opt_time()?,
            resolved_action: c.opt_text(),
            resolved_comment: c.opt_text(),
            resolved_at: c.opt_time()?,
            created_at: c.time()?,
            updated_at: c.time()?,
        })
    }
}
