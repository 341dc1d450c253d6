//! What an append asks for and what it answers.

use std::fmt;

use agentlog_domain::envelope::NewEvent;
use serde::{Deserialize, Serialize};

/// The version a stream must be at for an append to go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExpectedVersion {
    /// Whatever the stream is at (including not existing).
    Any,
    /// The stream must not exist yet.
    NoStream,
    /// The stream must exist and be exactly at this version (its last event's stream_version).
    Exact(i64),
}

impl fmt::Display for ExpectedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("any version"),
            Self::NoStream => f.write_str("no stream"),
            Self::Exact(v) => write!(f, "version {v}"),
        }
    }
}

impl ExpectedVersion {
    /// Does a stream currently at `actual` (0 = absent) satisfy this expectation?
    pub fn admits(self, actual: i64) -> bool {
        match self {
            Self::Any => true,
            Self::NoStream => actual == 0,
            Self::Exact(v) => v == actual && v > 0,
        }
    }

    /// The expectation for a stream whose state was folded from `version` events (0 = none).
    pub fn from_version(version: i64) -> Self {
        if version == 0 { Self::NoStream } else { Self::Exact(version) }
    }
}

/// Events for one stream, with the version that stream must be at.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamAppend {
    /// The stream.
    pub stream_id: String,
    /// Optimistic concurrency check.
    pub expected: ExpectedVersion,
    /// The events, in order.
    pub events: Vec<NewEvent>,
}

impl StreamAppend {
    /// Bundle an append.
    pub fn new(stream_id: impl Into<String>, expected: ExpectedVersion, events: Vec<NewEvent>) -> Self {
        Self { stream_id: stream_id.into(), expected, events }
    }
}

/// Where an append's events landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendResult {
    /// The stream.
    pub stream_id: String,
    /// Position of each event, in the order given.
    pub positions: Vec<i64>,
    /// The stream's version after the append (the last event's stream_version).
    pub stream_version: i64,
    /// True when every event was already in the log (an idempotent re-append wrote nothing).
    pub duplicate: bool,
}

impl AppendResult {
    /// The position of the last event of the append.
    pub fn last_position(&self) -> i64 {
        self.positions.last().copied().unwrap_or(0)
    }
}

/// Where a stored event is (an answer of [`crate::EventStore::locate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedEvent {
    /// Its position in the log.
    pub position: i64,
    /// Its stream.
    pub stream_id: String,
    /// Its version in that stream.
    pub stream_version: i64,
}
