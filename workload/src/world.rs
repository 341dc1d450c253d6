//! The generator's in-memory world: every live aggregate's state and stream version, what the
//! stories pick from (agents, open briefs, recent notifications), and the one place where a
//! decision becomes stamped events and appends.

use std::collections::{HashMap, VecDeque};

use agentlog_domain::stamp::Stamper;
use agentlog_domain::streams::StreamKind;
use agentlog_domain::{
    agents::{Agent, AgentEvent},
    aggregate::{Aggregate, StreamEvents},
    briefs::{Brief, BriefEvent},
    context::Context,
    conversations::{Conversation, ConversationEvent},
    cron_jobs::{CronEvent, CronJob},
    groups::{Group, GroupEvent},
    notifications::{NotificationEvent, Notifications},
    operations::{Operation, OperationEvent},
    signal::source::{Source, SourceEvent},
    tasks::{Task, TaskEvent},
};
use agentlog_eventlog::{ExpectedVersion, StreamAppend};

/// One aggregate instance and the version of its stream.
#[derive(Debug, Clone, Default)]
struct Versioned<A> {
    state: A,
    version: i64,
}

/// Every instance of one aggregate the world still tracks.
#[derive(Debug)]
pub(crate) struct Streams<A: Aggregate> {
    map: HashMap<String, Versioned<A>>,
    empty: A,
}

impl<A: Aggregate> Default for Streams<A> {
    fn default() -> Self {
        Self { map: HashMap::new(), empty: A::default() }
    }
}

impl<A: Aggregate> Streams<A> {
    /// The state of `id` (the empty state when unknown).
    pub(crate) fn get(&self, id: &str) -> &A {
        self.map.get(id).map_or(&self.empty, |v| &v.state)
    }

    /// Stop tracking `id` (its story is over; nothing will write to it again).
    pub(crate) fn forget(&mut self, id: &str) {
        self.map.remove(id);
    }

    /// How many instances are tracked.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    fn write(&mut self, id: &str, events: &[A::Event], stamper: &mut Stamper<'_>) -> StreamAppend {
        let entry = self.map.entry(id.to_string()).or_default();
        let (state, stamped) = stamper.stamp_owned(std::mem::take(&mut entry.state), events);
        entry.state = state;
        let expected = ExpectedVersion::from_version(entry.version);
        entry.version += events.len() as i64;
        // The global form for every kind, per-owner ones too: a log from before ids were per
        // owner, which the read models and the server still read.
        StreamAppend::new(A::KIND.stream_id(id), expected, stamped)
    }
}

/// One stream's part of a decision.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// `operation-<id>`.
    Operation(String, Vec<OperationEvent>),
    /// `conversation-<topicId>` (the global form, as `Tracked::write`).
    Conversation(String, Vec<ConversationEvent>),
    /// `task-<id>`.
    Task(String, Vec<TaskEvent>),
    /// `brief-<id>`.
    Brief(String, Vec<BriefEvent>),
    /// `notification-<userId>`.
    Notification(String, Vec<NotificationEvent>),
    /// `cron-<id>`.
    Cron(String, Vec<CronEvent>),
    /// `group-<id>`.
    Group(String, Vec<GroupEvent>),
    /// `agent-<id>`.
    Agent(String, Vec<AgentEvent>),
    /// `source-<id>`.
    Source(String, Vec<SourceEvent>),
}

/// The instance id of a cross-aggregate rule's part.
fn instance_of<E>(part: &StreamEvents<E>) -> String {
    StreamKind::parse(&part.stream_id).map_or_else(|| part.stream_id.clone(), |(_, id)| id.to_string())
}

