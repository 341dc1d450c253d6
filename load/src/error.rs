//! Why a load run could not be done.

use std::path::PathBuf;

/// Why a load run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The URL does not parse or is not http(s).
    #[error("bad server URL {url:?}: {reason}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The target is not this machine.
    #[error("refusing to load {host:?}: agentlog-load only targets this machine (127.0.0.0/8, ::1 or localhost)")]
    NotLoopback {
        /// The host named.
        host: String,
    },
    /// No token.
    #[error("no token: pass --token or set AGENTLOG_TOKEN (the server writes an admin token to agentlog-admin-token)")]
    NoToken,
    /// Nothing to do.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Preparing the load failed (the server refused or could not be reached).
    #[error("setting up the load failed: {0}")]
    Setup(String),
    /// A client stopped before the end.
    #[error("a client stopped: {0}")]
    Client(String),
    /// The record file could not be written.
    #[error("writing the record file {path}: {source}")]
    Record {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
