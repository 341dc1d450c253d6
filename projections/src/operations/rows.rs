//! The operations tables' columns, and the rows the fold writes into them.

use agentlog_domain::operations::{
    Artifact, CardAnswer, OnTimeout, PendingCard,
    event::{AsyncResultReceived, StepRecorded},
};
use agentlog_domain::values::ReviewScore;
use agentlog_domain::values::Usage;
use chrono::{DateTime, Utc};

use crate::{
    db::SqlValue,
    decoding::OwnedKey,
    error::ProjectionError,
    fold::{RowSet, int, int_opt, json_text, micros, wire_name},
};

/// Columns of `operations`, in row order.
pub(crate) const OPERATION_COLUMNS: [&str; 45] = [
    "id",
    "user_id",
    "kind",
    "status",
    "phase",
    "completion_reason",
    "agent_id",
    "agent_config_version",
    "model",
    "provider",
    "topic_id",
    "thread_id",
    "task_id",
    "group_id",
    "parent_operation_id",
    "background",
    "run_trigger",
    "instruction",
    "step_count",
    "max_steps",
    "cost_limit_micros",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_micros",
    "tool_calls",
    "human_waiting_ms",
    "pending_card",
    "awaiting",
    "child_count",
    "lease_worker_id",
    "lease_expires_at",
    "created_at",
    "started_at",
    "completed_at",
    "duration_ms",
    "result",
    "error",
    "interruption",
    "cancellation",
    "plan",
    "todos",
    "updated_at",
    "updated_position",
    "state",
];

/// Columns of `operation_steps`.
pub(crate) const STEP_COLUMNS: [&str; 12] = [
    "operation_id",
    "step_index",
    "user_id",
    "phase",
    "tool_calls",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_micros",
    "at",
    "position",
];

/// Columns of `operation_cards`.
pub(crate) const CARD_COLUMNS: [&str; 14] = [
    "operation_id",
    "asked_position",
    "user_id",
    "card_id",
    "kind",
    "title",
    "card",
    "asked_at",
    "deadline",
    "outcome",
    "answer",
    "on_timeout",
    "waited_ms",
    "closed_at",
];

/// Columns of `operation_artifacts`.
pub(crate) const ARTIFACT_COLUMNS: [&str; 8] =
    ["operation_id", "artifact_id", "user_id", "title", "kind", "size_bytes", "content_ref", "position"];

/// Columns of `operation_scores`.
pub(crate) const SCORE_COLUMNS: [&str; 8] =
    ["operation_id", "seq", "user_id", "rubric_id", "score", "passed", "reason", "position"];

/// Columns of `operation_async_results`.
pub(crate) const ASYNC_RESULT_COLUMNS: [&str; 9] = [
    "operation_id",
    "result_key",
    "user_id",
    "success",
    "result",
    "truncated",
    "original_chars",
    "resumed",
    "position",
];

/// Side-table rows produced by one batch, deduplicated by key.
#[derive(Debug, Default)]
pub(crate) struct SideRows {
    /// `operation_steps` by (owner, operation, step index).
    pub steps: RowSet<(String, String, u32)>,
    /// `operation_cards` by (owner, operation, asked position).
    pub cards: RowSet<(String, String, i64)>,
    /// `operation_artifacts` by (owner, operation, artifact).
    pub artifacts: RowSet<(String, String, String)>,
    /// `operation_scores` by (owner, operation, seq).
    pub scores: RowSet<(String, String, i64)>,
    /// `operation_async_results` by (owner, operation, key).
    pub async_results: RowSet<(String, String, String)>,
    /// What each recorded step spent, for the budgets' spend rollups.
    pub spend: Vec<crate::budgets::spend::StepSpend>,
}

pub(super) fn time(at: DateTime<Utc>) -> SqlValue {
    SqlValue::Int(micros(at))
}

pub(super) fn time_opt(at: Option<DateTime<Utc>>) -> SqlValue {
    at.map_or(SqlValue::Null, time)
}

pub(super) fn usage_values(usage: &Usage) -> [SqlValue; 4] {
    [int_opt(usage.input_tokens), int_opt(usage.output_tokens), int_opt(usage.total_tokens), int_opt(usage.cost_micros)]
}

