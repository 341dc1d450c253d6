//! Brief: a hand-off card for a human (stream `brief-<id>`).
//!
//! Types decision | result | insight | error, priorities urgent | normal | info, default actions
//! per type (decision: approve + feedback; error: retry + feedback, or upgrade + feedback for a
//! billing error; insight: acknowledge; result: none, the UI shows a fixed approve). Read once
//! (a second read records nothing), and **resolved once**: unlike upstream, which overwrites, a
//! second resolve is refused with [`DomainError::AlreadyResolved`]. Approving a result brief
//! completes its task: [`crate::rules::brief_resolution::resolve_brief`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::aggregate::Aggregate;
use crate::context::Context;
use crate::error::DomainError;
use crate::event_codec::{no_idempotency_key, no_upcasts};
use crate::scope::Scope;
use crate::streams::StreamKind;

/// The kind of brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriefType {
    /// A human must decide.
    Decision,
    /// A run's result.
    Result,
    /// Something worth knowing.
    Insight,
    /// A run failed.
    Error,
}

impl BriefType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decision => "decision",
            Self::Result => "result",
            Self::Insight => "insight",
            Self::Error => "error",
        }
    }
}

/// How urgent it is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum BriefPriority {
    /// Needs attention now.
    Urgent,
    /// Normal.
    Normal,
    /// For information (upstream default).
    #[default]
    Info,
}

/// What a button does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BriefActionType {
    /// Resolves the brief.
    Resolve,
    /// Resolves it with a comment.
    Comment,
    /// Opens a link (and resolves it).
    Link,
}

/// A button on a brief.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefAction {
    /// Its key (the resolved action).
    pub key: String,
    /// Its label.
    pub label: String,
    /// What it does.
    #[serde(rename = "type")]
    pub action_type: BriefActionType,
    /// The link of a link action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl BriefAction {
    fn new(key: &str, label: &str, action_type: BriefActionType) -> Self {
        Self { key: key.into(), label: label.into(), action_type, url: None }
    }
}

/// Is `code` a billing error (then retrying is futile: offer an upgrade)?
pub fn is_billing_error(code: &str) -> bool {
    let code = code.to_ascii_lowercase();
    ["budget", "quota", "billing", "credit", "payment"].iter().any(|k| code.contains(k))
}

/// The default buttons of a brief type.
pub fn default_actions(brief_type: BriefType, error_code: Option<&str>) -> Vec<BriefAction> {
    use BriefActionType::*;
    match brief_type {
        BriefType::Decision => vec![
            BriefAction::new("approve", "Approve", Resolve),
            BriefAction::new("feedback", "Feedback", Comment),
        ],
        BriefType::Error if error_code.is_some_and(is_billing_error) => vec![
            BriefAction {
                url: Some("/settings/billing".into()),
                ..BriefAction::new("upgrade", "Upgrade", Link)
            },
            BriefAction::new("feedback", "Feedback", Comment),
        ],
        BriefType::Error => vec![
            BriefAction::new("retry", "Retry", Resolve),
            BriefAction::new("feedback", "Feedback", Comment),
        ],
        BriefType::Insight => vec![BriefAction::new("acknowledge", "Acknowledge", Resolve)],
        // Approving completes the brief's task (`rules::brief_resolution`).
        BriefType::Result => vec![
            BriefAction::new(APPROVE, "Approve", Resolve),
            BriefAction::new("comment", "Comment", Comment),
        ],
    }
}

/// A link button (resolves the brief when followed).
pub fn link_action(key: &str, label: &str, url: &str) -> BriefAction {
    BriefAction { url: Some(url.into()), ..BriefAction::new(key, label, BriefActionType::Link) }
}

/// The action of a result brief's approve button (always offered by result briefs recorded
/// without actions, from before result briefs listed it).
pub const APPROVE: &str = "approve";
/// The action bulk "mark all read" resolves with.
pub const READ: &str = "read";

/// A document a brief refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefDocument {
    /// Document id.
    pub id: String,
    /// Kind.
    pub kind: String,
    /// Title.
    pub title: String,
}

