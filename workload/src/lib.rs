//! A realistic, deterministic event log over every aggregate, for determinism tests and rebuild
//! benchmarks: users with their own agents chat (branches, edits, threads, tool calls), run
//! tasks with dependencies, topics and hand-offs, get briefs and notifications, keep cron jobs
//! and chat groups, and feed the signal bus; runs claim, step, ask humans, spawn sub-agents,
//! are cancelled with cascades or expire.
//!
//! Every decision goes through the domain's own `decide` (and cross-aggregate rules) with a
//! context whose time and ids come from the seed, so the same [`WorkloadConfig`] always gives
//! the same events, ids and payloads.
//!
//! ```no_run
//! # async fn demo(store: &dyn agentlog_eventlog::EventStore) -> Result<(), Box<dyn std::error::Error>> {
//! use agentlog_workload::{Workload, WorkloadConfig};
//! let workload = Workload::generate(&WorkloadConfig { min_events: 5_000, ..WorkloadConfig::default() })?;
//! let head = workload.append_to(store).await?;
//! println!("{} events up to position {head}", workload.stats.events);
//! # Ok(()) }
//! ```
//!
//! The generator plays rounds of simulated time. Each round every live story (one actor's
//! thread of decisions) may propose one decision; decisions of a round write disjoint streams
//! (a proposal that collides is dropped and proposed again next round), so a round is one
//! atomic multi-stream append.

mod conversation;
mod cron;
mod group;
mod inbox;
mod rng;
mod roster;
mod run;
mod signal;
mod story;
mod task;
mod world;

use std::collections::{BTreeMap, HashMap, HashSet};

use agentlog_domain::streams::StreamKind;
use agentlog_eventlog::{EventLogError, EventStore, ExpectedVersion, StreamAppend};
use chrono::{DateTime, TimeZone, Utc};

use self::{
    story::{Gen, Poll, Story},
    world::World,
};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// Seeds every choice, id and payload.
    pub seed: u64,
    /// The simulated clock's start.
    pub start: DateTime<Utc>,
    /// How many users act.
    pub users: usize,
    /// New stories stop once this many events exist; running ones then finish.
    pub min_events: usize,
    /// Simulated seconds per round.
    pub round_secs: i64,
    /// Most stories one user has going at once.
    pub stories_per_user: usize,
    /// Rounds allowed after `min_events` for running stories to finish.
    pub drain_rounds: u64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            seed: 7,
            start: Utc.with_ymd_and_hms(2026, 11, 2, 8, 0, 0).single().unwrap_or(DateTime::UNIX_EPOCH),
            users: 6,
            min_events: 5_000,
            round_secs: 20,
            stories_per_user: 6,
            drain_rounds: 600,
        }
    }
}

/// Why generation stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The configuration cannot produce a log.
    #[error("invalid workload configuration: {0}")]
    Config(&'static str),
}

/// Counts describing a generated log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadStats {
    /// Events generated.
    pub events: usize,
    /// Decisions (one atomic multi-stream write each).
    pub decisions: usize,
    /// Rounds played.
    pub rounds: u64,
    /// Streams written.
    pub streams: usize,
    /// Events per stream kind (`operation`, `task`, …).
    pub by_kind: BTreeMap<String, usize>,
    /// Events per event type.
    pub by_type: BTreeMap<String, usize>,
    /// Proposals the domain refused (the story was dropped), with the reason.
    pub refused: Vec<String>,
    /// Stories still running when the drain rounds ran out.
    pub unfinished: usize,
    /// Aggregate instances the generator still tracked at the end (finished stories are
    /// forgotten, so this stays small).
    pub tracked: usize,
}

/// A generated log: its rounds, each one atomic multi-stream append, in order.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The appends of each round.
    pub rounds: Vec<Vec<StreamAppend>>,
    /// What it holds.
    pub stats: WorkloadStats,
}

/// The kinds of story the director starts for a user, with their weights.
const STORY_WEIGHTS: [u64; 6] = [34, 28, 14, 8, 6, 4];

impl Workload {
    /// Generate the log `config` describes.
    pub fn generate(config: &WorkloadConfig) -> Result<Self, WorkloadError> {
        let mut rounds = Vec::new();
        let stats = Self::play(config, |round| rounds.push(round))?;
        Ok(Self { rounds, stats })
    }