/// The `operation_steps` row of a step.
pub(crate) fn step(key: &OwnedKey, e: &StepRecorded, position: i64) -> Result<Vec<SqlValue>, ProjectionError> {
    let mut row = vec![
        key.1.as_str().into(),
        e.step_index.into(),
        key.0.as_str().into(),
        wire_name(&e.phase)?.into(),
        json_text(&e.tool_calls)?.into(),
        int(e.tool_calls.len() as u64),
    ];
    row.extend(usage_values(&e.usage));
    row.extend([time(e.at), position.into()]);
    Ok(row)
}

/// How a card row ends (or that it is still open).
pub(crate) enum CardClose<'a> {
    /// Still waiting for its answer.
    Open,
    /// A human answered.
    Answered {
        /// The answer.
        answer: &'a CardAnswer,
        /// How long it waited.
        waited_ms: u64,
        /// When.
        at: DateTime<Utc>,
    },
    /// Nobody answered in time.
    TimedOut {
        /// What the card said to do.
        on_timeout: &'a OnTimeout,
        /// How long it waited.
        waited_ms: u64,
        /// When.
        at: DateTime<Utc>,
    },
    /// The operation ended while the card was open.
    Abandoned {
        /// When.
        at: DateTime<Utc>,
    },
}

/// The `operation_cards` row of a card.
pub(crate) fn card(
    key: &OwnedKey,
    asked_position: i64,
    pending: &PendingCard,
    how: &CardClose<'_>,
) -> Result<Vec<SqlValue>, ProjectionError> {
    let card = &pending.card;
    let (outcome, answer, on_timeout, waited_ms, closed_at) = match how {
        CardClose::Open => ("pending", SqlValue::Null, SqlValue::Null, SqlValue::Null, SqlValue::Null),
        CardClose::Answered { answer, waited_ms, at } => {
            ("answered", json_text(answer)?.into(), SqlValue::Null, int(*waited_ms), time(*at))
        }
        CardClose::TimedOut { on_timeout, waited_ms, at } => {
            ("timed_out", SqlValue::Null, json_text(on_timeout)?.into(), int(*waited_ms), time(*at))
        }
        CardClose::Abandoned { at } => ("abandoned", SqlValue::Null, SqlValue::Null, SqlValue::Null, time(*at)),
    };
    Ok(vec![
        key.1.as_str().into(),
        asked_position.into(),
        key.0.as_str().into(),
        card.card_id.as_str().into(),
        card.kind.name().into(),
        card.title.as_str().into(),
        json_text(card)?.into(),
        time(pending.asked_at),
        time_opt(pending.deadline),
        outcome.into(),
        answer,
        on_timeout,
        waited_ms,
        closed_at,
    ])
}

/// The `operation_artifacts` row of an artifact.
pub(crate) fn artifact(key: &OwnedKey, a: &Artifact, position: i64) -> Vec<SqlValue> {
    vec![
        key.1.as_str().into(),
        a.artifact_id.as_str().into(),
        key.0.as_str().into(),
        a.title.as_str().into(),
        a.kind.as_str().into(),
        int_opt(a.size_bytes),
        a.content_ref.as_str().into(),
        position.into(),
    ]
}

/// The `operation_scores` row of a score.
pub(crate) fn score(key: &OwnedKey, seq: i64, s: &ReviewScore, position: i64) -> Vec<SqlValue> {
    vec![
        key.1.as_str().into(),
        seq.into(),
        key.0.as_str().into(),
        s.rubric_id.as_str().into(),
        i64::from(s.score).into(),
        s.passed.into(),
        s.reason.as_deref().into(),
        position.into(),
    ]
}

/// The `operation_async_results` row of a delivered result.
pub(crate) fn async_result(key: &OwnedKey, e: &AsyncResultReceived, position: i64) -> Vec<SqlValue> {
    vec![
        key.1.as_str().into(),
        e.key.as_str().into(),
        key.0.as_str().into(),
        e.success.into(),
        e.result.as_deref().into(),
        e.truncated.into(),
        int_opt(e.original_chars),
        e.resumes.into(),
        position.into(),
    ]
}
