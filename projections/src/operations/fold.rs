//! One operation's fold: the domain's [`Operation`] state (folded with its own `evolve`, so the
//! read model is exactly what a replay gives) plus the few facts the state does not keep, and
//! the rows of the side tables each event produces.

use agentlog_domain::{
    aggregate::Aggregate,
    envelope::RecordedEvent,
    operations::{CreateOperation, Operation, OperationEvent, PendingCard, event::StepRecorded},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::rows::{self, OPERATION_COLUMNS, SideRows, time_opt, usage_values};
use crate::db::SqlValue;
use crate::fold::{int, int_opt, json_opt, json_text, wire_name};
use crate::{budgets::spend::StepSpend, decoding::OwnedKey, error::ProjectionError, fold::micros};

/// How a cancelled operation was cancelled (the domain state only records that it was).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cancellation {
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The ancestor whose cancellation cascaded here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade_from: Option<String>,
    /// When.
    pub cancelled_at: DateTime<Utc>,
}

/// What the `operations.state` column holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OperationFold {
    /// The domain state.
    pub op: Operation,
    /// The result text of a completed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// How a cancelled run was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellation: Option<Cancellation>,
    /// Position of the `operation.human_asked` of the last card (the `operation_cards` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_position: Option<i64>,
    /// The last card is still open (neither answered nor timed out).
    #[serde(default)]
    pub card_open: bool,
    /// Recorded time of the last event, epoch µs.
    #[serde(default)]
    pub updated_at: i64,
    /// Position of the last event.
    #[serde(default)]
    pub updated_position: i64,
}

impl OperationFold {
    /// Apply one event: side-table rows first (they may need the state before the event), then
    /// the domain's `evolve`, then the facts the domain state does not keep.
    pub(crate) fn apply(
        &mut self,
        key: &OwnedKey,
        recorded: &RecordedEvent,
        event: &OperationEvent,
        side: &mut SideRows,
    ) -> Result<(), ProjectionError> {
        let position = recorded.position;
        let id = key;
        match event {
            OperationEvent::StepRecorded(e) => {
                side.steps.put((key.0.clone(), key.1.clone(), e.step_index), rows::step(id, e, position)?);
                if let Some(spec) = &self.op.spec {
                    side.spend.push(step_spend(key, spec, e, position));
                }
            }
            OperationEvent::ArtifactRecorded(e) => side.artifacts.put(
                (key.0.clone(), key.1.clone(), e.artifact.artifact_id.clone()),
                rows::artifact(id, &e.artifact, position),
            ),
            OperationEvent::ScoreRecorded(e) => {
                let seq = self.op.scores.len() as i64;
                side.scores.put((key.0.clone(), key.1.clone(), seq), rows::score(id, seq, &e.score, position));
            }
            OperationEvent::AsyncResultReceived(e) => side
                .async_results
                .put((key.0.clone(), key.1.clone(), e.key.clone()), rows::async_result(id, e, position)),
            OperationEvent::HumanAsked(e) => {
                let pending = PendingCard { card: e.card.clone(), asked_at: e.at, deadline: e.deadline };
                side.cards.put(
                    (key.0.clone(), key.1.clone(), position),
                    rows::card(id, position, &pending, &rows::CardClose::Open)?,
                );
                self.card_position = Some(position);
                self.card_open = true;
            }
            OperationEvent::HumanAnswered(e) => self.close_card(
                id,
                rows::CardClose::Answered { answer: &e.answer, waited_ms: e.waited_ms, at: e.at },
                side,
            )?,
            OperationEvent::HumanWaitTimedOut(e) => self.close_card(
                id,
                rows::CardClose::TimedOut { on_timeout: &e.on_timeout, waited_ms: e.waited_ms, at: e.at },
                side,
            )?,
            OperationEvent::Completed(e) => {
                self.result = e.result.clone();
                self.close_card(id, rows::CardClose::Abandoned { at: e.at }, side)?;
            }
            OperationEvent::Failed(e) => self.close_card(id, rows::CardClose::Abandoned { at: e.at }, side)?,
            OperationEvent::Interrupted(e) => self.close_card(id, rows::CardClose::Abandoned { at: e.at }, side)?,
            OperationEvent::Cancelled(e) => {
                self.cancellation = Some(Cancellation {
                    reason: e.reason.clone(),
                    cascade_from: e.cascade_from.clone(),
                    cancelled_at: e.at,
                });
                self.close_card(id, rows::CardClose::Abandoned { at: e.at }, side)?;
            }
            _ => {}
        }
        self.op = std::mem::take(&mut self.op).evolve(event);
        self.updated_at = micros(recorded.recorded_at);
        self.updated_position = position;
        Ok(())
    }

