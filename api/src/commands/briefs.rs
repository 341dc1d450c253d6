//! Brief use cases: resolving a brief (approving a result brief completes its task in the same
//! append).

use agentlog_domain::{briefs::Brief, rules::brief_resolution, tasks::Task};

use crate::commands::caller::Commands;
use crate::commands::checks::check_replay;

use crate::error::ApiError;

impl Commands<'_> {
    /// Resolve brief `id` with `action`; approving a result brief completes its task in the
    /// same append. Answers the brief's owner and the position of the last event appended.
    pub async fn resolve_brief(
        &self,
        id: &str,
        action: &str,
        comment: Option<String>,
        request_id: Option<&str>,
    ) -> Result<(String, i64), ApiError> {
        let loaded = self.load_owned::<Brief>(id).await?;
        let ctx = self.context(&loaded.state.user_id, self.user_actor(), request_id)?;
        let results = self
            .state
            .handler
            .execute_multi(&ctx, || async {
                let h = &self.state.handler;
                let brief = h.load_stream::<Brief>(&loaded.stream_id).await?;
                let task_id = brief.state.brief.as_ref().and_then(|b| b.task_id.clone());
                // The brief's task is named in the brief owner's namespace.
                let task = match task_id {
                    Some(t) => Some(h.load_of::<Task>(&brief.state.user_id, &t).await?),
                    None => None,
                };
                // A task of another owner is not this brief's to complete.
                let task = task.filter(|t| t.state.user_id == brief.state.user_id);
                let resolution = brief_resolution::resolve_brief(
                    &brief.state,
                    &brief.stream_id,
                    task.as_ref().map(|t| (&t.state, t.stream_id.as_str())),
                    action,
                    comment.clone(),
                    &ctx,
                )?;
                let writes = resolution.stamp(&brief.state, task.as_ref().map(|t| &t.state), &ctx);
                Ok(writes
                    .into_iter()
                    .map(|w| {
                        let v = match &task {
                            Some(t) if t.stream_id == w.stream_id => t.version,
                            _ => brief.version,
                        };
                        (w, v)
                    })
                    .collect())
            })
            .await?;
        check_replay(&results, &loaded.stream_id)?;
        let position = results.iter().map(|r| r.last_position()).max().unwrap_or(0);
        self.state.settle(position).await;
        Ok((loaded.state.user_id, position))
    }
}
