//! A SQLite bulk load's batch applied by every projection at once, in one transaction
//! ([`RunnerOptions::bulk`](crate::RunnerOptions::bulk)).
//!
//! SQLite writes one statement at a time, but a projection's `apply` is mostly its own work —
//! decoding, folding, building rows — between statements. Applied one after another, a
//! rebuild keeps one core busy applying while the other only reads the log. Here each
//! projection applies in a task of its own, writing through a share of the batch's one
//! transaction ([`SharedSqliteTx`](crate::db::SharedSqliteTx)): their statements take turns,
//! their folding runs on both cores. Each projection writes only its own tables, so the turns'
//! order does not change a row, and the batch commits with every checkpoint at once, as one
//! applied in turn would.

use std::{sync::Arc, time::Instant};

use crate::{
    db::ReadTx,
    decoding::DecodedEvent,
    error::ProjectionError,
    projection::Projection,
    runner_state::{AbortOnDrop, micros_since},
};

/// What each projection applied: its index, its events and its time in `apply` (µs).
pub(crate) type Applied = Vec<(usize, u64, u64)>;

/// Apply each `(projection index, events)` of `work` at once through shares of `tx`, and give
/// `tx` back: with what each applied, or with `None` when one of them failed (roll it back and
/// apply the batch again, one projection at a time, to find which).
pub(crate) async fn apply(
    tx: ReadTx,
    projections: &[Arc<dyn Projection>],
    work: Vec<(usize, Vec<Arc<DecodedEvent>>)>,
) -> Result<(ReadTx, Option<Applied>), ProjectionError> {
    let Ok(shared) = tx.share() else {
        return Err(ProjectionError::Invalid(
            "only a SQLite transaction is applied by every projection at once".into(),
        ));
    };
    let mut tasks = Vec::with_capacity(work.len());
    for (i, events) in work {
        let p = Arc::clone(&projections[i]);
        let mut share = ReadTx::Shared(shared.clone());
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let events: Vec<&DecodedEvent> = events.iter().map(|e| &**e).collect();
            p.apply(&mut share, &events).await.map(|()| (events.len() as u64, micros_since(started)))
        });
        tasks.push((i, AbortOnDrop(task)));
    }
    let mut applied = Vec::with_capacity(tasks.len());
    let mut failed = false;
    for (i, mut task) in tasks {
        match (&mut task.0).await {
            Ok(Ok((events, micros))) => applied.push((i, events, micros)),
            Ok(Err(e)) => {
                tracing::debug!(projection = projections[i].name(), error = %e, "a projection failed; applying the batch again, isolated");
                failed = true;
            }
            Err(join) => {
                tracing::debug!(projection = projections[i].name(), error = %join, "a projection's task ended; applying the batch again, isolated");
                failed = true;
            }
        }
    }
    // Every task has ended, and with it its share.
    let tx = ReadTx::Sqlite(shared.into_tx()?);
    Ok((tx, (!failed).then_some(applied)))
}
