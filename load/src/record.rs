//! The record of acknowledged mutations: one JSON object per line, with what identifies each
//! one's effect in the log, so a checker can find every one of them there afterwards.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::LoadError;

/// One acknowledged mutation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Order of acknowledgement across the run (from 1).
    pub seq: u64,
    /// The client that sent it.
    pub client: usize,
    /// The mutation (`appendMessage`, `claimOperation`, …).
    pub op: String,
    /// The `position` the server answered: its last event's position, or 0 when it appended
    /// nothing (a repeated request id, a deduplicated notification).
    pub position: i64,
    /// The streams it writes; the event at `position` is in one of them. A `*` in a name stands
    /// for any text (a user id the load does not know: a user's notification stream, a topic's
    /// owner).
    pub streams: Vec<String>,
    /// The ids it created or acted on (`messageId`, `operationId`, `commentId`, …).
    pub ids: Map<String, Value>,
    /// Milliseconds since the run started.
    pub at_ms: u64,
}

impl Record {
    /// Read a record file.
    pub fn read_file(path: &Path) -> Result<Vec<Record>, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(|e| format!("bad record line {l:?}: {e}")))
            .collect()
    }
}

/// Where records go (nowhere without `--record`).
pub struct Recorder {
    file: Option<(PathBuf, Mutex<BufWriter<File>>)>,
    seq: AtomicU64,
    started: Instant,
}

impl Recorder {
    /// Records to `path` (created or truncated), or none.
    pub fn new(path: Option<&Path>, started: Instant) -> Result<Self, LoadError> {
        let file = match path {
            None => None,
            Some(p) => {
                let f = File::create(p).map_err(|source| LoadError::Record { path: p.to_path_buf(), source })?;
                Some((p.to_path_buf(), Mutex::new(BufWriter::new(f))))
            }
        };
        Ok(Self { file, seq: AtomicU64::new(0), started })
    }

    /// Write one acknowledged mutation.
    pub fn record(
        &self,
        client: usize,
        op: &str,
        position: i64,
        streams: &[String],
        ids: &Map<String, Value>,
    ) -> Result<(), LoadError> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let Some((path, file)) = &self.file else { return Ok(()) };
        let record = Record {
            seq,
            client,
            op: op.to_string(),
            position,
            streams: streams.to_vec(),
            ids: ids.clone(),
            at_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let line =
            serde_json::to_string(&record).map_err(|e| LoadError::Record { path: path.clone(), source: e.into() })?;
        // A poisoned lock only means another client panicked mid-write; the file is still ours.
        let mut w = file.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(w, "{line}").map_err(|source| LoadError::Record { path: path.clone(), source })
    }

    /// Flush the file.
    pub fn finish(&self) -> Result<(), LoadError> {
        if let Some((path, file)) = &self.file {
            let mut w = file.lock().unwrap_or_else(|p| p.into_inner());
            w.flush().map_err(|source| LoadError::Record { path: path.clone(), source })?;
        }
        Ok(())
    }

    /// Mutations acknowledged so far.
    pub fn count(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }
}
