//! A batch of the log applied to every projection in one transaction with their checkpoints,
//! and a SQLite bulk load's transaction that spans several batches.
//!
//! A batch is first applied with no savepoints (each is a round trip on PostgreSQL, two per
//! projection). If a projection fails (a bug, data it cannot read: rare), that transaction is
//! rolled back and the batch applied again with a savepoint around each projection, so the
//! failing one alone stops and the others advance, as they would have.
//!
//! A SQLite bulk load ([`RunnerOptions::bulk`](crate::RunnerOptions::bulk)) applies every
//! projection of a batch at once ([`crate::together`]) and commits once per
//! [`commit_every`](crate::RunnerOptions::commit_every) events, not once per batch: each commit
//! writes every page the batch dirtied to the WAL, and the pages a rebuild dirties (the tables'
//! growing B-trees) are mostly the same from one batch to the next. What is in memory stays one
//! batch of events; what the transaction holds is SQLite's, in its page cache and the WAL. The
//! checkpoints move with the rows, in the same transaction, so a crash undoes both.

use std::{sync::Arc, time::Instant};

use crate::runner_state::{
    BULK_WAL_AUTOCHECKPOINT, CHECKPOINT_COLUMNS, Inner, lock_checkpoints, micros_since, newer_version, now_micros,
    publish, reload,
};
use crate::{
    db::{ReadTx, SqlValue},
    decoding::DecodedEvent,
    error::ProjectionError,
};

/// What one batch did, recorded in memory once its transaction has committed.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// The batch's last position.
    last: i64,
    /// Projections whose checkpoint moved to `last`.
    advanced: Vec<usize>,
    /// Projections another process had applied further, with where they stand.
    found_ahead: Vec<(usize, i64)>,
    /// Events applied and time in `apply` (µs) per projection.
    applied: Vec<(usize, u64, u64)>,
    /// Projections that stop here, and why.
    failures: Vec<(usize, String)>,
}

/// A SQLite bulk load's open transaction: the batches applied in it, recorded when it commits.
pub(crate) struct Spanning {
    tx: ReadTx,
    events: usize,
    pending: Vec<Applied>,
}

/// What applying a batch within a [`Spanning`] transaction came to.
pub(crate) enum Spanned {
    /// Applied; the transaction is still open (`Some`) or committed and recorded (`None`).
    Open(Option<Spanning>),
    /// A projection failed and the transaction, with every batch in it, was rolled back; the
    /// in-memory checkpoints are the committed ones again (apply from there, one batch per
    /// transaction).
    RolledBack,
}

/// Apply `batch` to every healthy projection from its committed checkpoint, in one transaction
/// with the checkpoints (see the module doc).
pub(crate) async fn apply_batch(inner: &Inner, batch: &[Arc<DecodedEvent>]) -> Result<(), ProjectionError> {
    if inner.options.bulk && inner.db.is_postgres() {
        return crate::parallel::apply_batch(inner, batch).await;
    }
    let Some(last) = batch.last().map(|e| e.position) else { return Ok(()) };
    let positions = positions(inner);
    let tx = begin(inner).await?;
    if let Some((tx, applied)) = apply_in_tx(inner, tx, batch, last, &positions, false).await? {
        return commit(inner, tx, vec![applied]).await;
    }
    // Isolated, every outcome is committed.
    let tx = begin(inner).await?;
    match apply_in_tx(inner, tx, batch, last, &positions, true).await? {
        Some((tx, applied)) => commit(inner, tx, vec![applied]).await,
        None => Err(ProjectionError::Invalid("an isolated batch was rolled back".into())),
    }
}

