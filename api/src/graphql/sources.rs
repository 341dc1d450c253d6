//! Sources: what producers (workers, bots, browsers) report happened. Each is the root of a
//! causal chain; the signal bus reacts to it.

use agentlog_domain::{
    aggregate::Aggregate,
    signal::{
        is_agentlog_source_type,
        source::{Source, SourceCommand},
    },
};
use async_graphql::{Context, Json, Object, SimpleObject};
use serde_json::Value;

use crate::graphql::request::app;
use crate::graphql::request::caller;
use crate::{
    commands::{Commands, check_id},
    error::{ApiError, GqlResult},
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
    /// `timestampMs` the producer's clock). The same `sourceId` twice is one source.
    async fn emit_source_event(
        &self,
        ctx: &Context<'_>,
        source_id: String,
        source_type: String,
        payload: Json<Value>,
        scope_key: Option<String>,
        timestamp_ms: i64,
    ) -> GqlResult<SourcePayload> {
        check_id("sourceId", &source_id)?;
        if is_agentlog_source_type(&source_type) {
            return Err(ApiError::validation("sourceType", "agentlog.* sources are produced by agentlog itself").into());
        }
        if !payload.0.is_object() {
            return Err(ApiError::validation("payload", "must be a JSON object").into());
        }
        let state = app(ctx);
        let who = caller(ctx)?;
        // A source id someone else already used is not this caller's to see.
        let stream = Source::stream_id(&source_id);
        if let Some(first) = state.store.read_stream(&stream, 1, 1).await.map_err(ApiError::from)?.first()
            && !who.may_see(&first.metadata.user_id)
        {
            return Err(ApiError::Conflict(format!("source id {source_id} is taken")).into());
        }
        let commands = Commands::new(state, who);
        let ctx_cmd = commands.context(&who.user_id, commands.user_actor(), None)?;
        let command = SourceCommand::Receive {
            source_id: source_id.clone(),
            source_type,
            payload: payload.0,
            scope_key,
            timestamp_ms,
        };
        let outcome = state.handler.execute::<Source>(&source_id, &command, &ctx_cmd).await.map_err(ApiError::from)?;
        let position = outcome.last_position();
        state.settle(position).await;
        Ok(SourcePayload { source_id, scope_key: outcome.state.scope_key, accepted: position > 0, position })
    }
}