/// Everything needed to create a brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateBrief {
    /// Its id.
    pub brief_id: String,
    /// Type.
    #[serde(rename = "type")]
    pub brief_type: BriefType,
    /// Priority.
    #[serde(default)]
    pub priority: BriefPriority,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Task it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Topic it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// Operation it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// Cron job it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron_job_id: Option<String>,
    /// Agent that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Buttons (none = the type's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<BriefAction>>,
    /// Documents it refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<BriefDocument>,
    /// What produced it (`task`, `agent`, `signal`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The error code of an error brief.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Namespaced metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl CreateBrief {
    /// A brief with default priority and actions and no links.
    pub fn new(
        brief_id: impl Into<String>,
        brief_type: BriefType,
        title: impl Into<String>,
        summary: impl Into<String>,
    ) -> Self {
        Self {
            brief_id: brief_id.into(),
            brief_type,
            priority: BriefPriority::default(),
            title: title.into(),
            summary: summary.into(),
            task_id: None,
            topic_id: None,
            operation_id: None,
            cron_job_id: None,
            agent_id: None,
            actions: None,
            documents: Vec::new(),
            trigger: None,
            error_code: None,
            metadata: None,
        }
    }
}

/// A command to a brief.
#[derive(Debug, Clone, PartialEq)]
// Commands are built once and matched; boxing the big variant buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum BriefCommand {
    /// Create it.
    Create(CreateBrief),
    /// The human saw it.
    MarkRead,
    /// The human chose an action (once).
    Resolve {
        /// The action key (`approve`, `retry`, `feedback`, `read`, …).
        action: String,
        /// A comment.
        comment: Option<String>,
    },
}

/// `brief.created`: `actions` is always filled (defaults applied).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefCreated {
    /// The brief.
    #[serde(flatten)]
    pub brief: CreateBrief,
    /// Owner.
    pub user_id: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// `brief.read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefRead {
    /// When.
    pub at: DateTime<Utc>,
}

/// `brief.resolved` (also marks it read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BriefResolved {
    /// The chosen action.
    pub action: String,
    /// The comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

crate::domain_events! {
    /// Everything a brief records.
    pub enum BriefEvent (upcast = no_upcasts, key = no_idempotency_key) {
        /// Created.
        Created(BriefCreated) = "brief.created" v 1,
        /// Read.
        Read(BriefRead) = "brief.read" v 1,
        /// Resolved.
        Resolved(BriefResolved) = "brief.resolved" v 1,
    }
}

/// The state of a brief, folded from `brief-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Brief {
    /// What it was created with (actions filled); `None` while it does not exist.
    pub brief: Option<CreateBrief>,
    /// Owner.
    pub user_id: String,
    /// First read.
    pub read_at: Option<DateTime<Utc>>,
    /// Resolved with this action.
    pub resolved_action: Option<String>,
    /// Resolution comment.
    pub resolved_comment: Option<String>,
    /// Resolved.
    pub resolved_at: Option<DateTime<Utc>>,
}

impl Brief {
    /// Its id (empty while it does not exist).
    pub fn id(&self) -> &str {
        self.brief.as_ref().map_or("", |b| b.brief_id.as_str())
    }

    /// Unresolved and urgent (blocks heartbeat re-arm unless it is an error brief).
    pub fn is_open_urgent(&self) -> bool {
        self.resolved_at.is_none()
            && self.brief.as_ref().is_some_and(|b| b.priority == BriefPriority::Urgent)
    }
}

impl Aggregate for Brief {
    type Command = BriefCommand;
    type Event = BriefEvent;
    const KIND: StreamKind = StreamKind::Brief;

