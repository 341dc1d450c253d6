//! The WAL copied back into the database file on a thread of its own
//! ([`StoreOptions::sqlite_background_checkpoint`](crate::StoreOptions::sqlite_background_checkpoint)).
//!
//! By default SQLite checkpoints inside a commit: the commit that takes the WAL past
//! `wal_autocheckpoint` pages copies them into the database file and syncs it before it
//! returns, so now and then one append (and the request waiting on it) pays for everyone's
//! pages — more of them, scattered wider, the larger the file. With a background checkpointer
//! every connection runs with `wal_autocheckpoint = 0` and this thread runs a `PASSIVE`
//! checkpoint every interval: it copies what no reader still needs without taking the write
//! lock, so commits never wait for it, and the WAL starts over from its beginning once a
//! checkpoint has copied all of it.

use std::{
    sync::{Arc, mpsc},
    time::Duration,
};

use agentlog_sqlite::Connection;

use crate::{checkpoints::CheckpointStats, error::EventLogError, sqlite::write::failed};

/// The running checkpointer: its thread ends when this is dropped (with the log).
pub(crate) struct Checkpointer {
    /// Dropping the sender wakes the thread, which then ends.
    _stop: mpsc::Sender<()>,
    pub(crate) stats: Arc<CheckpointStats>,
}

/// Open a connection on `filename` with `settings` and checkpoint every `interval` on a
/// thread of its own.
pub(crate) fn start(filename: &str, settings: &[String], interval: Duration) -> Result<Checkpointer, EventLogError> {
    let mut conn = Connection::open(filename, settings).map_err(failed("opening the WAL checkpointer's connection"))?;
    let (stop, stopped) = mpsc::channel::<()>();
    let stats = Arc::new(CheckpointStats::default());
    let counting = Arc::clone(&stats);
    std::thread::Builder::new()
        .name("agentlog-checkpoint".into())
        .spawn(move || {
            let mut seen = Frames::default();
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                pass(&mut conn, &counting, &mut seen);
            }
        })
        .map_err(|e| EventLogError::Unavailable { reason: format!("starting the WAL checkpointer: {e}") })?;
    Ok(Checkpointer { _stop: stop, stats })
}

/// What the previous pass found: frames in the WAL, and how many of them were checkpointed.
#[derive(Debug, Default, Clone, Copy)]
struct Frames {
    log: i64,
    checkpointed: i64,
}

impl Frames {
    /// Frames copied back since `before`: SQLite counts the checkpointed frames of the current
    /// WAL, so a pass that finds nothing new copied nothing, and a WAL that started over (fewer
    /// frames than before) counts from zero.
    fn copied_since(self, before: Frames) -> u64 {
        let from = if self.log < before.log { 0 } else { before.checkpointed };
        u64::try_from(self.checkpointed - from).unwrap_or(0)
    }
}

/// One `PASSIVE` checkpoint; its row is (busy, frames in the WAL, frames checkpointed).
fn pass(conn: &mut Connection, stats: &CheckpointStats, seen: &mut Frames) {
    let mut now = *seen;
    let outcome = conn.for_each_row("PRAGMA wal_checkpoint(PASSIVE)", &[], &mut |row| {
        now = Frames { log: row.i64(1).unwrap_or(0).max(0), checkpointed: row.i64(2).unwrap_or(0).max(0) };
    });
    match outcome {
        Ok(_) => {
            stats.passed(now.copied_since(*seen));
            *seen = now;
        }
        Err(e) => {
            stats.failed();
            tracing::warn!(error = %e, "a WAL checkpoint failed; the next one tries again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Frames;

    #[test]
    fn only_newly_checkpointed_frames_count() {
        let f = |log, checkpointed| Frames { log, checkpointed };
        assert_eq!(f(10, 10).copied_since(f(0, 0)), 10);
        assert_eq!(f(10, 10).copied_since(f(10, 10)), 0, "an idle pass copies nothing");
        assert_eq!(f(14, 12).copied_since(f(10, 10)), 2);
        assert_eq!(f(3, 3).copied_since(f(14, 14)), 3, "the WAL started over");
    }
}
