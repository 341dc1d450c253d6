//! One operation's fold: the domain's [`Operation`] state (folded with its own `evolve`, so the
//! read model is exactly what a replay gives) plus the few facts the state does not keep, and
//! the rows of the side tables each event produces.

use agentlog_domain::{
    aggregate::Aggregate,
    envelope::RecordedEvent,
    operations::{Operation, OperationEvent, PendingCard},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::rows::{self, SideRows};
use crate::{error::ProjectionError, fold::micros};

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
        id: &str,
        recorded: &RecordedEvent,
        event: OperationEvent,
        side: &mut SideRows,
    ) -> Result<(), ProjectionError> {
        let position = recorded.position;
        match &event {
            OperationEvent::StepRecorded(e) => {
                side.steps.put((id.to_string(), e.step_index), rows::step(id, e, position)?)
            }
            OperationEvent::ArtifactRecorded(e) => side
                .artifacts
                .put((id.to_string(), e.artifact.artifact_id.clone()), rows::artifact(id, &e.artifact, position)),
            OperationEvent::ScoreRecorded(e) => {
                let seq = self.op.scores.len() as i64;
                side.scores.put((id.to_string(), seq), rows::score(id, seq, &e.score, position));
            }
            OperationEvent::AsyncResultReceived(e) => {
                side.async_results.put((id.to_string(), e.key.clone()), rows::async_result(id, e, position))
            }
            OperationEvent::HumanAsked(e) => {
                let pending = PendingCard { card: e.card.clone(), asked_at: e.at, deadline: e.deadline };
                side.cards.put((id.to_string(), position), rows::card(id, position, &pending, &rows::CardClose::Open)?);
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
        self.op = std::mem::take(&mut self.op).evolve(&event);
        self.updated_at = micros(recorded.recorded_at);
        self.updated_position = position;
        Ok(())
    }

    /// Close the open card (if any) with `how`.
    fn close_card(&mut self, id: &str, how: rows::CardClose<'_>, side: &mut SideRows) -> Result<(), ProjectionError> {
        if !self.card_open {
            return Ok(());
        }
        if let (Some(position), Some(pending)) = (self.card_position, &self.op.pending_card) {
            side.cards.put((id.to_string(), position), rows::card(id, position, pending, &how)?);
        }
        self.card_open = false;
        Ok(())
    }
}
