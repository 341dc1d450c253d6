//! Folding `brief.*` events into `briefs` (as `Brief::evolve`).

use agentlog_domain::briefs::BriefEvent as E;
use async_trait::async_trait;

use super::rows::BriefRow;
use crate::{
    db::ReadTx,
    decoding::{DecodedEvent, decode_owned_batch},
    error::ProjectionError,
    projection::Projection,
    staging::{Staged, TableRow},
};

/// Projects briefs.
#[derive(Debug, Default, Clone, Copy)]
pub struct BriefsProjection;

#[async_trait]
impl Projection for BriefsProjection {
    fn name(&self) -> &'static str {
        "briefs"
    }
    fn version(&self) -> i32 {
        2
    }
    fn tables(&self) -> &'static [&'static str] {
        &[BriefRow::TABLE]
    }
    fn handles(&self, event_type: &str) -> bool {
        event_type.starts_with("brief.")
    }
    async fn apply(&self, tx: &mut ReadTx, events: &[&DecodedEvent]) -> Result<(), ProjectionError> {
        let decoded = decode_owned_batch::<E>(events)?;
        let mut briefs = Staged::<BriefRow>::new();
        briefs.load_keys(tx, decoded.iter().map(|(_, key, _)| key.clone())).await?;
        for (recorded, key, event) in &decoded {
            let brief_id = &key.1;
            let at = recorded.recorded_at;
            if let E::Created(e) = event {
                let b = &e.brief;
                briefs.put(BriefRow {
                    brief_id: brief_id.clone(),
                    user_id: key.0.clone(),
                    brief_type: b.brief_type,
                    priority: b.priority,
                    title: b.title.clone(),
                    summary: b.summary.clone(),
                    actions: b.actions.clone().unwrap_or_default(),
                    documents: b.documents.clone(),
                    task_id: b.task_id.clone(),
                    topic_id: b.topic_id.clone(),
                    operation_id: b.operation_id.clone(),
                    cron_job_id: b.cron_job_id.clone(),
                    agent_id: b.agent_id.clone(),
                    trigger: b.trigger.clone(),
                    error_code: b.error_code.clone(),
                    metadata: b.metadata.clone(),
                    read_at: None,
                    resolved_action: None,
                    resolved_comment: None,
                    resolved_at: None,
                    created_at: e.at,
                    updated_at: at,
                });
                continue;
            }
            let Some(row) = briefs.get_mut(key) else { continue };
            match event {
                E::Created(_) => {}
                E::Read(e) => {
                    row.read_at.get_or_insert(e.at);
                }
                E::Resolved(e) => {
                    row.resolved_action = Some(e.action.clone());
                    row.resolved_comment = e.comment.clone();
                    row.resolved_at = Some(e.at);
                    row.read_at.get_or_insert(e.at);
                }
            }
            row.updated_at = at;
        }
        briefs.flush(tx).await
    }
}
