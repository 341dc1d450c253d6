//! `agentlog-replay run <operation-id> [--at <position>]`: a run's timeline.
//!
//! What belongs to a run: the events of its operation stream and of its sub-agents' (found
//! through `operation.child_spawned`, recursively); the messages of its conversation that name
//! one of these operations (and their edits and deletions); and, from the causal chains these
//! events sit in, their causes back to the source and everything they caused — signals,
//! actions, briefs, notifications. All of it in log order, each event with the root operation's
//! state after it (folded with the domain's `evolve`, so it is what the server saw then).
//!
//! The run's agent config is shown as it ran: the agent stream folded up to the config version
//! the run recorded (`operation.created`'s `agent.configVersion`), with the run's explicit
//! overrides (`agentOverrides`: model, provider) applied.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    process::ExitCode,
};

use agentlog_domain::{
    agents::{Agent, AgentConfig, AgentEvent},
    aggregate::{Aggregate, DomainEvent},
    envelope::RecordedEvent,
    operations::{Operation, OperationEvent},
    streams::StreamKind,
};
use agentlog_eventlog::{EventFilter, EventStore};
use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::{options::Global, output, store};

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The operation (run) id, without the `operation-` prefix.
    pub operation_id: String,
    /// The run's owner (operation ids are per owner); needed when two users hold a run by
    /// that id.
    #[arg(long)]
    pub owner: Option<String>,
    /// Stop the timeline at this position (inclusive).
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub at: Option<i64>,
}

/// Why an event is on a run's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An event of the run's own operation stream.
    Run,
    /// An event of a sub-agent's operation stream.
    SubAgent,
    /// A conversation event about the run's messages.
    Message,
    /// A cause of the run's events, up to the chain's source.
    Cause,
    /// Something the run's events caused (signals, actions, briefs, notifications…).
    Effect,
}

/// One event of the timeline.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// Why it is here.
    pub role: Role,
    /// The event.
    pub event: RecordedEvent,
    /// The root operation's state after this event.
    pub operation: OperationSummary,
}

/// The parts of an operation's state a timeline shows after each event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationSummary {
    /// Status (`idle`, `running`, …, `done`).
    pub status: String,
    /// Phase while running.
    pub phase: Option<String>,
    /// Steps recorded.
    pub step_count: u32,
    /// Why it stopped.
    pub completion_reason: Option<String>,
    /// Summed usage (absent fields were never measured).
    pub usage: Value,
}

impl OperationSummary {
    fn of(op: &Operation) -> Self {
        let text = |v: Value| v.as_str().map(str::to_string);
        Self {
            status: op.status.as_str().to_string(),
            phase: op.phase.and_then(|p| text(serde_json::to_value(p).unwrap_or(Value::Null))),
            step_count: op.step_count,
            completion_reason: op.completion_reason.and_then(|r| text(serde_json::to_value(r).unwrap_or(Value::Null))),
            usage: serde_json::to_value(op.usage).unwrap_or(Value::Null),
        }
    }

    fn short(&self) -> String {
        let mut s = self.status.clone();
        if let Some(p) = &self.phase {
            s.push('/');
            s.push_str(p);
        }
        s.push_str(&format!(" steps={}", self.step_count));
        if let Some(r) = &self.completion_reason {
            s.push_str(&format!(" reason={r}"));
        }
        s
    }
}

/// A run's timeline.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// The root operation.
    pub operation_id: String,
    /// Its sub-agents (all descendants), in the order they were found.
    pub sub_agents: Vec<String>,
    /// The position the timeline stops at, when asked.
    pub at: Option<i64>,
    /// The events, in log order.
    pub entries: Vec<TimelineEntry>,
    /// The root operation's full state at the end of the timeline.
    pub state: Value,
    /// The agent config the run ran under (`None` before `operation.created` or when the
    /// roster holds no such version).
    pub agent_config: Option<AgentConfigUsed>,
}