    /// Generate the log `config` describes, handing each round to `sink` as soon as it is
    /// decided (the same rounds, in the same order, as [`Workload::generate`]), so a caller can
    /// append while the simulation goes on and never holds the whole log in memory.
    pub fn play(config: &WorkloadConfig, sink: impl FnMut(Vec<StreamAppend>)) -> Result<WorkloadStats, WorkloadError> {
        if config.users == 0 || config.stories_per_user == 0 {
            return Err(WorkloadError::Config("at least one user with at least one story"));
        }
        if config.round_secs <= 0 {
            return Err(WorkloadError::Config("rounds must move the clock forward"));
        }
        Ok(Director::new(config).run(sink))
    }

    /// Append every round, in order (one atomic append per round). Returns the head position.
    pub async fn append_to(&self, store: &dyn EventStore) -> Result<i64, EventLogError> {
        self.append_rounds(store, 0..self.rounds.len()).await
    }

    /// The rounds merged `rounds_per_batch` at a time into one multi-stream append each: a
    /// stream's parts are joined in order under the expected version of its first part, and the
    /// streams keep the order in which the batch first wrote them. Fewer, larger appends load a
    /// log much faster; within a batch, an effect in a stream written earlier may then precede
    /// its cause in another stream (each stream's own order is kept).
    pub fn batches(&self, rounds_per_batch: usize) -> Vec<Vec<StreamAppend>> {
        self.rounds
            .chunks(rounds_per_batch.max(1))
            .map(|rounds| {
                let mut merged: Vec<StreamAppend> = Vec::new();
                let mut index: HashMap<&str, usize> = HashMap::new();
                for append in rounds.iter().flatten() {
                    match index.get(append.stream_id.as_str()) {
                        Some(&i) => merged[i].events.extend(append.events.iter().cloned()),
                        None => {
                            index.insert(&append.stream_id, merged.len());
                            merged.push(append.clone());
                        }
                    }
                }
                merged
            })
            .collect()
    }

    /// Append the rounds in `range`, in order (each round one atomic append, queued together so
    /// the log commits many per transaction). Returns the head position.
    pub async fn append_rounds(
        &self,
        store: &dyn EventStore,
        range: std::ops::Range<usize>,
    ) -> Result<i64, EventLogError> {
        let rounds = self.rounds.get(range).unwrap_or_default().to_vec();
        for answer in store.append_in_order(rounds).await {
            answer?;
        }
        store.head_position().await
    }
}

/// A story and the user it belongs to.
struct Live {
    user: usize,
    story: Box<dyn Story>,
    /// Inbox habits go on for ever; they stop when the log is big enough.
    endless: bool,
}

/// Starts stories, plays rounds, and collects the appends.
struct Director {
    config: WorkloadConfig,
    g: Gen,
    world: World,
    users: Vec<String>,
    live: Vec<Live>,
    stats: WorkloadStats,
}

impl Director {
    fn new(config: &WorkloadConfig) -> Self {
        let users = (0..config.users).map(|u| format!("user-{u}")).collect();
        Self {
            config: config.clone(),
            g: Gen::new(config.seed, config.start),
            world: World::default(),
            users,
            live: vec![Live { user: 0, story: Box::new(roster::BootStory::new()), endless: false }],
            stats: WorkloadStats::default(),
        }
    }

    fn run(mut self, mut sink: impl FnMut(Vec<StreamAppend>)) -> WorkloadStats {
        let mut drained = 0;
        loop {
            let growing = self.stats.events < self.config.min_events;
            if growing {
                self.start_stories();
            } else {
                self.live.retain(|l| !l.endless);
                drained += 1;
                if self.live.is_empty() || drained > self.config.drain_rounds {
                    break;
                }
            }
            if let Some(round) = self.play_round() {
                sink(round);
            }
            self.g.next_round(self.config.round_secs);
        }
        self.stats.rounds = self.g.round();
        self.stats.unfinished = self.live.len();
        self.stats.tracked = self.world.tracked();
        self.stats
    }

    /// The director's part of a round: every user's first agents and inbox, then now and then a
    /// new story for a user with room for one.
    fn start_stories(&mut self) {
        if self.g.round() == 0 {
            return; // the boot registrations come first
        }
        for u in 0..self.users.len() {
            let user = self.users[u].clone();
            if self.g.round() == 1 {
                self.push(u, Box::new(inbox::InboxStory::new(&user)), true);
                let agent = roster::AgentStory::new(&mut self.g, &user);
                self.push(u, Box::new(agent), false);
                continue;
            }
            let running = self.live.iter().filter(|l| l.user == u && !l.endless).count();
            if running >= self.config.stories_per_user || !self.g.rng.chance(35) {
                continue;
            }
            let kind = self.g.rng.weighted(&STORY_WEIGHTS);
            if let Some(story) = self.new_story(kind, &user) {
                self.push(u, story, false);
            }
        }
    }