    fn decide(
        &self,
        command: &BriefCommand,
        ctx: &Context,
    ) -> Result<Vec<BriefEvent>, DomainError> {
        match (&self.brief, command) {
            (Some(b), BriefCommand::Create(_)) => {
                Err(DomainError::AlreadyExists { aggregate: "brief", id: b.brief_id.clone() })
            }
            (None, BriefCommand::Create(create)) => {
                for (field, value) in [
                    ("briefId", &create.brief_id),
                    ("title", &create.title),
                    ("summary", &create.summary),
                ] {
                    if value.trim().is_empty() {
                        return Err(DomainError::validation(field, "must not be empty"));
                    }
                }
                let mut brief = create.clone();
                let actions = brief.actions.take().unwrap_or_else(|| {
                    default_actions(create.brief_type, create.error_code.as_deref())
                });
                let mut keys = std::collections::BTreeSet::new();
                if let Some(dup) = actions.iter().find(|a| !keys.insert(a.key.as_str())) {
                    return Err(DomainError::validation(
                        "actions",
                        format!("action '{}' appears twice", dup.key),
                    ));
                }
                if actions.iter().any(|a| a.action_type == BriefActionType::Link && a.url.is_none())
                {
                    return Err(DomainError::validation("actions", "a link action needs a url"));
                }
                if let Some(url) = actions
                    .iter()
                    .filter_map(|a| a.url.as_deref())
                    .find(|u| !crate::values::is_safe_link(u))
                {
                    return Err(DomainError::validation(
                        "actions",
                        format!("url '{url}' is neither http(s) nor relative"),
                    ));
                }
                brief.actions = Some(actions);
                Ok(vec![BriefEvent::Created(BriefCreated {
                    brief,
                    user_id: ctx.user_id.clone(),
                    at: ctx.now,
                })])
            }
            (None, _) => Err(DomainError::not_found("brief", "")),
            (Some(_), BriefCommand::MarkRead) => {
                if self.read_at.is_some() {
                    return Ok(Vec::new());
                }
                Ok(vec![BriefEvent::Read(BriefRead { at: ctx.now })])
            }
            (Some(b), BriefCommand::Resolve { action, comment }) => {
                if let Some(done) = &self.resolved_action {
                    return Err(DomainError::AlreadyResolved {
                        brief_id: b.brief_id.clone(),
                        action: done.clone(),
                    });
                }
                let actions = b.actions.as_deref().unwrap_or_default();
                let chosen = actions.iter().find(|a| &a.key == action);
                let fixed = action == READ
                    || (b.brief_type == BriefType::Result
                        && actions.is_empty()
                        && action == APPROVE);
                if chosen.is_none() && !fixed {
                    let offered: Vec<&str> = actions.iter().map(|a| a.key.as_str()).collect();
                    return Err(DomainError::validation(
                        "action",
                        format!(
                            "'{action}' is not an action of this brief (it offers: {})",
                            offered.join(", ")
                        ),
                    ));
                }
                if chosen.is_some_and(|a| a.action_type == BriefActionType::Comment)
                    && comment.as_deref().is_none_or(|c| c.trim().is_empty())
                {
                    return Err(DomainError::validation(
                        "comment",
                        format!("the '{action}' action needs a comment"),
                    ));
                }
                Ok(vec![BriefEvent::Resolved(BriefResolved {
                    action: action.clone(),
                    comment: comment.clone(),
                    at: ctx.now,
                })])
            }
        }
    }

    fn evolve(mut self, event: &BriefEvent) -> Self {
        match event {
            BriefEvent::Created(e) => {
                self.brief = Some(e.brief.clone());
                self.user_id = e.user_id.clone();
            }
            BriefEvent::Read(e) => {
                self.read_at.get_or_insert(e.at);
            }
            BriefEvent::Resolved(e) => {
                self.resolved_action = Some(e.action.clone());
                self.resolved_comment = e.comment.clone();
                self.resolved_at = Some(e.at);
                self.read_at.get_or_insert(e.at);
            }
        }
        self
    }

    fn scope(&self) -> Scope {
        let b = self.brief.as_ref();
        Scope {
            topic_id: b.and_then(|b| b.topic_id.clone()),
            task_id: b.and_then(|b| b.task_id.clone()),
            agent_id: b.and_then(|b| b.agent_id.clone()),
            user_id: (!self.user_id.is_empty()).then(|| self.user_id.clone()),
            ..Scope::default()
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.resolved_at.is_some() != self.resolved_action.is_some() {
            return Err("resolved time and action disagree".into());
        }
        if self.resolved_at.is_some() && self.read_at.is_none() {
            return Err("resolved but not read".into());
        }
        if self.brief.as_ref().is_some_and(|b| b.actions.is_none()) {
            return Err("a created brief without its actions".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