/// The exact agent config a run ran under.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfigUsed {
    /// The agent.
    pub agent_id: String,
    /// The config version the run recorded.
    pub config_version: u64,
    /// The roster's settings the run's starter overrode (`model`, `provider`).
    pub overrides: Vec<String>,
    /// The config at that version, overrides applied: slug, title, model, provider, systemRole,
    /// plugins (the tools), kind, ….
    pub config: AgentConfig,
}

impl AgentConfigUsed {
    fn lines(&self) -> String {
        let c = &self.config;
        let none = || "-".to_string();
        let overridden = if self.overrides.is_empty() {
            String::new()
        } else {
            format!(" (overridden: {})", self.overrides.join(", "))
        };
        format!(
            "agent {} config v{}: model={} provider={}{overridden}\ntools: [{}]\nsystem role: {}\n",
            self.agent_id,
            self.config_version,
            c.model.clone().unwrap_or_else(none),
            c.provider.clone().unwrap_or_else(none),
            c.plugins.join(", "),
            c.system_role.clone().unwrap_or_else(none),
        )
    }
}

/// The config `op` ran under, from its agent's stream.
async fn agent_config_used(store: &dyn EventStore, op: &Operation) -> anyhow::Result<Option<AgentConfigUsed>> {
    let Some(spec) = op.spec.as_ref() else { return Ok(None) };
    let agent_ref = &spec.agent;
    // Agent ids are per owner: the run's owner's stream, else (a built-in, or a log from before
    // ids were per owner) the global one.
    let owned = Agent::KIND.owned_stream_id(&op.user_id, &agent_ref.agent_id);
    let mut events = store::read_stream(store, &owned).await?;
    if events.is_empty() {
        events = store::read_stream(store, &Agent::KIND.stream_id(&agent_ref.agent_id)).await?;
    }
    let mut agent = Agent::default();
    for e in events {
        let typed = AgentEvent::decode(&e.event_type, e.schema_version, &e.payload)
            .with_context(|| format!("decoding {} at position {}", e.event_type, e.position))?;
        agent = agent.evolve(&typed);
        if agent.version >= agent_ref.config_version {
            break;
        }
    }
    if agent.version != agent_ref.config_version {
        return Ok(None);
    }
    let mut config = agent.config;
    for field in &spec.agent_overrides {
        match field.as_str() {
            "model" => config.model = agent_ref.model.clone(),
            "provider" => config.provider = agent_ref.provider.clone(),
            _ => {}
        }
    }
    Ok(Some(AgentConfigUsed {
        agent_id: agent_ref.agent_id.clone(),
        config_version: agent_ref.config_version,
        overrides: spec.agent_overrides.clone(),
        config,
    }))
}

/// The events of `owner`'s conversation `topic`: its owned stream, or the global one written
/// before topic ids were per owner when that one is `owner`'s.
async fn conversation_events(store: &dyn EventStore, owner: &str, topic: &str) -> anyhow::Result<Vec<RecordedEvent>> {
    let global = store::read_stream(store, &StreamKind::Conversation.stream_id(topic)).await?;
    if global.first().is_some_and(|e| e.user_id() == owner) {
        return Ok(global);
    }
    store::read_stream(store, &StreamKind::Conversation.owned_stream_id(owner, topic)).await
}

/// The stream of `owner`'s run `id`: its owned stream, or the global one written before
/// operation ids were per owner when that one is `owner`'s.
async fn operation_stream(store: &dyn EventStore, owner: &str, id: &str) -> anyhow::Result<String> {
    let global = StreamKind::Operation.stream_id(id);
    let first = store.read_stream(&global, 1, 1).await.context("reading the log")?;
    if first.first().is_some_and(|e| e.user_id() == owner) {
        return Ok(global);
    }
    Ok(StreamKind::Operation.owned_stream_id(owner, id))
}