    fn push(&mut self, user: usize, story: Box<dyn Story>, endless: bool) {
        self.live.push(Live { user, story, endless });
    }

    fn new_story(&mut self, kind: usize, user: &str) -> Option<Box<dyn Story>> {
        let agent = roster::pick_agent(&self.world, &mut self.g, user)?;
        let agent_ref = agent.run_ref().ok()?;
        Some(match kind {
            0 => Box::new(conversation::ConversationStory::new(&mut self.g, user, agent_ref)),
            1 => {
                let assignee = (!self.g.rng.chance(20)).then(|| agent_ref.agent_id.clone());
                Box::new(task::TaskStory::new(&mut self.g, user, assignee))
            }
            2 => Box::new(signal::SignalStory::new(&mut self.g, user, agent_ref)),
            3 => Box::new(cron::CronStory::new(&mut self.g, user, agent_ref)),
            4 => {
                let others: Vec<String> = self
                    .world
                    .runnable_agents(user)
                    .into_iter()
                    .filter(|a| *a != agent_ref.agent_id)
                    .map(str::to_string)
                    .collect();
                let mut members = Vec::new();
                for _ in 0..self.g.rng.range(2, 3) {
                    if let Some(m) = self.g.rng.pick(&others).filter(|m| !members.contains(*m)) {
                        members.push(m.clone());
                    }
                }
                let spare = self.g.rng.pick(&others).filter(|s| !members.contains(*s)).cloned();
                if members.is_empty() {
                    return None;
                }
                Box::new(group::GroupStory::new(&mut self.g, user, agent_ref, members, spare))
            }
            _ => Box::new(roster::AgentStory::new(&mut self.g, user)),
        })
    }

    /// Poll every live story once; apply the decisions that write streams no earlier decision
    /// of this round wrote. Returns the round's appends (none when nothing was decided).
    fn play_round(&mut self) -> Option<Vec<StreamAppend>> {
        let mut taken: HashSet<String> = HashSet::new();
        let mut appends_of_round = Vec::new();
        let mut spawned_all = Vec::new();
        let mut i = 0;
        while i < self.live.len() {
            let user = self.live[i].user;
            let polled = self.live[i].story.poll(&self.world, &mut self.g);
            let done = match polled {
                Ok(Poll::Wait) => false,
                Ok(Poll::Done) => true,
                Err(e) => {
                    self.stats.refused.push(e.to_string());
                    true
                }
                Ok(Poll::Decide(decision)) => {
                    let streams = decision.streams();
                    if streams.iter().any(|s| taken.contains(s)) {
                        false
                    } else {
                        taken.extend(streams);
                        let appends = self.world.apply(decision);
                        let mut spawned = Vec::new();
                        self.live[i].story.applied(&appends, &self.world, &mut self.g, &mut spawned);
                        spawned_all.extend(spawned.into_iter().map(|s| (user, s)));
                        self.count(&appends);
                        appends_of_round.extend(appends);
                        false
                    }
                }
            };
            if done {
                let finished = self.live.remove(i);
                finished.story.forget(&mut self.world);
            } else {
                i += 1;
            }
        }
        for (user, story) in spawned_all {
            self.push(user, story, false);
        }
        (!appends_of_round.is_empty()).then_some(appends_of_round)
    }

    fn count(&mut self, appends: &[StreamAppend]) {
        self.stats.decisions += 1;
        for a in appends {
            // A stream's first append expects no stream, and the world never writes a stream
            // again once it forgot it: counting these counts the streams without keeping a set
            // of every stream id the log ever had.
            if a.expected == ExpectedVersion::NoStream {
                self.stats.streams += 1;
            }
            let kind = StreamKind::parse(&a.stream_id).map_or("other", |(k, _)| k.prefix());
            *self.stats.by_kind.entry(kind.to_string()).or_default() += a.events.len();
            for e in &a.events {
                *self.stats.by_type.entry(e.event_type.clone()).or_default() += 1;
            }
            self.stats.events += a.events.len();
        }
    }
}
