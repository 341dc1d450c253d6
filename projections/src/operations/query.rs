//! Queries over the operations read model. `owner = None` reads as an admin (every user's rows);
//! `Some(user)` sees only that user's operations (another user's id reads as absent).

use agentlog_domain::operations::{OperationKind, OperationStatus};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::{
    conditions::{Conditions, Order},
    db::{ReadDb, Row},
    error::ProjectionError,
    fold::wire_name,
    page::{Cursor, Page, PageRequest},
    read::RowExt,
    select::Keyset,
};

/// A worker's lease on an operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRow {
    /// The worker.
    pub worker_id: String,
    /// When it runs out unless renewed.
    pub expires_at: DateTime<Utc>,
}

/// One operation, as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationRow {
    /// Its id.
    pub id: String,
    /// The owner.
    pub user_id: String,
    /// conversation, subagent, tool, group or task.
    pub kind: String,
    /// idle, running, waiting_for_human, waiting_for_async_tool, done, error, interrupted, cancelled.
    pub status: String,
    /// thinking, acting, responding, finalizing, done.
    pub phase: Option<String>,
    /// Why it stopped (done, error, interrupted, max_steps, cost_limit, cancelled).
    pub completion_reason: Option<String>,
    /// The agent it runs under.
    pub agent_id: String,
    /// The agent's config version at creation.
    pub agent_config_version: i64,
    /// Model at creation.
    pub model: Option<String>,
    /// Provider at creation.
    pub provider: Option<String>,
    /// Conversation.
    pub topic_id: Option<String>,
    /// Thread in the conversation.
    pub thread_id: Option<String>,
    /// Task.
    pub task_id: Option<String>,
    /// Chat group.
    pub group_id: Option<String>,
    /// Parent of a sub-agent.
    pub parent_operation_id: Option<String>,
    /// A background sub-agent.
    pub background: bool,
    /// What started it (`chat`, `cron`, `task:schedule`, …).
    pub trigger: Option<String>,
    /// The instruction given to a sub-agent or task run.
    pub instruction: Option<String>,
    /// Steps recorded.
    pub step_count: i64,
    /// Step limit.
    pub max_steps: Option<i64>,
    /// Cost limit, micro-units.
    pub cost_limit_micros: Option<i64>,
    /// Prompt tokens (absent until measured).
    pub input_tokens: Option<i64>,
    /// Completion tokens (absent until measured).
    pub output_tokens: Option<i64>,
    /// All tokens (absent until measured).
    pub total_tokens: Option<i64>,
    /// Cost in micro-units (absent until measured).
    pub cost_micros: Option<i64>,
    /// Tool calls made (absent until a step was reported).
    pub tool_calls: Option<i64>,
    /// Time humans took to answer cards, ms (absent until one was answered).
    pub human_waiting_ms: Option<i64>,
    /// The card being waited on: `{card, askedAt, deadline?}`.
    pub pending_card: Option<Value>,
    /// Keys still awaited while waiting_for_async_tool.
    pub awaiting: Vec<String>,
    /// Child operations spawned.
    pub child_count: i64,
    /// The current lease.
    pub lease: Option<LeaseRow>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// First claimed.
    pub started_at: Option<DateTime<Utc>>,
    /// Finished.
    pub completed_at: Option<DateTime<Utc>>,
    /// completed − started, ms (absent until both are known).
    pub duration_ms: Option<i64>,
    /// The result text of a completed run.
    pub result: Option<String>,
    /// `{message, type?, code?}` of a failed run.
    pub error: Option<Value>,
    /// `{reason, canResume, interruptedAt}` of an interrupted run.
    pub interruption: Option<Value>,
    /// `{reason?, cascadeFrom?, cancelledAt}` of a cancelled run.
    pub cancellation: Option<Value>,
    /// The agent's current plan.
    pub plan: Option<Value>,
    /// The agent's current todo list.
    pub todos: Option<Value>,
    /// Recorded time of the last event applied.
    pub updated_at: DateTime<Utc>,
    /// Log position of the last event applied.
    pub updated_position: i64,
}

