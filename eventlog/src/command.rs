//! Command handling: load an aggregate's stream, decide, append with the expected version, and
//! retry (bounded) when another writer got there first.
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn agentlog_eventlog::EventStore>, ctx: agentlog_domain::context::Context) -> Result<(), agentlog_eventlog::CommandError> {
//! use agentlog_domain::briefs::{Brief, BriefCommand, BriefType, CreateBrief};
//! use agentlog_eventlog::CommandHandler;
//! let handler = CommandHandler::new(store);
//! let cmd = BriefCommand::Create(CreateBrief::new("b1", BriefType::Insight, "Title", "Summary"));
//! let outcome = handler.execute_of::<Brief>("u1", "b1", &cmd, &ctx).await?;
//! println!("brief at version {}", outcome.version);
//! # Ok(()) }
//! ```
//!
//! Long streams are not re-read on every command. The handler keeps the state it last folded or
//! wrote for recently used streams in memory ([`crate::state_cache`]) and reads only the events
//! after it; a stream it has not seen lately starts from its snapshot: every [`SNAPSHOT_EVERY`]
//! events the handler stores the folded state in `snapshots`. Both are caches: one that is
//! missing, stale or does not decode is ignored, and the events after it always come from the log.
//! [`CommandHandler::execute_cached`] goes one step further for a stream this handler wrote
//! last: it decides on the cached state with no read at all, and the append's expected version
//! tells whether that state was still the stream's.
//!
//! A retry decides again with the same [`Context`] — same command id, so same event ids. If an
//! earlier attempt did commit (its answer was lost), the log already holds the command's first
//! event id and the handler answers with what was stored instead of deciding twice, however
//! long ago that was. The same
//! holds for decisions over several streams ([`CommandHandler::execute_multi`]): the log is
//! searched for the command's event ids before anything is decided.

use std::sync::Arc;

use agentlog_domain::stamp::{StreamWrite, stamp};
use agentlog_domain::{
    aggregate::{Aggregate, DomainEvent},
    context::Context,
    envelope::RecordedEvent,
    error::DomainError,
    ids::may_start_stream,
};
use sqlx::Row;

use crate::{
    append::{AppendResult, ExpectedVersion, StreamAppend},
    applied::{applied_command, command_seen},
    command_counts::{CommandCounts, Counters},
    error::EventLogError,
    state_cache::{DEFAULT_CAPACITY, StateCache},
    store::{DatabasePool, EventStore},
};

/// Fold this many events past the last snapshot before taking a new one.
pub const SNAPSHOT_EVERY: i64 = 64;
/// Attempts a command gets when it keeps meeting concurrent writers.
pub const DEFAULT_ATTEMPTS: u32 = 8;

/// Why a command did not go through.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The domain refused it.
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// The log refused or failed.
    #[error(transparent)]
    Log(#[from] EventLogError),
    /// A stored event could not be decoded into its aggregate's events.
    #[error("stream `{stream_id}` holds an event that cannot be decoded at version {version}: {reason}")]
    Decode {
        /// The stream.
        stream_id: String,
        /// The event's stream version.
        version: i64,
        /// Why.
        reason: String,
    },
    /// Every attempt met a concurrent writer.
    #[error("gave up on stream `{stream_id}` after {attempts} concurrent-write conflicts")]
    Contended {
        /// The stream.
        stream_id: String,
        /// Attempts made.
        attempts: u32,
    },
}

/// An aggregate as loaded from its stream.
#[derive(Debug, Clone)]
pub struct Loaded<A> {
    /// The folded state.
    pub state: A,
    /// Its stream version (0 = the stream does not exist).
    pub version: i64,
    /// The stream.
    pub stream_id: String,
}

/// What a command did.
#[derive(Debug, Clone)]
pub struct CommandOutcome<A> {
    /// The state after the command.
    pub state: A,
    /// The stream version after the command.
    pub version: i64,
    /// Where the events landed (empty when the command decided nothing; for a replayed
    /// command, where the earlier attempt's events landed, marked `duplicate`).
    pub appended: Vec<AppendResult>,
    /// True when an earlier attempt of this very command had already been applied.
    pub replayed: bool,
}

impl<A> CommandOutcome<A> {
    /// The position of the last event the command appended (0 when none).
    pub fn last_position(&self) -> i64 {
        self.appended.iter().map(AppendResult::last_position).max().unwrap_or(0)
    }
}

/// Runs commands against the log.
#[derive(Clone)]
pub struct CommandHandler {
    pub(crate) store: Arc<dyn EventStore>,
    attempts: u32,
    pub(crate) cache: Arc<StateCache>,
    pub(crate) counters: Arc<Counters>,
}

impl CommandHandler {
    /// A handler over `store`.
    pub fn new(store: Arc<dyn EventStore>) -> Self {
        Self {
            store,
            attempts: DEFAULT_ATTEMPTS,
            cache: Arc::new(StateCache::new(DEFAULT_CAPACITY)),
            counters: Arc::default(),
        }
    }

    /// The same handler keeping the state of about `streams` recently used streams in memory
    /// (0: none; every load starts from the stream's snapshot).
    pub fn with_state_cache(mut self, streams: usize) -> Self {
        self.cache = Arc::new(StateCache::new(streams));
        self
    }

    /// The same handler with another retry bound.
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.store
    }

    /// What this handler (and its clones) did so far.
    pub fn counts(&self) -> CommandCounts {
        self.counters.read()
    }

    /// Load aggregate `A`'s instance `id` (a kind whose ids are global).
    pub async fn load<A: Aggregate>(&self, id: &str) -> Result<Loaded<A>, CommandError> {
        self.load_stream::<A>(&A::stream_id(id)).await
    }

    /// Load `owner`'s instance `id` of aggregate `A`, from [`Self::stream_of`].
    pub async fn load_of<A: Aggregate>(&self, owner: &str, id: &str) -> Result<Loaded<A>, CommandError> {
        self.load_stream::<A>(&self.stream_of::<A>(owner, id).await?).await
    }

    /// Load aggregate `A` from its stream `stream_id`.
    pub async fn load_stream<A: Aggregate>(&self, stream_id: &str) -> Result<Loaded<A>, CommandError> {
        let (state, version, _, _) = self.fold::<A>(stream_id, None).await?;
        Ok(Loaded { state, version, stream_id: stream_id.to_string() })
    }

    /// Aggregate `A` of stream `stream_id` as it was right after its event `version` (what a
    /// policy reacting to that event saw). The log never changes below a version, so a state
    /// cached or snapshotted at or before `version` is a valid start on any instance; only the
    /// events after it up to `version` are read.
    pub async fn state_at<A: Aggregate>(&self, stream_id: &str, version: i64) -> Result<A, CommandError> {
        let start = match self.cache.get::<A>(stream_id) {
            Some((state, at)) if at <= version => Some((state, at)),
            _ => read_snapshot::<A>(&self.store.database(), stream_id).await.filter(|(_, at)| *at <= version),
        };
        let (state, at) = start.unwrap_or_default();
        let (state, at, _) = self.fold_after(stream_id, state, at, version, None).await?;
        self.cache.put(stream_id, &state, at);
        Ok(state)
    }

    /// The stream of `owner`'s instance `id` of `A`. For a kind whose ids are per owner: the
    /// global stream `<kind>-<id>` written before ids were per owner, when it exists and its
    /// first event names `owner`; otherwise the owned stream `<kind>@<owner>/<id>`. Someone
    /// else's global stream is never `owner`'s. Other kinds, and an id every owner shares
    /// ([`Aggregate::shared_id`]): the global stream.
    pub async fn stream_of<A: Aggregate>(&self, owner: &str, id: &str) -> Result<String, CommandError> {
        if !A::KIND.per_owner() || A::shared_id(id) {
            return Ok(A::stream_id(id));
        }
        let owned = A::KIND.owned_stream_id(owner, id);
        if self.cache.holds::<A>(&owned) {
            // The owned stream is in use: it was chosen because no global one of `owner`'s
            // existed, and the choice stands (a global stream is never started any more).
            return Ok(owned);
        }
        let global = A::KIND.stream_id(id);
        let first = self.store.read_stream(&global, 1, 1).await?;
        Ok(match first.first() {
            Some(e) if e.user_id() == owner => global,
            _ => owned,
        })
    }

    /// Fold a stream, from the cached state or a snapshot when there is one; also reports
    /// whether `watch_id` is among the events folded after it, and whether the fold started
    /// from a cached state or snapshot (so earlier events were not seen).
    async fn fold<A: Aggregate>(
        &self,
        stream_id: &str,
        watch_id: Option<uuid::Uuid>,
    ) -> Result<(A, i64, bool, bool), CommandError> {
        let start = match self.cache.get::<A>(stream_id) {
            Some(cached) => Some(cached),
            None => read_snapshot::<A>(&self.store.database(), stream_id).await,
        };
        let partial = start.is_some();
        let (state, version) = start.unwrap_or_default();
        let (state, version, seen) = self.fold_after(stream_id, state, version, i64::MAX, watch_id).await?;
        self.cache.put(stream_id, &state, version);
        Ok((state, version, seen, partial))
    }

    /// Evolve `state`, the stream's at version `at`, with its events after `at` up to version
    /// `up_to`, a page at a time; the state, the version reached, and whether `watch_id` was
    /// among the events.
    async fn fold_after<A: Aggregate>(
        &self,
        stream_id: &str,
        mut state: A,
        mut at: i64,
        up_to: i64,
        watch_id: Option<uuid::Uuid>,
    ) -> Result<(A, i64, bool), CommandError> {
        const PAGE: usize = 1_000;
        let mut seen = false;
        while at < up_to {
            // A stream's versions have no gaps: a short page is its end.
            let want = usize::try_from(up_to - at).map_or(PAGE, |left| left.min(PAGE));
            let page = self.store.read_stream(stream_id, at + 1, want).await?;
            let Some(last) = page.last().map(|e| e.stream_version) else { break };
            for e in &page {
                seen |= watch_id == Some(e.event_id);
                state = state.evolve(&decode::<A>(stream_id, e)?);
            }
            at = last;
            if page.len() < want {
                break;
            }
        }
        Ok((state, at, seen))
    }

    /// Decide `command` on aggregate `A`'s instance `id` (a kind whose ids are global) and
    /// append what it decided.
    pub async fn execute<A: Aggregate>(
        &self,
        id: &str,
        command: &A::Command,
        ctx: &Context,
    ) -> Result<CommandOutcome<A>, CommandError> {
        self.execute_stream::<A>(&A::stream_id(id), command, ctx).await
    }

    /// [`Self::execute`] on `owner`'s instance `id`, in [`Self::stream_of`].
    pub async fn execute_of<A: Aggregate>(
        &self,
        owner: &str,
        id: &str,
        command: &A::Command,
        ctx: &Context,
    ) -> Result<CommandOutcome<A>, CommandError> {
        self.execute_stream::<A>(&self.stream_of::<A>(owner, id).await?, command, ctx).await
    }

    /// [`Self::execute`] on the aggregate in stream `stream_id`.
    pub async fn execute_stream<A: Aggregate>(
        &self,
        stream_id: &str,
        command: &A::Command,
        ctx: &Context,
    ) -> Result<CommandOutcome<A>, CommandError> {
        self.execute_from(stream_id.to_string(), None, command, ctx).await
    }

    /// [`Self::execute_stream`] on a state the caller has just loaded (to check who may act on
    /// it): the first attempt decides on it instead of reading the stream again; a concurrent
    /// writer is caught by the expected version, and the retry reads the stream.
    pub async fn execute_loaded<A: Aggregate>(
        &self,
        loaded: Loaded<A>,
        command: &A::Command,
        ctx: &Context,
    ) -> Result<CommandOutcome<A>, CommandError> {
        self.execute_from(loaded.stream_id, Some((loaded.state, loaded.version)), command, ctx).await
    }

    async fn execute_from<A: Aggregate>(
        &self,
        stream_id: String,
        mut loaded: Option<(A, i64)>,
        command: &A::Command,
        ctx: &Context,
    ) -> Result<CommandOutcome<A>, CommandError> {
        let first_id = ctx.first_event_id();
        for _ in 0..self.attempts {
            let (state, version, already) = match loaded.take() {
                // Loaded without looking for this command's events: look it up.
                Some((state, version)) => (state, version, command_seen(&*self.store, ctx).await?),
                None => {
                    let (state, version, mut already, partial) = self.fold::<A>(&stream_id, Some(first_id)).await?;
                    if !already && partial {
                        // The fold did not see the events before its start: look the command up.
                        already = command_seen(&*self.store, ctx).await?;
                    }
                    (state, version, already)
                }
            };
            if already {
                // Answer with where the first attempt's events landed, as it would have.
                let appended = applied_command(&*self.store, ctx).await?.unwrap_or_default();
                return Ok(CommandOutcome { state, version, appended, replayed: true });
            }
            let events = state.decide(command, ctx)?;
            if events.is_empty() {
                return Ok(CommandOutcome { state, version, appended: Vec::new(), replayed: false });
            }
            if version == 0 {
                may_start_stream(&stream_id, &ctx.actor)?;
            }
            let stamped = stamp(&state, &events, ctx);
            match self.store.append(&stream_id, ExpectedVersion::from_version(version), stamped).await {
                Ok(result) => return Ok(self.landed(&stream_id, state, version, &events, result).await),
                Err(e) if e.is_conflict() => self.counters.conflicted(),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CommandError::Contended { stream_id, attempts: self.attempts })
    }

    /// The outcome of `events`, decided on `state` at `version`, appended as `result`; the new
    /// state is cached (unless the append was a duplicate) and snapshotted when due.
    pub(crate) async fn landed<A: Aggregate>(
        &self,
        stream_id: &str,
        state: A,
        version: i64,
        events: &[A::Event],
        result: AppendResult,
    ) -> CommandOutcome<A> {
        let new_state = events.iter().fold(state, |s, e| s.evolve(e));
        let new_version = result.stream_version;
        if !result.duplicate {
            self.counters.appended();
            self.cache.put(stream_id, &new_state, new_version);
        }
        self.maybe_snapshot(stream_id, &new_state, version, new_version).await;
        CommandOutcome { state: new_state, version: new_version, replayed: result.duplicate, appended: vec![result] }
    }

    /// Run a decision that writes several streams atomically. `decide` loads what it needs
    /// (through this handler) and returns the writes, stamped with `ctx`, with the version each
    /// stream was loaded at; on a conflict it is called again, up to the retry bound.
    ///
    /// When an earlier attempt of `ctx`'s command is already in the log (a resent request
    /// whose answer was lost), `decide` is not called: the answer is what that attempt wrote,
    /// every result marked `duplicate`.
    pub async fn execute_multi<F, Fut>(&self, ctx: &Context, mut decide: F) -> Result<Vec<AppendResult>, CommandError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<(StreamWrite, i64)>, CommandError>>,
    {
        let mut last_stream = String::new();
        for _ in 0..self.attempts {
            // Checked on every attempt: a conflict may be the same request, resent, winning.
            if let Some(earlier) = applied_command(&*self.store, ctx).await? {
                return Ok(earlier);
            }
            let writes = decide().await?;
            let writes: Vec<(StreamWrite, i64)> = writes.into_iter().filter(|(w, _)| !w.events.is_empty()).collect();
            if writes.is_empty() {
                return Ok(Vec::new());
            }
            last_stream = writes[0].0.stream_id.clone();
            for (w, v) in &writes {
                if *v == 0 {
                    may_start_stream(&w.stream_id, &ctx.actor)?;
                }
            }
            let appends = writes
                .into_iter()
                .map(|(w, v)| StreamAppend::new(w.stream_id, ExpectedVersion::from_version(v), w.events))
                .collect();
            match self.store.append_multi(appends).await {
                Ok(results) => {
                    if !results.iter().any(|r| r.duplicate) {
                        self.counters.appended();
                    }
                    return Ok(results);
                }
                Err(e) if e.is_conflict() => self.counters.conflicted(),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CommandError::Contended { stream_id: last_stream, attempts: self.attempts })
    }

    /// [`Self::execute_multi`] for a decision that also rests on streams it reads but does not
    /// write: `decide` answers its writes and its reads (stream id, version read). The append
    /// holds each read stream at the version read (a guard part: checked, nothing written), so
    /// when one moved meanwhile the append is refused and the decision taken again on the new
    /// facts. Two decisions that each read what the other writes can then never both commit
    /// on stale facts. Answers the writes' results only.
    pub async fn execute_multi_reading<F, Fut>(
        &self,
        ctx: &Context,
        mut decide: F,
    ) -> Result<Vec<AppendResult>, CommandError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(Vec<(StreamWrite, i64)>, Vec<(String, i64)>), CommandError>>,
    {
        let mut last_stream = String::new();
        for _ in 0..self.attempts {
            if let Some(earlier) = applied_command(&*self.store, ctx).await? {
                return Ok(earlier);
            }
            let (writes, reads) = decide().await?;
            let writes: Vec<(StreamWrite, i64)> = writes.into_iter().filter(|(w, _)| !w.events.is_empty()).collect();
            if writes.is_empty() {
                return Ok(Vec::new());
            }
            last_stream = writes[0].0.stream_id.clone();
            let guards: Vec<StreamAppend> = reads
                .into_iter()
                .filter(|(stream, _)| !writes.iter().any(|(w, _)| &w.stream_id == stream))
                .map(|(stream, v)| StreamAppend::new(stream, ExpectedVersion::from_version(v), Vec::new()))
                .collect();
            let mut appends: Vec<StreamAppend> = writes
                .into_iter()
                .map(|(w, v)| StreamAppend::new(w.stream_id, ExpectedVersion::from_version(v), w.events))
                .collect();
            appends.extend(guards);
            match self.store.append_multi(appends).await {
                Ok(results) => {
                    if !results.iter().any(|r| r.duplicate) {
                        self.counters.appended();
                    }
                    return Ok(results.into_iter().filter(|r| !r.positions.is_empty()).collect());
                }
                Err(e) if e.is_conflict() => self.counters.conflicted(),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CommandError::Contended { stream_id: last_stream, attempts: self.attempts })
    }

    async fn maybe_snapshot<A: Aggregate>(&self, stream_id: &str, state: &A, before: i64, after: i64) {
        if after / SNAPSHOT_EVERY == before / SNAPSHOT_EVERY {
            return;
        }
        if let Err(e) = write_snapshot(&self.store.database(), stream_id, &snapshot_kind::<A>(), state, after).await {
            tracing::debug!(stream_id, error = %e, "snapshot not written (it is only a cache)");
        }
    }
}

/// Decode a recorded event into aggregate `A`'s event type.
pub fn decode<A: Aggregate>(stream_id: &str, e: &RecordedEvent) -> Result<A::Event, CommandError> {
    A::Event::decode(&e.event_type, e.schema_version, &e.payload).map_err(|err| CommandError::Decode {
        stream_id: stream_id.to_string(),
        version: e.stream_version,
        reason: err.to_string(),
    })
}

/// Fold a stream's recorded events into aggregate state, stopping after `at_position` if given.
pub fn fold_recorded<A: Aggregate>(
    events: &[RecordedEvent],
    at_position: Option<i64>,
) -> Result<(A, i64), CommandError> {
    let mut state = A::default();
    let mut version = 0;
    for e in events {
        if at_position.is_some_and(|p| e.position > p) {
            break;
        }
        state = state.evolve(&decode::<A>(&e.stream_id, e)?);
        version = e.stream_version;
    }
    Ok((state, version))
}

/// Events read at a time by [`fold_stream`].
const FOLD_PAGE: usize = 1_000;

/// Fold stream `stream_id` from its start, stopping after `at_position` if given, a page of
/// events at a time: what is held is one page and the state, however long the stream.
pub async fn fold_stream<A: Aggregate>(
    store: &(impl EventStore + ?Sized),
    stream_id: &str,
    at_position: Option<i64>,
) -> Result<(A, i64), CommandError> {
    let mut state = A::default();
    let mut version = 0;
    loop {
        let page = store.read_stream(stream_id, version + 1, FOLD_PAGE).await?;
        for e in &page {
            if at_position.is_some_and(|p| e.position > p) {
                return Ok((state, version));
            }
            state = state.evolve(&decode::<A>(stream_id, e)?);
            version = e.stream_version;
        }
        if page.len() < FOLD_PAGE {
            return Ok((state, version));
        }
    }
}

/// Snapshots are tagged with the aggregate and the code version that wrote them: a snapshot
/// written by other code is ignored, because its `evolve` may have folded differently.
fn snapshot_kind<A: Aggregate>() -> String {
    format!("{}@{}", A::KIND.prefix(), env!("CARGO_PKG_VERSION"))
}

async fn read_snapshot<A: Aggregate>(db: &DatabasePool, stream_id: &str) -> Option<(A, i64)> {
    let row = match db {
        DatabasePool::Sqlite(p) => sqlx::query("SELECT version, state FROM snapshots WHERE stream_id = ? AND kind = ?")
            .bind(stream_id)
            .bind(snapshot_kind::<A>())
            .fetch_optional(p)
            .await
            .ok()
            .flatten()
            .map(|r| (r.try_get::<i64, _>(0), r.try_get::<String, _>(1))),
        DatabasePool::Postgres(p) => {
            sqlx::query("SELECT version, state FROM snapshots WHERE stream_id = $1 AND kind = $2")
                .bind(stream_id)
                .bind(snapshot_kind::<A>())
                .fetch_optional(p)
                .await
                .ok()
                .flatten()
                .map(|r| (r.try_get::<i64, _>(0), r.try_get::<String, _>(1)))
        }
    }?;
    let (Ok(version), Ok(state)) = row else { return None };
    serde_json::from_str::<A>(&state).ok().map(|s| (s, version))
}

async fn write_snapshot<A: Aggregate>(
    db: &DatabasePool,
    stream_id: &str,
    kind: &str,
    state: &A,
    version: i64,
) -> Result<(), sqlx::Error> {
    let json = serde_json::to_string(state).map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
    let now = chrono::Utc::now().timestamp_micros();
    // Only move a snapshot forward: a slower writer must not replace a newer one.
    let sql = "INSERT INTO snapshots (stream_id, kind, version, state, taken_at) VALUES ($1, $2, $3, $4, $5) \
               ON CONFLICT (stream_id) DO UPDATE SET kind = excluded.kind, version = excluded.version, \
               state = excluded.state, taken_at = excluded.taken_at WHERE excluded.version > snapshots.version";
    match db {
        DatabasePool::Sqlite(p) => {
            let sql = sql.replace('$', "?");
            sqlx::query(&sql).bind(stream_id).bind(kind).bind(version).bind(json).bind(now).execute(p).await?;
        }
        DatabasePool::Postgres(p) => {
            sqlx::query(sql).bind(stream_id).bind(kind).bind(version).bind(json).bind(now).execute(p).await?;
        }
    }
    Ok(())
}
