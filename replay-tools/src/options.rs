//! What every command gets besides its own arguments.

/// The options every command takes.
#[derive(Debug, Clone)]
pub struct Global {
    /// The log's URL or path.
    pub database: String,
    /// `--json`.
    pub json: bool,
}
