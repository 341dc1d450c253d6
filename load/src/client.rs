//! Sending mutations: one GraphQL-over-HTTP request, its answer classified, and the retries a
//! real client would make — a CONFLICT (a concurrent writer won) or CONVERSATION_BUSY where the
//! call site says so, and a request carrying a `requestId` again after the connection failed
//! (the server answers a repeated request id without writing twice). Every attempt is counted;
//! every acknowledged mutation is recorded.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};

use crate::budget::Budget;
use crate::error::LoadError;
use crate::record::Recorder;
use crate::rng::Rng;
use crate::stats::Stats;
use crate::stats::TRANSPORT;
use crate::target::Target;

/// The server's code for "my database cannot be reached right now".
pub const UNAVAILABLE: &str = "UNAVAILABLE";
/// Most times a refused call is sent again.
const MAX_REFUSAL_RETRIES: u32 = 8;
/// Most times an idempotent call is sent again after the connection failed.
const MAX_TRANSPORT_RETRIES: u32 = 5;

/// The server's answer to one request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Data and no errors: acknowledged.
    Data(Value),
    /// An error answer, with its `extensions.code`.
    Refused {
        /// The code.
        code: String,
        /// The message.
        message: String,
    },
    /// No GraphQL answer at all (refused or reset connection, timeout, a body that is not JSON).
    Transport(String),
}

/// A GraphQL-over-HTTP connection pool to one server, or to several instances on one
/// database: then each request goes to the next instance in turn, skipping for a moment one
/// that just gave no answer (it may be restarting).
#[derive(Debug, Clone)]
pub struct Gql {
    http: reqwest::Client,
    targets: Arc<[Target]>,
    next: Arc<AtomicUsize>,
    /// Per target: until when (milliseconds since `epoch`) it is skipped.
    down_until: Arc<[AtomicU64]>,
    epoch: Instant,
}

/// How long an instance that gave no answer is skipped.
const DOWN_FOR: Duration = Duration::from_millis(500);

impl Gql {
    /// A client for `targets` (at least one); each request waits at most `timeout`.
    pub fn new(targets: Vec<Target>, timeout: Duration) -> Result<Self, LoadError> {
        if targets.is_empty() {
            return Err(LoadError::Config("no server to load".into()));
        }
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| LoadError::Setup(format!("HTTP client: {e}")))?;
        let down_until = targets.iter().map(|_| AtomicU64::new(0)).collect();
        Ok(Self { http, targets: targets.into(), next: Arc::default(), down_until, epoch: Instant::now() })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The next target in turn that is not being skipped (the next in turn when all are).
    fn pick(&self) -> usize {
        let n = self.targets.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = self.now_ms();
        (0..n).map(|k| (first + k) % n).find(|&i| self.down_until[i].load(Ordering::Relaxed) <= now).unwrap_or(first)
    }

    /// Send one query or mutation.
    pub async fn post(&self, token: &str, query: &str, variables: &Value) -> Answer {
        let i = self.pick();
        let answer = self.post_to(&self.targets[i], token, query, variables).await;
        if matches!(answer, Answer::Transport(_)) {
            let until = self.now_ms().saturating_add(u64::try_from(DOWN_FOR.as_millis()).unwrap_or(u64::MAX));
            self.down_until[i].store(until, Ordering::Relaxed);
        }
        answer
    }

    async fn post_to(&self, target: &Target, token: &str, query: &str, variables: &Value) -> Answer {
        let body = json!({"query": query, "variables": variables});
        let response = match self.http.post(&target.graphql).bearer_auth(token).json(&body).send().await {
            Ok(r) => r,
            Err(e) => return Answer::Transport(e.to_string()),
        };
        let status = response.status();
        let value: Value = match response.json().await {
            Ok(v) => v,
            Err(e) => return Answer::Transport(format!("HTTP {status}: {e}")),
        };
        if let Some(first) = value.get("errors").and_then(Value::as_array).and_then(|e| e.first()) {
            return Answer::Refused {
                code: first["extensions"]["code"].as_str().unwrap_or("UNKNOWN").to_string(),
                message: first["message"].as_str().unwrap_or_default().to_string(),
            };
        }
        match value.get("data") {
            Some(d) if !d.is_null() => Answer::Data(d.clone()),
            _ => Answer::Refused { code: "NO_DATA".into(), message: format!("HTTP {status} without data") },
        }
    }

    /// Is a server ready (`/readyz`: up, its database reachable, its read models caught up)?
    /// With several instances: is the one the next request goes to ready.
    pub async fn ready(&self) -> bool {
        let i = self.pick();
        let ready = matches!(self.http.get(&self.targets[i].readyz).send().await, Ok(r) if r.status().is_success());
        if !ready {
            let until = self.now_ms().saturating_add(u64::try_from(DOWN_FOR.as_millis()).unwrap_or(u64::MAX));
            self.down_until[i].store(until, Ordering::Relaxed);
        }
        ready
    }
}

/// What the whole run shares.
pub struct Shared {
    /// The connection pool.
    pub gql: Gql,
    /// The bounds.
    pub budget: Budget,
    /// Where acknowledged mutations go.
    pub recorder: Recorder,
    /// Prefix of every id this run creates, so runs never collide.
    pub run_id: String,
    /// Longest a client waits for an unreachable server.
    pub outage_limit: Duration,
}

/// Which refusals a call site sends again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    conflict: bool,
    busy: bool,
}

impl Retry {
    /// Never: the refusal is the answer (a lost claim race, a resolved brief).
    pub const NEVER: Retry = Retry { conflict: false, busy: false };
    /// CONFLICT: a concurrent writer moved the stream; nothing was written, try again.
    pub const CONFLICT: Retry = Retry { conflict: true, busy: false };
    /// CONFLICT and CONVERSATION_BUSY (wait for the conversation's operation to finish).
    pub const CONFLICT_OR_BUSY: Retry = Retry { conflict: true, busy: true };

