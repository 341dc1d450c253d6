//! The state of one operation (and its pending cards): what `evolve` folds and `decide` reads.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::command::CreateOperation;
use super::hitl::HitlCard;
use super::model::*;
use crate::values::ReviewScore;
use crate::values::Usage;

/// A card waiting for its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCard {
    /// The card.
    pub card: HitlCard,
    /// When it was asked.
    pub asked_at: DateTime<Utc>,
    /// When its timeout fires.
    pub deadline: Option<DateTime<Utc>>,
}

/// The state of one operation, folded from `operation-<id>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// What it was created with; `None` while it does not exist.
    pub spec: Option<CreateOperation>,
    /// The owner.
    pub user_id: String,
    /// Status.
    pub status: OperationStatus,
    /// Phase while running.
    pub phase: Option<Phase>,
    /// Why it stopped.
    pub completion_reason: Option<CompletionReason>,
    /// Created.
    pub created_at: Option<DateTime<Utc>>,
    /// First claimed.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub completed_at: Option<DateTime<Utc>>,
    /// Steps recorded.
    pub step_count: u32,
    /// Summed usage (fields absent until measured).
    pub usage: Usage,
    /// Tool calls made (absent until a step was reported).
    pub tool_calls: Option<u64>,
    /// The current lease.
    pub lease: Option<Lease>,
    /// The card being waited on.
    pub pending_card: Option<PendingCard>,
    /// Keys still awaited while waiting_for_async_tool.
    pub awaiting: BTreeSet<String>,
    /// Keys whose result arrived.
    pub received: BTreeSet<String>,
    /// Child operations → background flag.
    pub children: BTreeMap<String, bool>,
    /// The current plan.
    pub plan: Option<Plan>,
    /// The current todo list.
    pub todos: Option<Vec<Todo>>,
    /// Artifacts produced.
    pub artifacts: Vec<Artifact>,
    /// Review scores.
    pub scores: Vec<ReviewScore>,
    /// Total time humans took to answer, in ms (absent until a card was answered).
    pub human_waiting_ms: Option<u64>,
    /// The error of a failed run.
    pub error: Option<OperationError>,
    /// The interruption of an interrupted run.
    pub interruption: Option<Interruption>,
}

impl Operation {
    /// Does it exist?
    pub fn exists(&self) -> bool {
        self.spec.is_some()
    }

    /// Its id (empty while it does not exist).
    pub fn id(&self) -> &str {
        self.spec.as_ref().map_or("", |s| s.operation_id.as_str())
    }

    /// Its kind.
    pub fn kind(&self) -> Option<OperationKind> {
        self.spec.as_ref().map(|s| s.kind)
    }

    /// The parent of a sub-agent.
    pub fn parent_operation_id(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.parent_operation_id.as_deref())
    }

    /// The conversation it belongs to.
    pub fn topic_id(&self) -> Option<&str> {
        self.spec.as_ref().and_then(|s| s.topic_id.as_deref())
    }

    /// Child operation ids.
    pub fn child_ids(&self) -> impl Iterator<Item = &str> {
        self.children.keys().map(String::as_str)
    }

    /// Has it ended?
    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }
}