/// The stream of run `id` when no owner is named: its global stream, else the one owned
/// stream of that id (two users holding it: name the owner).
async fn find_operation_stream(store: &dyn EventStore, id: &str) -> anyhow::Result<String> {
    let global = StreamKind::Operation.stream_id(id);
    if !store.read_stream(&global, 1, 1).await.context("reading the log")?.is_empty() {
        return Ok(global);
    }
    let mut filter = EventFilter::types(["operation.created"]);
    filter.stream_prefix = Some("operation@".into());
    // A page of runs' creations at a time, keeping only the streams of that id: what is held
    // does not grow with the log.
    let mut streams: BTreeSet<String> = BTreeSet::new();
    store::for_each_page(store, 0, None, &filter, async |page| {
        streams.extend(
            page.into_iter()
                .map(|e| e.stream_id)
                .filter(|s| StreamKind::parse(s).is_some_and(|(_, found)| found == id)),
        );
        Ok(())
    })
    .await?;
    match (streams.pop_first(), streams.is_empty()) {
        (Some(only), true) => Ok(only),
        (Some(_), false) => bail!("several users hold an operation `{id}`: name its owner with --owner"),
        (None, _) => Ok(global),
    }
}

/// The operation ids a stream's `operation.child_spawned` events name.
fn children_of(events: &[RecordedEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.event_type == "operation.child_spawned")
        .filter_map(|e| e.payload.get("childOperationId").and_then(Value::as_str).map(str::to_string))
        .collect()
}