/// Apply `batch` within `open` (a new transaction when `None`), committing once it holds
/// [`commit_every`](crate::RunnerOptions::commit_every) events ([`finish`] commits the rest).
pub(crate) async fn apply_spanning(
    inner: &Inner,
    open: Option<Spanning>,
    batch: &[Arc<DecodedEvent>],
) -> Result<Spanned, ProjectionError> {
    let mut open = match open {
        Some(open) => open,
        None => Spanning { tx: begin(inner).await?, events: 0, pending: Vec::new() },
    };
    if let Some(last) = batch.last().map(|e| e.position) {
        // Checkpoints in memory trail the open transaction's; `apply_in_tx` reads the
        // transaction's own, which its earlier batches moved.
        let positions = positions(inner);
        match apply_in_tx(inner, open.tx, batch, last, &positions, false).await? {
            Some((tx, applied)) => {
                open.tx = tx;
                open.events += batch.len();
                open.pending.push(applied);
            }
            None => {
                reload(inner).await?;
                return Ok(Spanned::RolledBack);
            }
        }
    }
    if open.events >= inner.options.commit_every {
        commit(inner, open.tx, open.pending).await?;
        return Ok(Spanned::Open(None));
    }
    Ok(Spanned::Open(Some(open)))
}

/// Commit an open spanning transaction, if any.
pub(crate) async fn finish(inner: &Inner, open: Option<Spanning>) -> Result<(), ProjectionError> {
    match open {
        Some(open) => commit(inner, open.tx, open.pending).await,
        None => Ok(()),
    }
}

/// Each projection's checkpoint in memory and whether it has failed.
fn positions(inner: &Inner) -> Vec<(i64, bool)> {
    let state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    state.iter().map(|s| (s.position, s.failed.is_some())).collect()
}

/// Begin a batch's transaction, with a bulk load's settings.
async fn begin(inner: &Inner) -> Result<ReadTx, ProjectionError> {
    let mut tx = inner.db.begin().await?;
    if inner.options.bulk {
        tx.execute(&format!("PRAGMA wal_autocheckpoint = {BULK_WAL_AUTOCHECKPOINT}"), &[]).await?;
    }
    if inner.options.sqlite_cache_mib > 0 {
        // Negative: a size in KiB rather than in pages.
        let kib = i64::from(inner.options.sqlite_cache_mib) * 1024;
        tx.execute(&format!("PRAGMA cache_size = -{kib}"), &[]).await?;
    }
    Ok(tx)
}

/// Commit `tx`, then record what its batches did in memory and publish it.
async fn commit(inner: &Inner, tx: ReadTx, batches: Vec<Applied>) -> Result<(), ProjectionError> {
    let committing = Instant::now();
    tx.commit().await?;
    {
        let mut t = inner.timings.lock().unwrap_or_else(|p| p.into_inner());
        t.batches += batches.len() as u64;
        t.commit_micros += micros_since(committing);
    }
    let mut state = inner.state.lock().unwrap_or_else(|p| p.into_inner());
    for batch in batches {
        for i in batch.advanced {
            state[i].position = batch.last;
        }
        for (i, position) in batch.found_ahead {
            state[i].position = position;
        }
        for (i, events, micros) in batch.applied {
            state[i].applied_events += events;
            state[i].apply_micros += micros;
        }
        for (i, reason) in batch.failures {
            state[i].failed = Some(reason);
        }
    }
    publish(inner, &state);
    Ok(())
}

