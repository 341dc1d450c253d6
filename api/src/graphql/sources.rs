//! Sources: what producers (workers, bots, browsers) report happened (the use case is
//! `commands::sources`).

use crate::graphql::request::commands;
use async_graphql::{Context, Json, Object, SimpleObject};
use serde_json::Value;

use crate::{
    commands::sources::{SourceReceived, SourceReport},
    error::GqlResult,
};

/// What `emitSourceEvent` answers.
#[derive(SimpleObject)]
pub struct SourcePayload {
    /// The source id: the chain's root (`chain(rootSourceId:)` needs the event id, see `events`).
    pub source_id: String,
    /// The scope key it was filed under.
    pub scope_key: String,
    /// False when this source id had been received before (nothing written).
    pub accepted: bool,
    /// Position of the event appended (0 when not accepted).
    pub position: i64,
}

/// Source mutations.
#[derive(Default)]
pub struct SourcesMutation;

#[Object]
impl SourcesMutation {
    /// Report a source event (`sourceType` one of upstream's types, e.g.
    /// `agent.execution.completed`, or a `client.*` type; `payload` a JSON object;
    /// `timestampMs` the producer's clock). The same `sourceId` twice is one source. Source ids
    /// are per owner: another user's `sourceId` is no obstacle (the source is the caller's own).
    async fn emit_source_event(
        &self,
        ctx: &Context<'_>,
        source_id: String,
        source_type: String,
        payload: Json<Value>,
        scope_key: Option<String>,
        timestamp_ms: i64,
    ) -> GqlResult<SourcePayload> {
        let commands = commands(ctx)?;
        let report =
            SourceReport { source_id: source_id.clone(), source_type, payload: payload.0, scope_key, timestamp_ms };
        let received = commands.emit_source(report).await?;
        let SourceReceived { scope_key, position } = received;
        Ok(SourcePayload { source_id, scope_key, accepted: position > 0, position })
    }
}
