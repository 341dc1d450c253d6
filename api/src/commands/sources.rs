//! Source use cases: a producer's report becomes the root of a causal chain (the signal bus
//! reacts to it).

use agentlog_domain::signal::{
    is_agentlog_source_type,
    source::{Source, SourceCommand},
};
use serde_json::Value;

use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::error::ApiError;

/// A source report as a producer sends it.
pub struct SourceReport {
    /// The producer's id for it: the same id twice is one source.
    pub source_id: String,
    /// One of upstream's types, or a `client.*` type (never `agentlog.*`).
    pub source_type: String,
    /// A JSON object.
    pub payload: Value,
    /// The scope key to file it under (else derived from the payload).
    pub scope_key: Option<String>,
    /// The producer's clock.
    pub timestamp_ms: i64,
}

/// What receiving a source did.
pub struct SourceReceived {
    /// The scope key it was filed under.
    pub scope_key: String,
    /// Position of the event appended; 0 when this source id had been received before.
    pub position: i64,
}

impl Commands<'_> {
    /// Receive a source report and wait for the read models to include it. Source ids are per
    /// owner: another user's `sourceId` is no obstacle (the source is the caller's own), and the
    /// caller's own id again is the same source.
    pub async fn emit_source(&self, report: SourceReport) -> Result<SourceReceived, ApiError> {
        let SourceReport { source_id, source_type, payload, scope_key, timestamp_ms } = report;
        check_id("sourceId", &source_id)?;
        if is_agentlog_source_type(&source_type) {
            return Err(ApiError::validation("sourceType", "agentlog.* sources are produced by agentlog itself"));
        }
        if !payload.is_object() {
            return Err(ApiError::validation("payload", "must be a JSON object"));
        }
        let owner = &self.caller.user_id;
        let stream = self.state.handler.stream_of::<Source>(owner, &source_id).await.map_err(ApiError::from)?;
        let ctx = self.context(&self.caller.user_id, self.user_actor(), None)?;
        let command =
            SourceCommand::Receive { source_id: source_id.clone(), source_type, payload, scope_key, timestamp_ms };
        let outcome =
            self.state.handler.execute_stream::<Source>(&stream, &command, &ctx).await.map_err(ApiError::from)?;
        let position = outcome.last_position();
        self.state.settle(position).await;
        Ok(SourceReceived { scope_key: outcome.state.scope_key, position })
    }
}
