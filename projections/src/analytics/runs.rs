//! What analytics knows of each run until (and after) it is counted (`analytics_runs`), and
//! how one operation event changes it: the run's count comes out of its terminal event.

use std::collections::HashMap;

use agentlog_domain::operations::{OperationEvent, OperationStatus};
use agentlog_domain::values::Usage;

use crate::{
    db::{ReadTx, Row, SqlValue},
    decoding::OwnedKey,
    error::ProjectionError,
    fold::{int_opt, micros, owned_key_values, wire_name},
    read::RowExt,
};

/// What analytics knows of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Run {
    pub(super) user_id: String,
    pub(super) agent_id: String,
    pub(super) model: String,
    pub(super) provider: String,
    pub(super) created_at: i64,
    pub(super) started_at: Option<i64>,
    pub(super) usage: Usage,
    pub(super) status: Option<String>,
    pub(super) completion_reason: Option<String>,
    pub(super) finished_at: Option<i64>,
    pub(super) duration_ms: Option<i64>,
    pub(super) updated_position: i64,
}

pub(super) const RUN_COLUMNS: [&str; 16] = [
    "operation_id",
    "user_id",
    "agent_id",
    "model",
    "provider",
    "created_at",
    "started_at",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_micros",
    "status",
    "completion_reason",
    "finished_at",
    "duration_ms",
    "updated_position",
];

pub(super) fn measure(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

/// The usage stored in four columns from `first` on: input, output and total tokens, cost.
pub(super) fn usage_at(r: &Row, first: usize) -> Usage {
    Usage {
        input_tokens: measure(r.i64(first)),
        output_tokens: measure(r.i64(first + 1)),
        total_tokens: measure(r.i64(first + 2)),
        cost_micros: measure(r.i64(first + 3)),
    }
}

impl Run {
    pub(super) fn from_row(r: &Row) -> Self {
        Self {
            user_id: r.text_or_empty(1),
            agent_id: r.text_or_empty(2),
            model: r.text_or_empty(3),
            provider: r.text_or_empty(4),
            created_at: r.int_or_zero(5),
            started_at: r.i64(6),
            usage: usage_at(r, 7),
            status: r.text(11),
            completion_reason: r.text(12),
            finished_at: r.i64(13),
            duration_ms: r.i64(14),
            updated_position: r.int_or_zero(15),
        }
    }

    pub(super) fn row(&self, id: &str) -> Vec<SqlValue> {
        vec![
            id.into(),
            self.user_id.as_str().into(),
            self.agent_id.as_str().into(),
            self.model.as_str().into(),
            self.provider.as_str().into(),
            self.created_at.into(),
            self.started_at.into(),
            int_opt(self.usage.input_tokens),
            int_opt(self.usage.output_tokens),
            int_opt(self.usage.total_tokens),
            int_opt(self.usage.cost_micros),
            self.status.as_deref().into(),
            self.completion_reason.as_deref().into(),
            self.finished_at.into(),
            self.duration_ms.into(),
            self.updated_position.into(),
        ]
    }
}

/// A run that finished in this batch, to be counted.
pub(super) struct Finished {
    pub(super) run: Run,
    pub(super) status: String,
    pub(super) reason: String,
    pub(super) position: i64,
}

/// Apply one event to a run; returns the run's count when the event ends it.
pub(super) fn apply(run: &mut Run, event: &OperationEvent, position: i64) -> Result<Option<Finished>, ProjectionError> {
    let (status, reason, at) = match event {
        OperationEvent::Created(e) => {
            *run = Run {
                user_id: e.user_id.clone(),
                agent_id: e.spec.agent.agent_id.clone(),
                model: e.spec.agent.model.clone().unwrap_or_default(),
                provider: e.spec.agent.provider.clone().unwrap_or_default(),
                created_at: micros(e.at),
                ..Run::default()
            };
            run.updated_position = position;
            return Ok(None);
        }
        OperationEvent::Started(e) => {
            run.started_at = Some(micros(e.at));
            run.updated_position = position;
            return Ok(None);
        }
        OperationEvent::StepRecorded(e) => {
            run.usage = run.usage.plus(e.usage);
            run.updated_position = position;
            return Ok(None);
        }
        OperationEvent::Completed(e) => (OperationStatus::Done, wire_name(&e.reason)?, e.at),
        OperationEvent::Failed(e) => (OperationStatus::Error, "error".to_string(), e.at),
        OperationEvent::Interrupted(e) => (OperationStatus::Interrupted, "interrupted".to_string(), e.at),
        OperationEvent::Cancelled(e) => (OperationStatus::Cancelled, "cancelled".to_string(), e.at),
        _ => return Ok(None),
    };
    if run.finished_at.is_some() || run.agent_id.is_empty() {
        // Counted already (the domain ends a run once), or never created: nothing to count.
        return Ok(None);
    }
    let finished_at = micros(at);
    run.finished_at = Some(finished_at);
    run.duration_ms = run.started_at.map(|s| (finished_at - s).max(0) / 1_000);
    run.status = Some(status.as_str().to_string());
    run.completion_reason = Some(reason.clone());
    run.updated_position = position;
    Ok(Some(Finished { run: run.clone(), status: status.as_str().to_string(), reason, position }))
}

/// Does analytics read this event type?
pub(super) fn is_fed_by(event_type: &str) -> bool {
    matches!(
        event_type,
        "operation.created"
            | "operation.started"
            | "operation.step_recorded"
            | "operation.completed"
            | "operation.failed"
            | "operation.interrupted"
            | "operation.cancelled"
    )
}

/// The stored runs of these `(owner, operation)` keys, looked up by the whole key (see
/// [`load_owned_states`](crate::fold::load_owned_states)).
pub(super) async fn load_runs(tx: &mut ReadTx, keys: &[OwnedKey]) -> Result<HashMap<OwnedKey, Run>, ProjectionError> {
    let mut out = HashMap::with_capacity(keys.len());
    let select = format!("SELECT {} FROM analytics_runs", RUN_COLUMNS.join(", "));
    for row in tx.fetch_keyed(&select, &["user_id", "operation_id"], &owned_key_values(keys)).await? {
        out.insert((row.text_or_empty(1), row.text_or_empty(0)), Run::from_row(&row));
    }
    Ok(out)
}