    /// Close the open card (if any) with `how`.
    fn close_card(
        &mut self,
        key: &OwnedKey,
        how: rows::CardClose<'_>,
        side: &mut SideRows,
    ) -> Result<(), ProjectionError> {
        if !self.card_open {
            return Ok(());
        }
        if let (Some(position), Some(pending)) = (self.card_position, &self.op.pending_card) {
            side.cards.put((key.0.clone(), key.1.clone(), position), rows::card(key, position, pending, &how)?);
        }
        self.card_open = false;
        Ok(())
    }
}

/// What step `e` of run `key` (with `spec`) spent, as the spend rollups count it: as the
/// `operation_steps` row holds it (an unmeasured figure counts 0; tokens are the total, else
/// input plus output).
fn step_spend(key: &OwnedKey, spec: &CreateOperation, e: &StepRecorded, position: i64) -> StepSpend {
    let signed = |n: Option<u64>| n.map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX));
    let usage = &e.usage;
    let tokens = match usage.total_tokens {
        Some(total) => signed(Some(total)),
        None => signed(usage.input_tokens).saturating_add(signed(usage.output_tokens)),
    };
    StepSpend {
        user_id: key.0.clone(),
        agent_id: spec.agent.agent_id.clone(),
        task_id: spec.task_id.clone(),
        group_id: spec.group_id.clone(),
        at: micros(e.at),
        cost_micros: signed(usage.cost_micros),
        tokens,
        position,
    }
}

/// The `operations` row of a fold (whose operation exists).
pub(crate) fn operation_row(id: &str, fold: &OperationFold) -> Result<Vec<SqlValue>, ProjectionError> {
    let op = &fold.op;
    let Some(spec) = &op.spec else {
        return Err(ProjectionError::Invalid(format!("operation {id} has events but was never created")));
    };
    let created_at = op.created_at.map_or(0, micros);
    let duration_ms = match (op.started_at, op.completed_at) {
        (Some(start), Some(end)) => SqlValue::Int((end - start).num_milliseconds().max(0)),
        _ => SqlValue::Null,
    };
    let awaiting: Vec<&String> = op.awaiting.iter().collect();
    let mut row = Vec::with_capacity(OPERATION_COLUMNS.len());
    row.extend([
        id.into(),
        op.user_id.as_str().into(),
        wire_name(&spec.kind)?.into(),
        op.status.as_str().into(),
        op.phase.as_ref().map(wire_name).transpose()?.into(),
        op.completion_reason.as_ref().map(wire_name).transpose()?.into(),
        spec.agent.agent_id.as_str().into(),
        int(spec.agent.config_version),
        spec.agent.model.as_deref().into(),
        spec.agent.provider.as_deref().into(),
        spec.topic_id.as_deref().into(),
        spec.thread_id.as_deref().into(),
        spec.task_id.as_deref().into(),
        spec.group_id.as_deref().into(),
        spec.parent_operation_id.as_deref().into(),
        spec.background.into(),
        spec.trigger.as_deref().into(),
        spec.instruction.as_deref().into(),
        op.step_count.into(),
        spec.max_steps.into(),
        int_opt(spec.cost_limit_micros),
    ]);
    row.extend(usage_values(&op.usage));
    row.extend([
        int_opt(op.tool_calls),
        int_opt(op.human_waiting_ms),
        json_opt(op.pending_card.as_ref())?,
        if awaiting.is_empty() { SqlValue::Null } else { json_text(&awaiting)?.into() },
        int(op.children.len() as u64),
        op.lease.as_ref().map(|l| l.worker_id.as_str()).into(),
        time_opt(op.lease.as_ref().map(|l| l.expires_at)),
        SqlValue::Int(created_at),
        time_opt(op.started_at),
        time_opt(op.completed_at),
        duration_ms,
        fold.result.as_deref().into(),
        json_opt(op.error.as_ref())?,
        json_opt(op.interruption.as_ref())?,
        json_opt(fold.cancellation.as_ref())?,
        json_opt(op.plan.as_ref())?,
        json_opt(op.todos.as_ref())?,
        SqlValue::Int(fold.updated_at),
        SqlValue::Int(fold.updated_position),
        json_text(fold)?.into(),
    ]);
    Ok(row)
}