impl Part {
    /// An operation part from a cross-aggregate rule.
    pub(crate) fn operation(part: StreamEvents<OperationEvent>) -> Self {
        Self::Operation(instance_of(&part), part.events)
    }
    /// A conversation part from a cross-aggregate rule.
    pub(crate) fn conversation(part: StreamEvents<ConversationEvent>) -> Self {
        Self::Conversation(instance_of(&part), part.events)
    }
    /// A task part from a cross-aggregate rule.
    pub(crate) fn task(part: StreamEvents<TaskEvent>) -> Self {
        Self::Task(instance_of(&part), part.events)
    }
    /// A brief part from a cross-aggregate rule.
    pub(crate) fn brief(part: StreamEvents<BriefEvent>) -> Self {
        Self::Brief(instance_of(&part), part.events)
    }

    fn stream_id(&self) -> String {
        match self {
            Self::Operation(id, _) => Operation::KIND.stream_id(id),
            Self::Conversation(id, _) => Conversation::KIND.stream_id(id),
            Self::Task(id, _) => Task::KIND.stream_id(id),
            Self::Brief(id, _) => Brief::KIND.stream_id(id),
            Self::Notification(id, _) => Notifications::stream_id(id),
            // Global streams, as `Tracked::write` (a log from before ids were per owner).
            Self::Cron(id, _) => CronJob::KIND.stream_id(id),
            Self::Group(id, _) => Group::KIND.stream_id(id),
            Self::Agent(id, _) => Agent::KIND.stream_id(id),
            Self::Source(id, _) => Source::KIND.stream_id(id),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Self::Operation(_, e) => e.is_empty(),
            Self::Conversation(_, e) => e.is_empty(),
            Self::Task(_, e) => e.is_empty(),
            Self::Brief(_, e) => e.is_empty(),
            Self::Notification(_, e) => e.is_empty(),
            Self::Cron(_, e) => e.is_empty(),
            Self::Group(_, e) => e.is_empty(),
            Self::Agent(_, e) => e.is_empty(),
            Self::Source(_, e) => e.is_empty(),
        }
    }
}

/// A decision: its context and the events it decided, per stream, in stamping order.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    /// Time, command id, cause, actor, owner.
    pub ctx: Context,
    /// The streams it writes.
    pub parts: Vec<Part>,
}

impl Decision {
    /// A single-stream decision.
    pub(crate) fn one(ctx: Context, part: Part) -> Self {
        Self { ctx, parts: vec![part] }
    }

    /// The streams it writes (parts without events write nothing).
    pub(crate) fn streams(&self) -> Vec<String> {
        self.parts.iter().filter(|p| !p.is_empty()).map(Part::stream_id).collect()
    }
}

/// How many recent notification ids per user the world remembers for "mark read" and friends.
const RECENT_NOTIFICATIONS: usize = 64;

/// Everything the stories read and the generator writes.
#[derive(Debug, Default)]
pub(crate) struct World {
    /// Operations.
    pub ops: Streams<Operation>,
    /// Conversations.
    pub conversations: Streams<Conversation>,
    /// Tasks.
    pub tasks: Streams<Task>,
    /// Briefs.
    pub briefs: Streams<Brief>,
    /// Each user's notification stream.
    pub notifications: Streams<Notifications>,
    /// Cron jobs.
    pub crons: Streams<CronJob>,
    /// Groups.
    pub groups: Streams<Group>,
    /// Agents (never forgotten: runs refer to them).
    pub agents: Streams<Agent>,
    /// Signal sources.
    pub sources: Streams<Source>,
    /// Live agents each user may run (their own; built-ins are in `builtin_agents`).
    pub user_agents: HashMap<String, Vec<String>>,
    /// Built-in agents, registered first.
    pub builtin_agents: Vec<String>,
    /// Briefs not yet resolved, per user, oldest first.
    pub open_briefs: HashMap<String, VecDeque<String>>,
    /// The most recent notification ids, per user.
    pub recent_notifications: HashMap<String, VecDeque<String>>,
    /// Tasks created, per user (the candidates for dependencies), most recent last.
    pub recent_tasks: HashMap<String, VecDeque<String>>,
}

