//! Group use cases that span streams: starting an orchestration run (the supervisor's operation
//! and the group's `init` step in one append).

use agentlog_domain::error::DomainError;
use agentlog_domain::{
    aggregate::{Aggregate, StreamEvents},
    groups::{Group, GroupCommand},
    operations::{CreateOperation, Operation, OperationCommand, OperationKind},
};
use agentlog_eventlog::CommandError;

use agentlog_projections::budgets::RunScope;

use super::budgets;
use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::commands::checks::check_replay;
use crate::error::ApiError;

impl Commands<'_> {
    /// Start a run of group `group_id`: its supervisor agent's operation `operation_id` (kind
    /// group), told `instruction`, and the orchestration's first step (call the supervisor).
    /// Answers the group's owner and the position of the last event appended.
    pub async fn start_group_run(
        &self,
        group_id: &str,
        operation_id: &str,
        instruction: Option<String>,
        request_id: Option<&str>,
    ) -> Result<(String, i64), ApiError> {
        check_id("operationId", operation_id)?;
        let loaded = self.load_owned::<Group>(group_id).await?;
        let supervisor = loaded
            .state
            .supervisor()
            .filter(|m| m.enabled)
            .ok_or_else(|| ApiError::validation("groupId", "the group has no enabled supervisor"))?
            .agent_id
            .clone();
        let agent = self.agent_ref(&loaded.state.user_id, &supervisor).await?;
        let ctx = self.context(&loaded.state.user_id, self.user_actor(), request_id)?;
        let run = RunScope {
            user_id: loaded.state.user_id.clone(),
            agent_id: agent.agent_id.clone(),
            task_id: None,
            group_id: Some(group_id.to_string()),
        };
        let budgets = budgets::facts(&budgets::standings(self.state, &run, ctx.now, false).await?);
        let results = self
            .state
            .handler
            .execute_multi(&ctx, || async {
                let h = &self.state.handler;
                let group = h.load_stream::<Group>(&loaded.stream_id).await?;
                let operation = h.load_of::<Operation>(&loaded.state.user_id, operation_id).await?;
                if !operation.state.exists() {
                    agentlog_domain::budgets::refuse_start(&budgets)?;
                }
                let mut create = CreateOperation::new(operation_id, OperationKind::Group, agent.clone());
                create.group_id = Some(group_id.to_string());
                create.trigger = Some(format!("group:{group_id}"));
                create.instruction = instruction.clone();
                let created = operation.state.decide(&OperationCommand::Create(create), &ctx)?;
                let started = group
                    .state
                    .decide(&GroupCommand::StartOrchestration { operation_id: operation_id.to_string() }, &ctx)
                    .map_err(|e: DomainError| CommandError::Domain(e))?;
                let mut stamper = ctx.stamper();
                let op_write =
                    stamper.write(&operation.state, &StreamEvents::new(operation.stream_id.clone(), created));
                let group_write = stamper.write(&group.state, &StreamEvents::new(group.stream_id.clone(), started));
                Ok(vec![(op_write, operation.version), (group_write, group.version)])
            })
            .await?;
        let stream = self.state.handler.stream_of::<Operation>(&loaded.state.user_id, operation_id).await?;
        check_replay(&results, &stream)?;
        let position = results.iter().map(|r| r.last_position()).max().unwrap_or(0);
        self.state.settle(position).await;
        Ok((loaded.state.user_id, position))
    }
}
