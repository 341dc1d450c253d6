//! Task use cases that span streams: starting a run (the task's topic and its operation in one
//! append).

use agentlog_domain::{
    agent::{Agent, INBOX_AGENT_ID},
    aggregate::{Aggregate, StreamEvents},
    context::Context,
    conversation::{Conversation, ConversationCommand},
    ids::SERVER_ID_MARK,
    operation::{AgentRef, Operation},
    rules::task_run,
    task::{RunTask, RunTrigger, Task},
};

use agentlog_domain::error::DomainError;
use agentlog_eventlog::CommandError;

use super::{Commands, aggregates::Owned, check_id, check_replay, is_replay};
use crate::error::ApiError;

impl Commands<'_> {
    /// The agent a task runs under now: its assignee (or the inbox agent), at its current
    /// config version; the task's own model settings win over the agent's.
    async fn run_agent(&self, task: &Task) -> Result<AgentRef, ApiError> {
        let agent_id = task.assignee_agent_id.as_deref().unwrap_or(INBOX_AGENT_ID);
        let mut agent_ref = self.agent_ref(&task.user_id, agent_id).await?;
        if task.config.model.is_some() {
            agent_ref.model = task.config.model.clone();
        }
        if task.config.provider.is_some() {
            agent_ref.provider = task.config.provider.clone();
        }
        Ok(agent_ref)
    }

    /// Agent `agent_id` at its current config version, when it may run for `owner` (the owner
    /// of the run): a built-in agent or one of `owner`'s. Another user's agent is NOT_FOUND,
    /// whoever asks (an admin, or a reactor acting for `owner`).
    pub async fn agent_ref(&self, owner: &str, agent_id: &str) -> Result<AgentRef, ApiError> {
        let agent = self.state.handler.load::<Agent>(agent_id).await?.state;
        Ok(match agent.owner() {
            Some(o) if agent.builtin || (o == owner && self.caller.may_see(o)) => agent.run_ref()?,
            // The inbox agent need not be registered: it runs at version 1 with defaults.
            None if agent_id == INBOX_AGENT_ID => {
                AgentRef { agent_id: agent_id.to_string(), config_version: 1, model: None, provider: None }
            }
            _ => return Err(ApiError::not_found("agent", agent_id)),
        })
    }

    /// Start a manual run of task `id`: topic `topic_id`, operation `operation_id`. Answers the
    /// position of the last event appended.
    pub async fn run_task(
        &self,
        id: &str,
        topic_id: &str,
        operation_id: &str,
        request_id: Option<&str>,
    ) -> Result<i64, ApiError> {
        check_id("topicId", topic_id)?;
        check_id("operationId", operation_id)?;
        let loaded = self.load_owned::<Task>(id).await?;
        let owner = loaded.state.user_id.clone();
        let ctx = self.context(&owner, self.user_actor(), request_id)?;
        let (position, _) = self.start_run(id, topic_id, operation_id, RunTrigger::Manual, &ctx).await?;
        self.state.settle(position).await;
        Ok(position)
    }

    /// Start a run of task `id` triggered by `trigger` under `ctx` (a user's, or the
    /// scheduler's deterministic one): the topic and its operation in one atomic append. A run
    /// agentlog starts (its topic id marked `~`, which no caller may create) also opens the
    /// topic's conversation, for its owner, so the run's worker can write to it.
    /// Answers the position of the last event appended and whether an earlier attempt of the
    /// same command had already appended it; does not wait for the read models.
    pub async fn start_run(
        &self,
        id: &str,
        topic_id: &str,
        operation_id: &str,
        trigger: RunTrigger,
        ctx: &Context,
    ) -> Result<(i64, bool), ApiError> {
        let results = self
            .state
            .handler
            .execute_multi(ctx, || async {
                let h = &self.state.handler;
                let task = h.load::<Task>(id).await?;
                let operation = h.load::<Operation>(operation_id).await?;
                let conversation = match topic_id.starts_with(SERVER_ID_MARK) {
                    true => Some(h.load::<Conversation>(topic_id).await?).filter(|c| !c.state.exists()),
                    false => None,
                };
                let agent = self.run_agent(&task.state).await.map_err(|e| match e {
                    ApiError::Domain(d) => CommandError::Domain(d),
                    other => CommandError::Domain(DomainError::validation("agent", other.to_string())),
                })?;
                let run = RunTask {
                    topic_id: topic_id.to_string(),
                    operation_id: operation_id.to_string(),
                    trigger,
                    continue_topic: false,
                    agent,
                    extra_prompt: None,
                };
                let start = task_run::start_task_run(&task.state, &operation.state, &run, None, ctx)?;
                // One stamper for every stream: the event ids count on across them.
                let mut stamper = ctx.stamper();
                let mut writes = vec![
                    (stamper.write(&task.state, &start.task), task.version),
                    (stamper.write(&operation.state, &start.operation), operation.version),
                ];
                if let Some(c) = conversation {
                    let open = ConversationCommand::Create {
                        topic_id: topic_id.to_string(),
                        title: task.state.name.clone(),
                        agent_id: Some(run.agent.agent_id.clone()),
                        group_id: None,
                    };
                    let created = c.state.decide(&open, ctx)?;
                    let part = StreamEvents::new(c.stream_id.clone(), created);
                    writes.push((stamper.write(&c.state, &part), c.version));
                }
                Ok(writes)
            })
            .await?;
        check_replay(&results, &Task::stream_id(id))?;
        Ok((results.iter().map(|r| r.last_position()).max().unwrap_or(0), is_replay(&results)))
    }
}