const OPERATION_SELECT: &str = "SELECT id, user_id, kind, status, phase, completion_reason, agent_id, \
    agent_config_version, model, provider, topic_id, thread_id, task_id, group_id, parent_operation_id, background, \
    run_trigger, instruction, step_count, max_steps, cost_limit_micros, input_tokens, output_tokens, total_tokens, \
    cost_micros, tool_calls, human_waiting_ms, pending_card, awaiting, child_count, lease_worker_id, \
    lease_expires_at, created_at, started_at, completed_at, duration_ms, result, error, interruption, cancellation, \
    plan, todos, updated_at, updated_position FROM operations";

impl OperationRow {
    fn from_row(r: &Row) -> Self {
        let lease = match (r.text(30), r.time(31)) {
            (Some(worker_id), Some(expires_at)) => Some(LeaseRow { worker_id, expires_at }),
            _ => None,
        };
        Self {
            id: r.text_or_empty(0),
            user_id: r.text_or_empty(1),
            kind: r.text_or_empty(2),
            status: r.text_or_empty(3),
            phase: r.text(4),
            completion_reason: r.text(5),
            agent_id: r.text_or_empty(6),
            agent_config_version: r.int_or_zero(7),
            model: r.text(8),
            provider: r.text(9),
            topic_id: r.text(10),
            thread_id: r.text(11),
            task_id: r.text(12),
            group_id: r.text(13),
            parent_operation_id: r.text(14),
            background: r.flag(15),
            trigger: r.text(16),
            instruction: r.text(17),
            step_count: r.int_or_zero(18),
            max_steps: r.i64(19),
            cost_limit_micros: r.i64(20),
            input_tokens: r.i64(21),
            output_tokens: r.i64(22),
            total_tokens: r.i64(23),
            cost_micros: r.i64(24),
            tool_calls: r.i64(25),
            human_waiting_ms: r.i64(26),
            pending_card: r.json_value(27),
            awaiting: r.json_as(28).unwrap_or_default(),
            child_count: r.int_or_zero(29),
            lease,
            created_at: r.time_or_epoch(32),
            started_at: r.time(33),
            completed_at: r.time(34),
            duration_ms: r.i64(35),
            result: r.text(36),
            error: r.json_value(37),
            interruption: r.json_value(38),
            cancellation: r.json_value(39),
            plan: r.json_value(40),
            todos: r.json_value(41),
            updated_at: r.time_or_epoch(42),
            updated_position: r.int_or_zero(43),
        }
    }

    fn cursor(&self) -> Cursor {
        Cursor::new(self.created_at.timestamp_micros(), self.id.clone())
    }
}

/// Which operations to list (every field narrows; `None` = any).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OperationFilter {
    /// Status.
    pub status: Option<OperationStatus>,
    /// Kind.
    pub kind: Option<OperationKind>,
    /// Agent.
    pub agent_id: Option<String>,
    /// Model the run used.
    pub model: Option<String>,
    /// Conversation.
    pub topic_id: Option<String>,
    /// Task.
    pub task_id: Option<String>,
    /// Chat group.
    pub group_id: Option<String>,
    /// Parent operation (its children).
    pub parent_operation_id: Option<String>,
    /// Created at or after.
    pub created_from: Option<DateTime<Utc>>,
    /// Created before.
    pub created_to: Option<DateTime<Utc>>,
}

/// `owner`'s operation `id`; `None` when they hold none by that id.
pub async fn get(db: &ReadDb, owner: &str, id: &str) -> Result<Option<OperationRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("user_id", Some(owner));
    w.eq("id", Some(id));
    let rows = db.fetch(&format!("{OPERATION_SELECT} {}", w.sql()), w.args()).await?;
    Ok(rows.first().map(OperationRow::from_row))
}

/// Operations matching `filter`, newest first (by creation time, then id), after `after`.
pub async fn list(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &OperationFilter,
    page: &PageRequest,
) -> Result<Page<OperationRow>, ProjectionError> {
    list_ordered(db, owner, filter, page, Order::Desc).await
}

