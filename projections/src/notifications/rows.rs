//! The notification row: what the API serves and how it maps to `notifications`.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::{
    columns::{Columns, micros, opt_json_text, opt_micros},
    db::{Row, SqlValue},
    error::ProjectionError,
    staging::TableRow,
};

/// A notification in a user's inbox.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationRow {
    /// Its id (derived from the dedupe key when there is one).
    pub notification_id: String,
    /// The recipient.
    pub user_id: String,
    /// Coarse group (`brief`, `hitl`, `budget`, …).
    pub category: String,
    /// The scenario (`brief_error`, `decision_required`, …).
    #[serde(rename = "type")]
    pub notification_type: String,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// Makes creation idempotent per user.
    pub dedupe_key: Option<String>,
    /// Where clicking leads.
    pub action_url: Option<String>,
    /// Free metadata.
    pub metadata: Option<Value>,
    /// Read.
    pub is_read: bool,
    /// Archived.
    pub is_archived: bool,
    /// Marked read (cleared when marked unread).
    pub read_at: Option<DateTime<Utc>>,
    /// Archived.
    pub archived_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed (log time).
    pub updated_at: DateTime<Utc>,
    /// Log position of its `notification.created` event.
    pub created_position: i64,
}

impl TableRow for NotificationRow {
    type Key = String;
    const TABLE: &'static str = "notifications";
    const COLUMNS: &'static [&'static str] = &[
        "notification_id",
        "user_id",
        "category",
        "notification_type",
        "title",
        "body",
        "dedupe_key",
        "action_url",
        "metadata",
        "is_read",
        "is_archived",
        "read_at",
        "archived_at",
        "created_at",
        "updated_at",
        "created_position",
    ];
    const KEY: &'static [&'static str] = &["notification_id"];

    fn key(&self) -> String {
        self.notification_id.clone()
    }
    fn key_values(key: &String) -> Vec<SqlValue> {
        vec![key.into()]
    }
    fn values(&self) -> Vec<SqlValue> {
        vec![
            self.notification_id.as_str().into(),
            self.user_id.as_str().into(),
            self.category.as_str().into(),
            self.notification_type.as_str().into(),
            self.title.as_str().into(),
            self.body.as_str().into(),
            self.dedupe_key.as_deref().into(),
            self.action_url.as_deref().into(),
            opt_json_text(self.metadata.as_ref()),
            self.is_read.into(),
            self.is_archived.into(),
            opt_micros(self.read_at),
            opt_micros(self.archived_at),
            micros(self.created_at),
            micros(self.updated_at),
            self.created_position.into(),
        ]
    }
    fn from_row(row: &Row) -> Result<Self, ProjectionError> {
        let mut c = Columns::new(row, Self::TABLE, Self::COLUMNS);
        Ok(Self {
            notification_id: c.text()?,
            user_id: c.text()?,
            category: c.text()?,
            notification_type: c.text()?,
            title: c.text()?,
            body: c.text()?,
            dedupe_key: c.opt_text(),
            action_url: c.opt_text(),
            metadata: c.opt_json()?,
            is_read: c.flag()?,
            is_archived: c.flag()?,
            read_at: c.opt_time()?,
            archived_at: c.opt_time()?,
            created_at: c.time()?,
            updated_at: c.time()?,
            created_position: c.int()?,
        })
    }
}
