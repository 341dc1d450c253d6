//! What `verify` reports: which check found a difference, and where.

use serde::Serialize;

/// Which check found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// Positions positive and increasing.
    Positions,
    /// Stream versions contiguous.
    StreamVersions,
    /// parentNodeId / rootSourceId resolve.
    ChainLinks,
    /// Columns agree with the metadata; ids and metadata parse.
    Envelope,
    /// The payload decodes at its schema version.
    Payload,
    /// A read model differs from a fresh rebuild (or could not be rebuilt).
    ReadModel,
}

/// One difference found.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The check.
    pub check: Check,
    /// The stream, for log problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_id: Option<String>,
    /// The event's position, for log problems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    /// The projection and table, for read-model problems (`projection.table`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// What is wrong.
    pub detail: String,
}