/// The runs a worker of `agent_ids` can claim now among `owner`'s (everyone's when `None`):
/// idle or running, no lease, of one of `kinds` (as the read model spells them); oldest first
/// (by creation time, then id), at most `limit`.
pub async fn claimable(
    db: &ReadDb,
    owner: Option<&str>,
    agent_ids: &[String],
    kinds: &[String],
    limit: usize,
) -> Result<Vec<OperationRow>, ProjectionError> {
    if agent_ids.is_empty() || kinds.is_empty() {
        return Ok(Vec::new());
    }
    let mut w = Conditions::default();
    w.owner("user_id", owner);
    let agents: Vec<String> = agent_ids.iter().map(|a| w.bind(a.as_str())).collect();
    w.push(format!("agent_id IN ({})", agents.join(", ")));
    let kinds: Vec<String> = kinds.iter().map(|k| w.bind(k.as_str())).collect();
    w.push(format!("kind IN ({})", kinds.join(", ")));
    w.push("status IN ('idle', 'running')".into());
    w.push("(lease_worker_id IS NULL OR lease_expires_at IS NULL)".into());
    let sql = format!("{OPERATION_SELECT} {} ORDER BY created_at, id LIMIT {limit}", w.sql());
    Ok(db.fetch(&sql, w.args()).await?.iter().map(OperationRow::from_row).collect())
}

/// The child operations of `owner`'s `parent_id` (its owner's too), oldest first.
pub async fn children(
    db: &ReadDb,
    owner: &str,
    parent_id: &str,
    page: &PageRequest,
) -> Result<Page<OperationRow>, ProjectionError> {
    let filter = OperationFilter { parent_operation_id: Some(parent_id.to_string()), ..Default::default() };
    list_ordered(db, Some(owner), &filter, page, Order::Asc).await
}

async fn list_ordered(
    db: &ReadDb,
    owner: Option<&str>,
    filter: &OperationFilter,
    page: &PageRequest,
    order: Order,
) -> Result<Page<OperationRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.owner("user_id", owner);
    w.eq("status", filter.status.map(OperationStatus::as_str));
    w.eq("kind", filter.kind.as_ref().map(wire_name).transpose()?);
    w.eq("agent_id", filter.agent_id.as_deref());
    w.eq("model", filter.model.as_deref());
    w.eq("topic_id", filter.topic_id.as_deref());
    w.eq("task_id", filter.task_id.as_deref());
    w.eq("group_id", filter.group_id.as_deref());
    w.eq("parent_operation_id", filter.parent_operation_id.as_deref());
    w.at_least("created_at", filter.created_from.map(|t| t.timestamp_micros()));
    w.below("created_at", filter.created_to.map(|t| t.timestamp_micros()));
    let keyset = Keyset { sort: "created_at", id: "id", order };
    keyset.page(db, OPERATION_SELECT, w, page, |r| Ok(OperationRow::from_row(r)), OperationRow::cursor).await
}

/// One recorded step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationStepRow {
    /// The operation.
    pub operation_id: String,
    /// 1-based index in the run.
    pub step_index: i64,
    /// Its phase.
    pub phase: String,
    /// `[{id, name, status?}]`.
    pub tool_calls: Value,
    /// How many tool calls.
    pub tool_call_count: i64,
    /// Prompt tokens (absent: not measured).
    pub input_tokens: Option<i64>,
    /// Completion tokens.
    pub output_tokens: Option<i64>,
    /// All tokens.
    pub total_tokens: Option<i64>,
    /// Cost, micro-units.
    pub cost_micros: Option<i64>,
    /// When.
    pub at: DateTime<Utc>,
    /// Log position of the step's event.
    pub position: i64,
}

/// The steps of `owner`'s operation `operation_id`, in order, after `after`.
pub async fn steps(
    db: &ReadDb,
    owner: &str,
    operation_id: &str,
    page: &PageRequest,
) -> Result<Page<OperationStepRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.eq("user_id", Some(owner));
    w.eq("operation_id", Some(operation_id));
    let select = "SELECT operation_id, step_index, phase, tool_calls, tool_call_count, input_tokens, output_tokens, \
         total_tokens, cost_micros, at, position FROM operation_steps";
    let read = |r: &Row| {
        Ok(OperationStepRow {
            operation_id: r.text_or_empty(0),
            step_index: r.int_or_zero(1),
            phase: r.text_or_empty(2),
            tool_calls: r.json_value(3).unwrap_or(Value::Array(Vec::new())),
            tool_call_count: r.int_or_zero(4),
            input_tokens: r.i64(5),
            output_tokens: r.i64(6),
            total_tokens: r.i64(7),
            cost_micros: r.i64(8),
            at: r.time_or_epoch(9),
            position: r.int_or_zero(10),
        })
    };
    let keyset = Keyset { sort: "step_index", id: "operation_id", order: Order::Asc };
    keyset
        .page(db, select, w, page, read, |s: &OperationStepRow| Cursor::new(s.step_index, s.operation_id.clone()))
        .await
}

