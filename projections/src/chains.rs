//! The chains read model: every event by its causal chain, so "why does this exist?" is one
//! query (walk `parent_node_id` up to the root) and "what did this cause?" another (by
//! `root_source_id`, or children by `parent_node_id`).

use agentlog_domain::envelope::RecordedEvent;
use async_trait::async_trait;

use crate::{
    db::{ReadTx, SqlValue},
    error::ProjectionError,
    projection::Projection,
};

/// Projects every event into `chains`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ChainsProjection;

const COLUMNS: [&str; 8] =
    ["event_id", "position", "root_source_id", "parent_node_id", "event_type", "stream_id", "user_id", "recorded_at"];

#[async_trait]
impl Projection for ChainsProjection {
    fn name(&self) -> &'static str {
        "chains"
    }
    fn version(&self) -> i32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["chains"]
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&RecordedEvent]) -> Result<(), ProjectionError> {
        let rows: Vec<Vec<SqlValue>> = events
            .iter()
            .map(|e| {
                vec![
                    e.event_id.to_string().into(),
                    e.position.into(),
                    e.metadata.chain.root_source_id.to_string().into(),
                    e.metadata.chain.parent_node_id.map(|p| p.to_string()).into(),
                    e.event_type.as_str().into(),
                    e.stream_id.as_str().into(),
                    e.metadata.user_id.as_str().into(),
                    e.recorded_at.timestamp_micros().into(),
                ]
            })
            .collect();
        tx.upsert("chains", &COLUMNS, &["event_id"], &rows).await
    }
}