/// Build the timeline of `operation_id` (`owner`'s; without an owner, the one run by that id).
pub async fn timeline(
    store: &dyn EventStore,
    operation_id: &str,
    owner: Option<&str>,
    at: Option<i64>,
) -> anyhow::Result<Timeline> {
    let root_stream = match owner {
        Some(owner) => operation_stream(store, owner, operation_id).await?,
        None => find_operation_stream(store, operation_id).await?,
    };
    let root_events = store::read_stream(store, &root_stream).await?;
    if root_events.is_empty() {
        bail!("no operation `{operation_id}`: stream `{root_stream}` has no events");
    }
    // 1. the run and its sub-agents, breadth first (a cycle cannot loop: ids are visited once)
    let mut roles: HashMap<Uuid, Role> = HashMap::new();
    let mut collected: BTreeMap<i64, RecordedEvent> = BTreeMap::new();
    let mut ops: Vec<String> = vec![operation_id.to_string()];
    let mut seen_ops: HashSet<String> = ops.iter().cloned().collect();
    // (owner, topic): topic ids are per owner, a run's topic is its owner's.
    let mut topics: BTreeSet<(String, String)> = BTreeSet::new();
    let mut i = 0;
    while i < ops.len() {
        // Sub-agents are named in the run owner's namespace.
        let events = if i == 0 {
            root_events.clone()
        } else {
            let owner = root_events.first().map(RecordedEvent::user_id).unwrap_or_default();
            store::read_stream(store, &operation_stream(store, owner, &ops[i]).await?).await?
        };
        let role = if i == 0 { Role::Run } else { Role::SubAgent };
        for child in children_of(&events) {
            if seen_ops.insert(child.clone()) {
                ops.push(child);
            }
        }
        for e in events {
            if e.event_type == "operation.created"
                && let Some(topic) = e.payload.get("topicId").and_then(Value::as_str)
            {
                topics.insert((e.user_id().to_string(), topic.to_string()));
            }
            roles.insert(e.event_id, role);
            collected.insert(e.position, e);
        }
        i += 1;
    }
    // 2. the messages of its conversations that belong to these operations
    for (owner, topic) in &topics {
        let mut messages: HashSet<String> = HashSet::new();
        for e in conversation_events(store, owner, topic).await? {
            let names_op = e.payload.get("operationId").and_then(Value::as_str).is_some_and(|op| seen_ops.contains(op));
            let message = e.payload.get("messageId").and_then(Value::as_str);
            if names_op && let Some(m) = message {
                messages.insert(m.to_string());
            }
            if names_op || message.is_some_and(|m| messages.contains(m)) {
                roles.insert(e.event_id, Role::Message);
                collected.insert(e.position, e);
            }
        }
    }
    // 3. causes and effects in the chains of everything so far
    let roots: BTreeSet<Uuid> = collected.values().map(|e| e.metadata.chain.root_source_id).collect();
    for root in roots {
        let chain = store::read_all(store, 0, None, &EventFilter::all().with_root_source(root)).await?;
        let by_id: HashMap<Uuid, &RecordedEvent> = chain.iter().map(|e| (e.event_id, e)).collect();
        let mut inside: HashSet<Uuid> = collected.values().map(|e| e.event_id).collect();
        // causes: walk each collected event's parents up to the source
        let starts: Vec<Uuid> = chain.iter().filter(|e| inside.contains(&e.event_id)).map(|e| e.event_id).collect();
        for start in starts {
            let mut cursor = by_id.get(&start).and_then(|e| e.metadata.chain.parent_node_id);
            while let Some(parent) = cursor {
                let Some(e) = by_id.get(&parent) else { break };
                if !inside.insert(parent) {
                    break;
                }
                roles.insert(parent, Role::Cause);
                collected.insert(e.position, (*e).clone());
                cursor = e.metadata.chain.parent_node_id;
            }
        }
        // effects: in log order a child comes after its parent, so one pass finds them all
        for e in &chain {
            let from_run = e.metadata.chain.parent_node_id.is_some_and(|p| {
                inside.contains(&p)
                    && matches!(roles.get(&p), Some(Role::Run | Role::SubAgent | Role::Message | Role::Effect))
            });
            if from_run && !inside.contains(&e.event_id) {
                inside.insert(e.event_id);
                roles.insert(e.event_id, Role::Effect);
                collected.insert(e.position, e.clone());
            }
        }
    }
    // 4. in log order, with the root operation's state after each event
    let mut op = Operation::default();
    let mut entries = Vec::with_capacity(collected.len());
    for (position, event) in collected {
        if at.is_some_and(|p| position > p) {
            break;
        }
        if event.stream_id == root_stream {
            let typed = OperationEvent::decode(&event.event_type, event.schema_version, &event.payload)
                .with_context(|| format!("decoding {} at position {position}", event.event_type))?;
            op = op.evolve(&typed);
        }
        let role = roles.get(&event.event_id).copied().unwrap_or(Role::Effect);
        entries.push(TimelineEntry { role, event, operation: OperationSummary::of(&op) });
    }
    let agent_config = agent_config_used(store, &op).await?;
    Ok(Timeline {
        operation_id: operation_id.to_string(),
        sub_agents: ops[1..].to_vec(),
        at,
        entries,
        state: serde_json::to_value(&op).context("encoding the operation's state")?,
        agent_config,
    })
}

/// Run `run`.
pub async fn run(global: &Global, args: &Args) -> anyhow::Result<ExitCode> {
    let store = store::open(&global.database, store::Access::Read).await?;
    let result = timeline(&*store, &args.operation_id, args.owner.as_deref(), args.at).await;
    store.close().await;
    let t = result?;
    if global.json {
        output::print_json(&t)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut table =
        output::Table::new(["POSITION", "TIME", "ROLE", "STREAM", "VER", "TYPE", "OPERATION AFTER", "DETAIL"]);
    for e in &t.entries {
        let role = serde_json::to_value(e.role).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        table.row([
            e.event.position.to_string(),
            e.event.recorded_at.format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
            role,
            e.event.stream_id.clone(),
            e.event.stream_version.to_string(),
            e.event.event_type.clone(),
            e.operation.short(),
            output::summarize(&e.event.payload),
        ]);
    }
    let mut text = format!(
        "run {} — {} events, {} sub-agent(s){}\n",
        t.operation_id,
        t.entries.len(),
        t.sub_agents.len(),
        t.at.map_or(String::new(), |p| format!(", up to position {p}"))
    );
    if let Some(config) = &t.agent_config {
        text.push_str(&config.lines());
    }
    text.push_str(&table.render());
    output::print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}