impl World {
    /// Stamp and apply `decision`: the appends, one per stream, with the version each stream
    /// was at.
    pub(crate) fn apply(&mut self, decision: Decision) -> Vec<StreamAppend> {
        let Decision { ctx, parts } = decision;
        let mut stamper = ctx.stamper();
        let mut appends = Vec::with_capacity(parts.len());
        for part in &parts {
            if part.is_empty() {
                continue;
            }
            self.index(part, &ctx);
            appends.push(match part {
                Part::Operation(id, e) => self.ops.write(id, e, &mut stamper),
                Part::Conversation(id, e) => self.conversations.write(id, e, &mut stamper),
                Part::Task(id, e) => self.tasks.write(id, e, &mut stamper),
                Part::Brief(id, e) => self.briefs.write(id, e, &mut stamper),
                Part::Notification(id, e) => self.notifications.write(id, e, &mut stamper),
                Part::Cron(id, e) => self.crons.write(id, e, &mut stamper),
                Part::Group(id, e) => self.groups.write(id, e, &mut stamper),
                Part::Agent(id, e) => self.agents.write(id, e, &mut stamper),
                Part::Source(id, e) => self.sources.write(id, e, &mut stamper),
            });
        }
        appends
    }

    /// Keep the pick lists current.
    fn index(&mut self, part: &Part, ctx: &Context) {
        match part {
            Part::Agent(id, events) => {
                for e in events {
                    match e {
                        AgentEvent::Registered(r) if r.agent.builtin => self.builtin_agents.push(id.clone()),
                        AgentEvent::Registered(r) => {
                            self.user_agents.entry(r.user_id.clone()).or_default().push(id.clone())
                        }
                        AgentEvent::Archived(_) => {
                            if let Some(list) = self.user_agents.get_mut(&ctx.user_id) {
                                list.retain(|a| a != id);
                            }
                        }
                        AgentEvent::ConfigUpdated(_) => {}
                    }
                }
            }
            Part::Brief(id, events) => {
                for e in events {
                    match e {
                        BriefEvent::Created(c) => {
                            self.open_briefs.entry(c.user_id.clone()).or_default().push_back(id.clone())
                        }
                        BriefEvent::Resolved(_) => {
                            if let Some(open) = self.open_briefs.get_mut(&ctx.user_id) {
                                open.retain(|b| b != id);
                            }
                        }
                        BriefEvent::Read(_) => {}
                    }
                }
            }
            Part::Notification(user, events) => {
                for e in events {
                    if let NotificationEvent::Created(c) = e {
                        let recent = self.recent_notifications.entry(user.clone()).or_default();
                        recent.push_back(c.notification_id.clone());
                        if recent.len() > RECENT_NOTIFICATIONS {
                            recent.pop_front();
                        }
                    }
                }
            }
            Part::Task(id, events) => {
                for e in events {
                    if let TaskEvent::Created(c) = e {
                        let recent = self.recent_tasks.entry(c.user_id.clone()).or_default();
                        recent.push_back(id.clone());
                        if recent.len() > 32 {
                            recent.pop_front();
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Stop tracking an operation and all its descendants.
    pub(crate) fn forget_operation_tree(&mut self, id: &str) {
        let mut queue = vec![id.to_string()];
        while let Some(op) = queue.pop() {
            queue.extend(self.ops.get(&op).child_ids().map(str::to_string));
            self.ops.forget(&op);
        }
    }

    /// The agents `user` may run: built-ins and their own live ones.
    pub(crate) fn runnable_agents(&self, user: &str) -> Vec<&str> {
        let own = self.user_agents.get(user).into_iter().flatten();
        self.builtin_agents.iter().chain(own).map(String::as_str).collect()
    }

    /// Tracked instances, for the generator's statistics.
    pub(crate) fn tracked(&self) -> usize {
        self.ops.len()
            + self.conversations.len()
            + self.tasks.len()
            + self.briefs.len()
            + self.crons.len()
            + self.groups.len()
            + self.sources.len()
    }
}