/// A human-in-the-loop card an operation asked, and how it closed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationCardRow {
    /// The operation.
    pub operation_id: String,
    /// The operation's owner.
    pub user_id: String,
    /// Log position of the question (identifies the asking).
    pub asked_position: i64,
    /// The card's id.
    pub card_id: String,
    /// choice, input, confirm or form.
    pub kind: String,
    /// The question.
    pub title: String,
    /// The whole card.
    pub card: Value,
    /// When it was asked.
    pub asked_at: DateTime<Utc>,
    /// When its timeout fires.
    pub deadline: Option<DateTime<Utc>>,
    /// pending, answered, timed_out or abandoned (the run ended first).
    pub outcome: String,
    /// The answer.
    pub answer: Option<Value>,
    /// What the timeout did.
    pub on_timeout: Option<Value>,
    /// How long it waited, ms.
    pub waited_ms: Option<i64>,
    /// When it closed.
    pub closed_at: Option<DateTime<Utc>>,
}

const CARD_SELECT: &str = "SELECT c.operation_id, c.asked_position, c.card_id, c.kind, c.title, c.card, c.asked_at, \
    c.deadline, c.outcome, c.answer, c.on_timeout, c.waited_ms, c.closed_at, c.user_id FROM operation_cards c";

fn card_row(r: &Row) -> OperationCardRow {
    OperationCardRow {
        operation_id: r.text_or_empty(0),
        asked_position: r.int_or_zero(1),
        card_id: r.text_or_empty(2),
        kind: r.text_or_empty(3),
        title: r.text_or_empty(4),
        card: r.json_value(5).unwrap_or(Value::Null),
        asked_at: r.time_or_epoch(6),
        deadline: r.time(7),
        outcome: r.text_or_empty(8),
        answer: r.json_value(9),
        on_timeout: r.json_value(10),
        waited_ms: r.i64(11),
        closed_at: r.time(12),
        user_id: r.text_or_empty(13),
    }
}

/// Every card `owner`'s operation `operation_id` asked, in order.
pub async fn cards(db: &ReadDb, owner: &str, operation_id: &str) -> Result<Vec<OperationCardRow>, ProjectionError> {
    let sql = format!("{CARD_SELECT} WHERE c.user_id = $1 AND c.operation_id = $2 ORDER BY c.asked_position");
    Ok(db.fetch(&sql, &[owner.into(), operation_id.into()]).await?.iter().map(card_row).collect())
}

/// Cards waiting for an answer (the owner's, or everyone's for an admin), oldest first.
pub async fn pending_cards(
    db: &ReadDb,
    owner: Option<&str>,
    page: &PageRequest,
) -> Result<Page<OperationCardRow>, ProjectionError> {
    let mut w = Conditions::default();
    w.push("c.outcome = 'pending'".into());
    w.owner("c.user_id", owner);
    let select = CARD_SELECT;
    let keyset = Keyset { sort: "c.asked_position", id: "c.operation_id", order: Order::Asc };
    keyset
        .page(
            db,
            select,
            w,
            page,
            |r| Ok(card_row(r)),
            |c: &OperationCardRow| Cursor::new(c.asked_position, c.operation_id.clone()),
        )
        .await
}

/// An artifact a run produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationArtifactRow {
    /// The operation.
    pub operation_id: String,
    /// Its id.
    pub artifact_id: String,
    /// Title.
    pub title: String,
    /// Kind (`document`, `image`, `code`, …).
    pub kind: String,
    /// Size, when known.
    pub size_bytes: Option<i64>,
    /// Where the content lives.
    pub content_ref: String,
    /// Log position of its event.
    pub position: i64,
}

/// The artifacts of an operation, in the order recorded.
pub async fn artifacts(
    db: &ReadDb,
    owner: &str,
    operation_id: &str,
) -> Result<Vec<OperationArtifactRow>, ProjectionError> {
    let sql = "SELECT operation_id, artifact_id, title, kind, size_bytes, content_ref, position \
               FROM operation_artifacts WHERE user_id = $1 AND operation_id = $2 ORDER BY position";
    Ok(db
        .fetch(sql, &[owner.into(), operation_id.into()])
        .await?
        .iter()
        .map(|r| OperationArtifactRow {
            operation_id: r.text_or_empty(0),
            artifact_id: r.text_or_empty(1),
            title: r.text_or_empty(2),
            kind: r.text_or_empty(3),
            size_bytes: r.i64(4),
            content_ref: r.text_or_empty(5),
            position: r.int_or_zero(6),
        })
        .collect())
}

