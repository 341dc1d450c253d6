//! API errors and their GraphQL `extensions.code`.

use agentlog_domain::error::DomainError;
use agentlog_eventlog::{CommandError, EventLogError};
use agentlog_projections::ProjectionError;

/// Everything an API call can fail with; each maps to one `extensions.code`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The domain refused the command.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// No or a bad token.
    #[error("authentication required: send `Authorization: Bearer <token>`")]
    Unauthenticated,
    /// The caller may not do this.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Not there (or not the caller's).
    #[error("{what} {id} not found")]
    NotFound {
        /// What kind of thing.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// Bad input.
    #[error("invalid {field}: {reason}")]
    Validation {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// A limit was hit.
    #[error("limit exceeded: {0}")]
    Limit(String),
    /// A concurrent writer won; retry.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The log failed.
    #[error(transparent)]
    Log(EventLogError),
    /// A read model failed.
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// The command was written (at `position`), but the read models had not reached it when
    /// its answer was read (the read-your-writes wait is bounded): read it again shortly.
    #[error("written at position {position}, but the read models are at {reached}: read it again shortly")]
    Behind {
        /// The command's position.
        position: i64,
        /// Where the read models were.
        reached: i64,
    },
    /// Anything else.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The code of errors that say the database cannot be reached right now (retry later).
pub const UNAVAILABLE: &str = "UNAVAILABLE";
/// The code of errors that say the database has no space left: nothing was written (retry
/// once space is freed).
pub const STORAGE_FULL: &str = "STORAGE_FULL";

impl ApiError {
    /// A validation error.
    pub fn validation(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Validation { field: field.into(), reason: reason.into() }
    }

    /// Not found.
    pub fn not_found(what: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound { what, id: id.into() }
    }

    /// The `extensions.code` of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Domain(e) => e.code().as_str(),
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::Forbidden(_) => "FORBIDDEN",
            Self::NotFound { .. } => "NOT_FOUND",
            Self::Validation { .. } => "VALIDATION",
            Self::Limit(_) => "LIMIT",
            Self::Conflict(_) => "CONFLICT",
            Self::Log(e) => log_code(e),
            Self::Behind { .. } => UNAVAILABLE,
            Self::Projection(e) => projection_code(e),
            Self::Internal(_) => "INTERNAL",
        }
    }
}

/// The `extensions.code` of a log error.
fn log_code(e: &EventLogError) -> &'static str {
    match e {
        EventLogError::Conflict { .. } | EventLogError::IdempotencyConflict { .. } => "CONFLICT",
        EventLogError::Validation(_) => "VALIDATION",
        e if e.is_unavailable() => UNAVAILABLE,
        e if e.is_storage_full() => STORAGE_FULL,
        e if e.is_statement_timeout() => "LIMIT",
        _ => "INTERNAL",
    }
}

/// The `extensions.code` of a read-model error.
fn projection_code(e: &ProjectionError) -> &'static str {
    match e {
        ProjectionError::Invalid(_) => "VALIDATION",
        ProjectionError::Limit(_) => "LIMIT",
        e if e.is_unavailable() => UNAVAILABLE,
        e if e.is_storage_full() => STORAGE_FULL,
        e if e.is_statement_timeout() => "LIMIT",
        _ => "INTERNAL",
    }
}

impl From<EventLogError> for ApiError {
    fn from(e: EventLogError) -> Self {
        match e {
            EventLogError::Validation(v) => Self::Validation { field: "input".into(), reason: v.to_string() },
            other => Self::Log(other),
        }
    }
}

impl From<CommandError> for ApiError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::Domain(d) => Self::Domain(d),
            CommandError::Log(l) => l.into(),
            CommandError::Contended { stream_id, attempts } => {
                Self::Conflict(format!("stream {stream_id} kept changing; gave up after {attempts} attempts"))
            }
            CommandError::Decode { .. } => Self::Internal(e.to_string()),
        }
    }
}

/// Gives every GraphQL error an `extensions.code`: the code of the [`ApiError`] behind it, or,
/// for errors raised by the GraphQL engine itself, `LIMIT` (depth and complexity limits) or
/// `VALIDATION` (parse, type and argument errors). A hook of `graphql::hooks::Hooks`.
pub struct ErrorCodes;

/// A GraphQL syntax error in one line with its place ("syntax error at line 1, column 2:
/// expected selection"), instead of the parser's multi-line drawing of the document.
fn one_line_syntax_error(error: &mut async_graphql::ServerError) {
    if !error.message.starts_with(" --> ") {
        return;
    }
    let expected = error.message.lines().filter_map(|l| l.trim().strip_prefix("= ")).collect::<Vec<_>>().join("; ");
    let place =
        error.locations.first().map(|p| format!(" at line {}, column {}", p.line, p.column)).unwrap_or_default();
    error.message =
        if expected.is_empty() { format!("syntax error{place}") } else { format!("syntax error{place}: {expected}") };
}

/// Give `error` its `extensions.code` (and a one-line syntax error), as every answer does.
pub(crate) fn add_code(error: &mut async_graphql::ServerError) {
    one_line_syntax_error(error);
    if error.extensions.as_ref().is_some_and(|x| x.get("code").is_some()) {
        return;
    }
    // A resolver may return a read-model or log error with `?` directly: coded as the ApiError
    // it stands for, not as the engine's VALIDATION.
    let source = error.source.as_ref();
    let known = source
        .and_then(|s| s.downcast_ref::<ApiError>())
        .map(|api| (api.code(), api.to_string()))
        .or_else(|| {
            source.and_then(|s| s.downcast_ref::<ProjectionError>()).map(|e| (projection_code(e), e.to_string()))
        })
        .or_else(|| source.and_then(|s| s.downcast_ref::<EventLogError>()).map(|e| (log_code(e), e.to_string())));
    let code = match known {
        Some((code, error)) => {
            match code {
                "INTERNAL" => tracing::error!(%error, "internal error answering a request"),
                UNAVAILABLE => tracing::warn!(%error, "database unavailable answering a request"),
                STORAGE_FULL => tracing::warn!(%error, "database out of space answering a request"),
                _ => {}
            }
            code
        }
        None if error.message.contains("nested too deep")
            || error.message.contains("too complex")
            || error.message.contains("too large") =>
        {
            "LIMIT"
        }
        None => "VALIDATION",
    };
    error.extensions.get_or_insert_with(Default::default).set("code", code);
}

impl ErrorCodes {
    /// `response` with a code on every error.
    pub fn add(mut response: async_graphql::Response) -> async_graphql::Response {
        for e in &mut response.errors {
            add_code(e);
        }
        response
    }
}

/// Result of a GraphQL resolver.
pub type GqlResult<T> = Result<T, async_graphql::Error>;