    fn covers(self, code: &str) -> bool {
        (self.conflict && code == "CONFLICT") || (self.busy && code == "CONVERSATION_BUSY")
    }
}

/// One mutation to send.
pub struct Call<'a> {
    /// Its name, for the figures and the record.
    pub op: &'static str,
    /// The GraphQL document; it selects `position` on its one root field.
    pub query: &'a str,
    /// Its variables.
    pub variables: Value,
    /// Which refusals are sent again.
    pub retry: Retry,
    /// It carries a `requestId`: safe to send again when the connection failed.
    pub idempotent: bool,
}

/// What identifies a mutation's effect in the log.
#[derive(Debug, Clone, Default)]
pub struct Effect {
    /// The streams it writes.
    pub streams: Vec<String>,
    /// The ids it created or acted on.
    pub ids: Map<String, Value>,
}

impl Effect {
    /// An effect on `stream`.
    pub fn on(stream: impl Into<String>) -> Self {
        Self { streams: vec![stream.into()], ids: Map::new() }
    }

    /// Also on `stream`.
    pub fn and(mut self, stream: impl Into<String>) -> Self {
        self.streams.push(stream.into());
        self
    }

    /// With id `name` = `value`.
    pub fn id(mut self, name: &str, value: &str) -> Self {
        self.ids.insert(name.to_string(), Value::String(value.to_string()));
        self
    }
}

/// Why a mutation did not go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The budget is spent: stop.
    Spent,
    /// The server refused with this code (after any retries).
    Refused(String),
    /// No answer (the server may or may not have applied it).
    Transport,
    /// The record file could not be written.
    Record(String),
}

/// One client: its figures, its choices and the shared run.
pub struct Session {
    /// The run.
    pub shared: Arc<Shared>,
    /// Its index.
    pub client: usize,
    /// Mutations it has sent (retries included): its place on the run's schedule.
    sends: u64,
    /// Its figures.
    pub stats: Stats,
    /// Its choices.
    pub rng: Rng,
}

impl Session {
    /// A client of the run.
    pub fn new(shared: Arc<Shared>, client: usize, seed: u64) -> Self {
        Self { shared, client, sends: 0, stats: Stats::default(), rng: Rng::new(seed, client as u64) }
    }

    /// An id unique to this run and client: `<run>-<client><kind><n>`.
    pub fn id(&self, kind: &str, n: u64) -> String {
        format!("{}-{}{kind}{n}", self.shared.run_id, self.client)
    }

    /// Send `call` as `token`; its data when acknowledged (and then recorded with `effect`).
    pub async fn mutate(&mut self, token: &str, call: Call<'_>, effect: Effect) -> Result<Value, Failure> {
        let (mut refusals, mut transports) = (0u32, 0u32);
        loop {
            let Some(due) = self.shared.budget.due(self.client, self.sends) else {
                return Err(Failure::Spent);
            };
            tokio::time::sleep_until(due.into()).await;
            if !self.shared.budget.take() {
                return Err(Failure::Spent);
            }
            self.sends += 1;
            let started = Instant::now();
            let answer = self.shared.gql.post(token, call.query, &call.variables).await;
            match answer {
                Answer::Data(data) => {
                    self.stats.ack(call.op, started.elapsed());
                    let position = data
                        .as_object()
                        .and_then(|o| o.values().next())
                        .map_or(0, |v| v.get("position").and_then(Value::as_i64).unwrap_or(0));
                    self.shared
                        .recorder
                        .record(self.client, call.op, position, &effect.streams, &effect.ids)
                        .map_err(|e| Failure::Record(e.to_string()))?;
                    return Ok(data);
                }
                // The server is up but its database is not: like a lost connection, wait for
                // it to be ready and send an idempotent call again.
                Answer::Refused { code, message } if code == UNAVAILABLE => {
                    self.stats.error(call.op, &code);
                    tracing::debug!(op = call.op, %message, "database unavailable");
                    let back = self.wait_for_server().await;
                    if !back || !call.idempotent || transports >= MAX_TRANSPORT_RETRIES {
                        return Err(Failure::Refused(code));
                    }
                    transports += 1;
                    self.stats.retry(call.op);
                }
                Answer::Refused { code, message } => {
                    self.stats.error(call.op, &code);
                    tracing::debug!(op = call.op, %code, %message, "refused");
                    if !call.retry.covers(&code) || refusals >= MAX_REFUSAL_RETRIES {
                        return Err(Failure::Refused(code));
                    }
                    refusals += 1;
                    self.stats.retry(call.op);
                    let wait = (10u64 << refusals.min(5)) + self.rng.below(20);
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                Answer::Transport(error) => {
                    self.stats.error(call.op, TRANSPORT);
                    tracing::debug!(op = call.op, %error, "no answer");
                    let back = self.wait_for_server().await;
                    if !back || !call.idempotent || transports >= MAX_TRANSPORT_RETRIES {
                        return Err(Failure::Transport);
                    }
                    transports += 1;
                    self.stats.retry(call.op);
                }
            }
        }
    }

    /// Wait until the server answers again (it may be restarting); false when it stays away
    /// longer than the outage limit or the budget runs out meanwhile.
    pub async fn wait_for_server(&mut self) -> bool {
        let until = Instant::now() + self.shared.outage_limit;
        loop {
            if self.shared.gql.ready().await {
                return true;
            }
            if Instant::now() >= until || self.shared.budget.spent() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50 + self.rng.below(100))).await;
        }
    }
}