/// A review score of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationScoreRow {
    /// The operation.
    pub operation_id: String,
    /// 0, 1, 2 … in the order recorded.
    pub seq: i64,
    /// The rubric.
    pub rubric_id: String,
    /// 0 to 100.
    pub score: i64,
    /// Passed.
    pub passed: bool,
    /// The reviewer's reason.
    pub reason: Option<String>,
    /// Log position of its event.
    pub position: i64,
}

/// The review scores of an operation, in the order recorded.
pub async fn scores(db: &ReadDb, owner: &str, operation_id: &str) -> Result<Vec<OperationScoreRow>, ProjectionError> {
    let sql = "SELECT operation_id, seq, rubric_id, score, passed, reason, position \
               FROM operation_scores WHERE user_id = $1 AND operation_id = $2 ORDER BY seq";
    Ok(db
        .fetch(sql, &[owner.into(), operation_id.into()])
        .await?
        .iter()
        .map(|r| OperationScoreRow {
            operation_id: r.text_or_empty(0),
            seq: r.int_or_zero(1),
            rubric_id: r.text_or_empty(2),
            score: r.int_or_zero(3),
            passed: r.flag(4),
            reason: r.text(5),
            position: r.int_or_zero(6),
        })
        .collect())
}

/// A result delivered to a waiting run (an async tool's or a child operation's).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationAsyncResultRow {
    /// The receiving operation.
    pub operation_id: String,
    /// The awaited key (a tool-call id or a child operation id).
    pub key: String,
    /// Whether it succeeded.
    pub success: bool,
    /// The result (at most 32,000 characters).
    pub result: Option<String>,
    /// Whether it was cut.
    pub truncated: bool,
    /// Its length before cutting.
    pub original_chars: Option<i64>,
    /// It completed the barrier and resumed the run.
    pub resumed: bool,
    /// Log position of its event.
    pub position: i64,
}

/// The results delivered to an operation, in order.
pub async fn async_results(
    db: &ReadDb,
    owner: &str,
    operation_id: &str,
) -> Result<Vec<OperationAsyncResultRow>, ProjectionError> {
    let sql = "SELECT operation_id, result_key, success, result, truncated, original_chars, resumed, position \
               FROM operation_async_results WHERE user_id = $1 AND operation_id = $2 ORDER BY position";
    Ok(db
        .fetch(sql, &[owner.into(), operation_id.into()])
        .await?
        .iter()
        .map(|r| OperationAsyncResultRow {
            operation_id: r.text_or_empty(0),
            key: r.text_or_empty(1),
            success: r.flag(2),
            result: r.text(3),
            truncated: r.flag(4),
            original_chars: r.i64(5),
            resumed: r.flag(6),
            position: r.int_or_zero(7),
        })
        .collect())
}

/// Pending cards whose deadline passed at `now`, earliest deadline first: `(owner,
/// operationId, cardId)`, the card-timeout pass's candidates.
pub async fn due_cards(db: &ReadDb, now: DateTime<Utc>) -> Result<Vec<(String, String, String)>, ProjectionError> {
    let rows = db
        .fetch(
            "SELECT user_id, operation_id, card_id FROM operation_cards WHERE outcome = 'pending' \
             AND deadline IS NOT NULL AND deadline <= $1 ORDER BY deadline, user_id, operation_id",
            &[now.timestamp_micros().into()],
        )
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.str(0)?.to_string(), r.str(1)?.to_string(), r.str(2)?.to_string())))
        .collect())
}

/// Running operations whose lease expired at or before `now`, soonest expired first, as
/// `(owner, operationId)` (the lease reaper's candidates; each operation's own state still decides).
pub async fn expired_leases(db: &ReadDb, now: DateTime<Utc>) -> Result<Vec<(String, String)>, ProjectionError> {
    let rows = db
        .fetch(
            "SELECT user_id, id FROM operations WHERE status = 'running' AND lease_expires_at IS NOT NULL \
             AND lease_expires_at <= $1 ORDER BY lease_expires_at, user_id, id",
            &[now.timestamp_micros().into()],
        )
        .await?;
    Ok(rows.iter().filter_map(|r| Some((r.str(0)?.to_string(), r.str(1)?.to_string()))).collect())
}
