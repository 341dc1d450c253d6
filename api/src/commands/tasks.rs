//! Task use cases that span streams: starting a run (the task's topic and its operation in one
//! append) and adding a dependency (the `blocks` cycle check on the upstreams' own streams).

use std::collections::BTreeSet;

use agentlog_domain::stamp::{StreamWrite, stamp};
use agentlog_domain::{
    agents::{Agent, INBOX_AGENT_ID},
    aggregate::{Aggregate, StreamEvents},
    context::Context,
    conversations::{Conversation, ConversationCommand},
    ids::SERVER_ID_MARK,
    operations::Operation,
    rules::task_run,
    tasks::{BlocksGraph, DependencyKind, RunTask, RunTrigger, Task, TaskCommand, TopicEnd, TopicOutcome},
    values::{AgentRef, Handoff},
};
use agentlog_projections::{briefs, budgets::RunScope};
use serde::Deserialize;

use agentlog_domain::error::DomainError;
use agentlog_eventlog::CommandError;

use super::aggregates::Owned;
use super::budgets;
use crate::commands::caller::Commands;
use crate::commands::checks::check_id;
use crate::commands::checks::check_replay;
use crate::commands::checks::is_replay;

/// What a worker reports with `completeTaskTopic`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopicReport {
    /// The topic.
    pub topic_id: String,
    /// `completed`, `failed` or `canceled`.
    pub status: String,
    /// The run's hand-off (`{title?, summary?, keyFindings?, nextAction?}`).
    #[serde(default)]
    pub handoff: Option<Handoff>,
    /// The run's last message.
    #[serde(default)]
    pub result: Option<String>,
    /// A failed run's error.
    #[serde(default)]
    pub error: Option<String>,
    /// A failed run's error code.
    #[serde(default)]
    pub error_code: Option<String>,
    /// The worker's judge on a result brief.
    #[serde(default)]
    pub brief_judgement: Option<bool>,
}

