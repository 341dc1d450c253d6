//! A batch applied by every projection at once, each in its own transaction (PostgreSQL bulk
//! loads, [`RunnerOptions::bulk`](crate::RunnerOptions::bulk)).
//!
//! The rule of the runner holds per projection: its transaction locks its own checkpoint row
//! (`FOR UPDATE`), applies only the events after the committed position, and moves that
//! position, so its rows and its checkpoint commit together and another instance applying the
//! same batch finds it applied. What changes is that projections no longer wait for each other:
//! PostgreSQL writes one projection's rows while this process decodes and folds another's, and
//! a projection done with a batch starts the next while a slower one is still on it ([`Lanes`]).

use std::{sync::Arc, time::Instant};

use crate::{
    db::ReadDb,
    decoding::DecodedEvent,
    error::ProjectionError,
    projection::Projection,
    runner_state::{AbortOnDrop, Inner, lock_checkpoints, micros_since, newer_version, publish, write_checkpoint},
};

/// What one projection did with a batch.
enum Outcome {
    /// Applied (its events and the time in `apply`) and its checkpoint moved to the batch's end.
    Advanced { events: u64, micros: u64 },
    /// Another process had applied it already, up to this position.
    FoundAhead(i64),
    /// Its `apply` failed, or the database holds a newer version: it stops here.
    Failed(String),
}

/// Apply `batch` to every healthy projection behind its end, each in its own transaction.
pub(crate) async fn apply_batch(inner: &Inner, batch: &[Arc<DecodedEvent>]) -> Result<(), ProjectionError> {
    let mut lanes = Lanes::default();
    let pushed = lanes.push(inner, batch).await;
    let finished = lanes.finish(inner).await;
    pushed.and(finished)
}

/// Each projection's batch in flight, at most one per projection. A projection goes on to the
/// next batch as soon as its own last one committed, without waiting for the others: the
/// slowest read model no longer holds the rest at every batch's end (it bounds the load alone),
/// and at most two batches are held in memory.
#[derive(Default)]
pub(crate) struct Lanes {
    /// Per projection: its task and the end of the batch it applies.
    in_flight: Vec<Option<(Task, i64)>>,
}

/// One projection's share of a batch, running.
type Task = AbortOnDrop<Result<Outcome, ProjectionError>>;

impl Lanes {
    /// Start `batch` for every healthy projection behind its end, each once its previous batch
    /// has committed (those already done first). After a failure nothing more starts: the
    /// batches in flight are waited for and the first error is returned.
    pub(crate) async fn push(&mut self, inner: &Inner, batch: &[Arc<DecodedEvent>]) -> Result<(), ProjectionError> {
        let Some(last) = batch.last().map(|e| e.position) else { return Ok(()) };
        let started = Instant::now();
        let n = inner.projections.len();
        self.in_flight.resize_with(n, || None);
        let shared: Arc<[Arc<DecodedEvent>]> = batch.iter().cloned().collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| self.in_flight[i].as_ref().is_some_and(|(task, _)| !task.0.is_finished()));
        let mut first_error = None;
        for i in order {
            if let Err(e) = self.settle(inner, i).await {
                first_error.get_or_insert(e);
            }
            if first_error.is_some() {
                continue;
            }
            let (in_memory, failed) = {
                let state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
                (state[i].position, state[i].failed.is_some())
            };
            if failed || in_memory >= last {
                continue;
            }
            let p = Arc::clone(&inner.projections[i]);
            let task = tokio::spawn(apply_alone(inner.db.clone(), p, in_memory, Arc::clone(&shared), last));
            self.in_flight[i] = Some((AbortOnDrop(task), last));
        }
        count(inner, started, 1);
        match first_error {
            Some(e) => {
                // Recorded what committed before answering.
                let _ = self.finish(inner).await;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Wait for every batch in flight and record what each did; the first error, if any.
    pub(crate) async fn finish(&mut self, inner: &Inner) -> Result<(), ProjectionError> {
        let started = Instant::now();
        let mut first_error = None;
        for i in 0..self.in_flight.len() {
            if let Err(e) = self.settle(inner, i).await {
                first_error.get_or_insert(e);
            }
        }
        count(inner, started, 0);
        first_error.map_or(Ok(()), Err)
    }

    /// Wait for projection `i`'s batch in flight, if any, and record its outcome in memory
    /// (what committed is recorded even when another projection's transaction failed: the
    /// in-memory position never runs ahead of a committed checkpoint, nor far behind one).
    async fn settle(&mut self, inner: &Inner, i: usize) -> Result<(), ProjectionError> {
        let Some((mut task, last)) = self.in_flight.get_mut(i).and_then(Option::take) else { return Ok(()) };
        let outcome = match (&mut task.0).await {
            Ok(outcome) => outcome?,
            Err(join) => return Err(ProjectionError::Invalid(format!("a projection's task ended: {join}"))),
        };
        let mut state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Outcome::Advanced { events, micros } => {
                state[i].position = last;
                state[i].applied_events += events;
                state[i].apply_micros += micros;
            }
            Outcome::FoundAhead(position) => state[i].position = position,
            Outcome::Failed(reason) => state[i].failed = Some(reason),
        }
        publish(inner, &state);
        Ok(())
    }
}

/// Time spent waiting on the projections' transactions, and batches started. Applying and
/// committing overlap here: the time is counted as committing.
fn count(inner: &Inner, started: Instant, batches: u64) {
    let mut t = inner.timings.lock().unwrap_or_else(|p| p.into_inner());
    t.batches += batches;
    t.commit_micros += micros_since(started);
}

/// One projection's share of a batch, in its own transaction with its checkpoint.
async fn apply_alone(
    db: ReadDb,
    p: Arc<dyn Projection>,
    in_memory: i64,
    batch: Arc<[Arc<DecodedEvent>]>,
    last: i64,
) -> Result<Outcome, ProjectionError> {
    let mut tx = db.begin().await?;
    let committed = lock_checkpoints(&mut tx, Some(p.name())).await?;
    let Some(c) = committed.first() else {
        return Err(ProjectionError::CheckpointMovedBack { name: p.name(), applied: in_memory, committed: 0 });
    };
    if c.version != i64::from(p.version()) {
        return Ok(Outcome::Failed(newer_version(c.version, i64::from(p.version()))));
    }
    if c.position < in_memory {
        return Err(ProjectionError::CheckpointMovedBack { name: p.name(), applied: in_memory, committed: c.position });
    }
    if c.position >= last {
        return Ok(Outcome::FoundAhead(c.position));
    }
    let checkpoint = c.position;
    let events: Vec<&DecodedEvent> =
        batch.iter().filter(|e| e.position > checkpoint && p.handles(&e.event_type)).map(|e| &**e).collect();
    let started = Instant::now();
    if !events.is_empty()
        && let Err(e) = p.apply(&mut tx, &events).await
    {
        // Nothing of this projection's share is committed; if the rollback fails the
        // connection is gone, and so is the transaction.
        tx.rollback().await?;
        if e.is_transient() {
            // The database's failure, not the batch's: the runner applies it again.
            return Err(e);
        }
        tracing::error!(projection = p.name(), error = %e, "projection failed; it stops here until rebuilt");
        return Ok(Outcome::Failed(e.to_string()));
    }
    let micros = micros_since(started);
    write_checkpoint(&mut tx, p.as_ref(), last).await?;
    tx.commit().await?;
    Ok(Outcome::Advanced { events: events.len() as u64, micros })
}