/// One attempt at `batch` in `tx`: with `isolate`, each projection in a savepoint (a failing one
/// is marked failed), one after another; without (all at once in a SQLite bulk load), a failing
/// projection rolls the whole transaction back and the answer is `None` (apply again,
/// isolated). `Some`: applied, with the checkpoints written, not yet committed.
async fn apply_in_tx(
    inner: &Inner,
    mut tx: ReadTx,
    batch: &[Arc<DecodedEvent>],
    last: i64,
    positions: &[(i64, bool)],
    isolate: bool,
) -> Result<Option<(ReadTx, Applied)>, ProjectionError> {
    let committed = lock_checkpoints(&mut tx, None).await?;
    let mut out = Applied { last, ..Applied::default() };
    // Each projection's events after its committed checkpoint.
    let mut work: Vec<(usize, Vec<Arc<DecodedEvent>>)> = Vec::new();
    for (i, p) in inner.projections.iter().enumerate() {
        let (in_memory, failed) = positions[i];
        if failed || in_memory >= last {
            continue;
        }
        let Some(c) = committed.iter().find(|c| c.name == p.name()) else {
            return Err(ProjectionError::CheckpointMovedBack { name: p.name(), applied: in_memory, committed: 0 });
        };
        if c.version != i64::from(p.version()) {
            out.failures.push((i, newer_version(c.version, i64::from(p.version()))));
            continue;
        }
        if c.position < in_memory {
            return Err(ProjectionError::CheckpointMovedBack {
                name: p.name(),
                applied: in_memory,
                committed: c.position,
            });
        }
        if c.position >= last {
            // Another process applied this batch already.
            out.found_ahead.push((i, c.position));
            continue;
        }
        let checkpoint = c.position;
        let events: Vec<Arc<DecodedEvent>> =
            batch.iter().filter(|e| e.position > checkpoint && p.handles(&e.event_type)).cloned().collect();
        if !events.is_empty() {
            work.push((i, events));
        }
        out.advanced.push(i);
    }
    if inner.options.bulk && !isolate && work.len() > 1 && !tx.is_postgres() {
        let (back, outcome) = crate::together::apply(tx, &inner.projections, work).await?;
        tx = back;
        match outcome {
            Some(done) => out.applied = done,
            None => {
                // If the rollback fails the connection is gone: fail the batch.
                tx.rollback().await?;
                return Ok(None);
            }
        }
    } else {
        for (i, events) in work {
            let p = &inner.projections[i];
            let events: Vec<&DecodedEvent> = events.iter().map(|e| &**e).collect();
            let started = Instant::now();
            if isolate {
                tx.execute("SAVEPOINT projection", &[]).await?;
            }
            match p.apply(&mut tx, &events).await {
                Ok(()) => {
                    if isolate {
                        tx.execute("RELEASE SAVEPOINT projection", &[]).await?;
                    }
                    out.applied.push((i, events.len() as u64, micros_since(started)));
                }
                Err(e) if e.is_transient() => {
                    // The database's failure, not the batch's: roll back and let the runner
                    // apply it again from the committed checkpoints (a projection is marked
                    // failed only for what its events do).
                    if let Err(back) = tx.rollback().await {
                        tracing::debug!(error = %back, "rolling back after a passing database failure");
                    }
                    return Err(e);
                }
                Err(e) if !isolate => {
                    tracing::debug!(projection = p.name(), error = %e, "a projection failed; applying the batch again, isolated");
                    // If the rollback fails the connection is gone: fail the batch.
                    tx.rollback().await?;
                    return Ok(None);
                }
                Err(e) => {
                    // If the savepoint cannot be rolled back the connection is gone: fail the batch.
                    tx.execute("ROLLBACK TO SAVEPOINT projection", &[]).await?;
                    tx.execute("RELEASE SAVEPOINT projection", &[]).await?;
                    tracing::error!(projection = p.name(), error = %e, "projection failed; it stops here until rebuilt");
                    out.advanced.retain(|&a| a != i);
                    out.failures.push((i, e.to_string()));
                }
            }
        }
    }
    // Every advanced projection's checkpoint in one statement, in the batch's transaction.
    let now = now_micros();
    let checkpoints: Vec<Vec<SqlValue>> = out
        .advanced
        .iter()
        .map(|&i| {
            let p = &inner.projections[i];
            vec![p.name().into(), p.version().into(), last.into(), now.clone()]
        })
        .collect();
    tx.upsert("projection_checkpoints", &CHECKPOINT_COLUMNS, &["name"], &checkpoints).await?;
    Ok(Some((tx, out)))
}