/// The most tasks a `blocks` cycle check reads.
const MAX_GRAPH_TASKS: usize = 10_000;
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
    /// of the run): a built-in agent or one of `owner`'s, `agent_id` named in `owner`'s ids
    /// (agent ids are per owner). Another user's agent is NOT_FOUND, whoever asks (an admin,
    /// or a reactor acting for `owner`).
    pub async fn agent_ref(&self, owner: &str, agent_id: &str) -> Result<AgentRef, ApiError> {
        let agent = self.state.handler.load_of::<Agent>(owner, agent_id).await?.state;
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

    /// Make task `id` depend on `depends_on_id` (both the caller's: another's is NOT_FOUND).
    /// A `blocks` edge is checked for cycles against the truth: every task reachable from the
    /// upstream is read from its own stream, and the append holds each of those streams at the
    /// version read, so two racing additions that would close a cycle between them can never
    /// both commit — the second is decided again on the first's edge and refused. Answers the
    /// position of the event appended.
    pub async fn add_task_dependency(
        &self,
        id: &str,
        depends_on_id: &str,
        kind: DependencyKind,
        request_id: Option<&str>,
    ) -> Result<i64, ApiError> {
        let loaded = self.load_owned::<Task>(id).await?;
        // The upstream is named in the task owner's namespace (the one `id` was found in).
        self.load_owned::<Task>(depends_on_id).await?;
        let owner = loaded.state.user_id.clone();
        let ctx = self.context(&owner, self.user_actor(), request_id)?;
        let results = self
            .state
            .handler
            .execute_multi_reading(&ctx, || async {
                let h = &self.state.handler;
                let task = h.load_stream::<Task>(&loaded.stream_id).await?;
                let mut graph = BlocksGraph::new();
                let mut reads = Vec::new();
                if kind == DependencyKind::Blocks {
                    let mut seen = BTreeSet::from([depends_on_id.to_string()]);
                    let mut frontier = vec![depends_on_id.to_string()];
                    while let Some(upstream) = frontier.pop() {
                        let up = h.load_of::<Task>(&owner, &upstream).await?;
                        reads.push((up.stream_id.clone(), up.version));
                        for next in up.state.blocked_by() {
                            graph = graph.with_edge(&upstream, next);
                            if seen.insert(next.to_string()) {
                                frontier.push(next.to_string());
                            }
                        }
                        if seen.len() > MAX_GRAPH_TASKS {
                            return Err(CommandError::Domain(DomainError::LimitExceeded {
                                limit: "tasks reachable through blocks dependencies",
                                max: MAX_GRAPH_TASKS as u64,
                            }));
                        }
                    }
                }
                let command = TaskCommand::AddDependency { depends_on_id: depends_on_id.to_string(), kind, graph };
                let events = task.state.decide(&command, &ctx)?;
                let write =
                    StreamWrite { stream_id: task.stream_id.clone(), events: stamp(&task.state, &events, &ctx) };
                Ok((vec![(write, task.version)], reads))
            })
            .await?;
        check_replay(&results, &loaded.stream_id)?;
        let position = results.iter().map(|r| r.last_position()).max().unwrap_or(0);
        self.state.settle(position).await;
        Ok(position)
    }

    /// A worker's report that topic `report.topic_id` of task `id` ended (`completeTaskTopic`):
    /// the topic's operation and trigger come from the task, whether a human is waiting from
    /// the briefs read model; the task's rules decide the rest. Answers the position of the
    /// last event appended.
    pub async fn complete_task_topic(
        &self,
        id: &str,
        report: TopicReport,
        request_id: Option<&str>,
    ) -> Result<i64, ApiError> {
        let loaded = self.load_owned::<Task>(id).await?;
        let topic =
            loaded.state.topics.get(&report.topic_id).ok_or_else(|| ApiError::not_found("topic", &report.topic_id))?;
        let end = match report.status.as_str() {
            "completed" => TopicEnd::Done,
            "failed" => TopicEnd::Error {
                message: report
                    .error
                    .clone()
                    .filter(|e| !e.trim().is_empty())
                    .ok_or_else(|| ApiError::validation("outcome.error", "a failed topic needs its error"))?,
                code: report.error_code.clone(),
            },
            "canceled" => TopicEnd::Other { detail: "canceled".into() },
            other => {
                return Err(ApiError::validation(
                    "outcome.status",
                    format!("'{}' is not completed, failed or canceled", other.chars().take(40).collect::<String>()),
                ));
            }
        };
        let outcome = TopicOutcome {
            topic_id: report.topic_id.clone(),
            operation_id: topic.operation_id.clone(),
            end,
            run_trigger: topic.trigger,
            handoff: report.handoff,
            last_assistant_content: report.result,
            human_waiting: briefs::human_waiting(&self.state.db, &loaded.state.user_id, id).await?,
            brief_judgement: report.brief_judgement,
        };
        let out = self.command::<Task>(id, TaskCommand::CompleteTopic(outcome), None, request_id).await?;
        Ok(out.position)
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
        // The task is named in the run owner's namespace (the context's user).
        let task = self.state.handler.load_of::<Task>(&ctx.user_id, id).await?;
        // The run's budgets, when its agent can be told (otherwise the start refuses anyway).
        let budgets = match self.run_agent(&task.state).await {
            Ok(agent) if task.state.exists() => {
                let run = RunScope {
                    user_id: task.state.user_id.clone(),
                    agent_id: agent.agent_id,
                    task_id: Some(id.to_string()),
                    group_id: None,
                };
                budgets::facts(&budgets::standings(self.state, &run, ctx.now, false).await?)
            }
            _ => Vec::new(),
        };
        let results = self
            .state
            .handler
            .execute_multi(ctx, || async {
                let h = &self.state.handler;
                let task = h.load_stream::<Task>(&task.stream_id).await?;
                // The run's operation is named in the run owner's namespace.
                let operation = h.load_of::<Operation>(&ctx.user_id, operation_id).await?;
                if !operation.state.exists() {
                    agentlog_domain::budgets::refuse_start(&budgets)?;
                }
                let conversation = match topic_id.starts_with(SERVER_ID_MARK) {
                    true => {
                        Some(h.load_of::<Conversation>(&ctx.user_id, topic_id).await?).filter(|c| !c.state.exists())
                    }
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
                let mut start =
                    task_run::start_task_run(&task.state, &task.stream_id, &operation.state, &run, None, ctx)?;
                start.operation.stream_id.clone_from(&operation.stream_id);
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
        check_replay(&results, &task.stream_id)?;
        Ok((results.iter().map(|r| r.last_position()).max().unwrap_or(0), is_replay(&results)))
    }
}
