//! A batch applied by every projection at once, each in its own transaction (PostgreSQL bulk
//! loads, [`RunnerOptions::bulk`](crate::RunnerOptions::bulk)).
//!
//! The rule of the runner holds per projection: its transaction locks its own checkpoint row
//! (`FOR UPDATE`), applies only the events after the committed position, and moves that
//! position, so its rows and its checkpoint commit together and another instance applying the
//! same batch finds it applied. What changes is that projections no longer wait for each other:
//! PostgreSQL writes one projection's rows while this process decodes and folds another's.

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
    let Some(last) = batch.last().map(|e| e.position) else { return Ok(()) };
    let positions: Vec<(i64, bool)> = {
        let state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
        state.iter().map(|s| (s.position, s.failed.is_some())).collect()
    };
    let shared: Arc<[Arc<DecodedEvent>]> = batch.iter().cloned().collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, p) in inner.projections.iter().enumerate() {
        let (in_memory, failed) = positions[i];
        if failed || in_memory >= last {
            continue;
        }
        let task = tokio::spawn(apply_alone(inner.db.clone(), Arc::clone(p), in_memory, Arc::clone(&shared), last));
        tasks.push((i, AbortOnDrop(task)));
    }
    let mut outcomes = Vec::with_capacity(tasks.len());
    let mut first_error = None;
    for (i, mut task) in tasks {
        match (&mut task.0).await {
            Ok(Ok(outcome)) => outcomes.push((i, outcome)),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) => {
                first_error.get_or_insert(ProjectionError::Invalid(format!("a projection's task ended: {join}")));
            }
        }
    }
    // What committed is recorded in memory even when another projection's transaction failed:
    // the in-memory position never runs ahead of a committed checkpoint, nor far behind one.
    let mut state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    for (i, outcome) in outcomes {
        match outcome {
            Outcome::Advanced { events, micros } => {
                state[i].position = last;
                state[i].applied_events += events;
                state[i].apply_micros += micros;
            }
            Outcome::FoundAhead(position) => state[i].position = position,
            Outcome::Failed(reason) => state[i].failed = Some(reason),
        }
    }
    {
        let mut t = inner.timings.lock().unwrap_or_else(|p| p.into_inner());
        t.batches += 1;
        // Applying and committing overlap here; the batch's wall time is counted as committing.
        t.commit_micros += micros_since(started);
    }
    publish(inner, &state);
    drop(state);
    first_error.map_or(Ok(()), Err)
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
