//! What the application is made of ([`App`]: the log, the command handler, the read models,
//! [`Settings`]) and what a request handler adds ([`AppState`]: tokens, quotas, [`ApiLimits`]).

use std::{sync::Arc, time::Duration};

use agentlog_eventlog::{CommandHandler, EventStore, StoreOptions};
use agentlog_projections::{ProjectionRunner, ReadDb, conversations::ConversationTrees};

use crate::{auth::Tokens, deltas::DeltaHub, metrics::Metrics, quota::Quota, relay::DeltaRelay, shutdown::Shutdown};

/// The HTTP and websocket front's limits: what one request, connection or user may take.
#[derive(Debug, Clone)]
pub struct ApiLimits {
    /// Largest request body, bytes.
    pub max_body_bytes: usize,
    /// Deepest query.
    pub max_depth: usize,
    /// Deepest document that only introspects (`__schema`, `__type`, `__typename` at its
    /// root): graphql-js's full introspection query is 13 deep (15 from version 17), and
    /// GraphiQL and code generators send it. Still counted in complexity and selections.
    pub max_introspection_depth: usize,
    /// Most complex query.
    pub max_complexity: usize,
    /// Most fields a document may select, each fragment spread counted as the fields it stands
    /// for; checked on the parsed document before anything else (`graphql::admission`).
    pub max_selections: usize,
    /// Largest page (`first`).
    pub max_page_size: usize,
    /// Projection lag (events) beyond which `/readyz` says not ready.
    pub ready_lag_events: i64,
    /// Most subscriptions open at once, all kinds together; one more is refused with LIMIT.
    /// Each live event costs CPU per matching subscription, and that CPU is taken from the
    /// writers: this caps the fan-out's share (RELIABILITY.md, "1,000 subscribers").
    pub max_subscriptions: usize,
    /// Most subscriptions one user may have open at once (below `max_subscriptions`, so one
    /// user cannot take every place).
    pub max_subscriptions_per_user: usize,
    /// Messages one user may stream (`publishMessageDelta`) at once.
    pub max_streams_per_user: usize,
    /// Websocket connections one user may hold at once.
    pub max_connections_per_user: usize,
    /// Websockets without a token one remote address may hold at once (before their
    /// `connection_init` names a caller); one more upgrade is refused with 429 (LIMIT).
    pub max_anonymous_connections_per_address: usize,
    /// Websockets without a token the server holds at once, all addresses together.
    pub max_anonymous_connections: usize,
    /// How long a websocket may wait before its `connection_init`; then it is closed (4408).
    pub connection_init_timeout: Duration,
    /// Largest answer to a query or mutation over HTTP, and largest subscription result over a
    /// websocket, bytes; a larger one is replaced by a LIMIT error (a subscription goes on).
    pub max_response_bytes: usize,
    /// How long a query may run; then it is stopped (its database work dropped) and answered
    /// with LIMIT. Mutations are not cut off: their outcome must not be left in doubt.
    pub query_timeout: Duration,
    /// Most items one `reportBatch` may carry; a longer batch is refused (VALIDATION) before
    /// anything is loaded or decided.
    pub max_batch_items: usize,
    /// Most rollup cells one `analytics` report may read; a larger report is refused with
    /// LIMIT (narrow its range, filters or `groupBy`).
    pub max_analytics_cells: usize,
}

impl Default for ApiLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 2 * 1024 * 1024,
            max_depth: 12,
            max_introspection_depth: 16,
            max_complexity: 2_000,
            max_selections: 2_000,
            max_page_size: 500,
            ready_lag_events: 50_000,
            max_subscriptions: 10_000,
            max_subscriptions_per_user: 1_000,
            max_streams_per_user: 100,
            max_connections_per_user: 100,
            max_anonymous_connections_per_address: 20,
            max_anonymous_connections: 1_000,
            connection_init_timeout: Duration::from_secs(10),
            max_response_bytes: 16 * 1024 * 1024,
            query_timeout: Duration::from_secs(30),
            max_batch_items: 500,
            max_analytics_cells: agentlog_projections::analytics::MAX_CELLS,
        }
    }
}

/// The server's default SQLite memory map, MiB: SQLite's own ceiling on Linux (it maps at most
/// 2,147,418,112 bytes unless built otherwise). Every commit empties the other connections'
/// page caches (WAL), so without a map a mutation on a large log reads its index pages again
/// with `pread` copies, a cost that grows with the file (BENCHMARKS.md, "Mutation latency at
/// size"); mapped, that is a memory access.
pub const DEFAULT_SQLITE_MMAP_MIB: u64 = 2048;

/// The default of [`Settings::websocket_nice`]: with 1,000 subscribers on two cores, requests'
/// median latency was 1.26–1.50× theirs without subscribers (1.75–2.02× at 0), delivery p99
/// 24–53 ms (18–29 ms at 0; RELIABILITY.md, "1,000 subscribers").
pub const DEFAULT_WEBSOCKET_NICE: i32 = 5;

/// The default of [`Settings::slow_request`], in milliseconds (`--log-requests-over-ms`).
pub const DEFAULT_SLOW_REQUEST_MS: u64 = 1000;

/// How the application behaves, whoever calls it (a request, a reactor, a clock pass).
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long a mutation waits for its read models (read-your-writes).
    pub read_your_writes: Duration,
    /// Sub-agent levels a run may have below its top-level run (LIMIT beyond).
    pub max_subagent_depth: u32,
    /// Archived notifications older than this leave the inbox read model (None: kept).
    pub notification_retention: Option<Duration>,
    /// How often the retention pass runs (and the granularity of its cut-off).
    pub notification_purge_every: Duration,
    /// PostgreSQL: the `statement_timeout` of the server's database connections (None: none).
    /// The database cancels a statement running longer, so a query the server stopped cannot
    /// keep its connection busy; a cancelled statement is answered with LIMIT and writes nothing.
    pub statement_timeout: Option<Duration>,
    /// How often the log is polled for other instances' commits when nothing wakes it sooner
    /// (PostgreSQL's LISTEN/NOTIFY wakes it at once; on SQLite the poll is the only way).
    pub log_poll_interval: Duration,
    /// SQLite: MiB of the database file each connection reads through a memory map
    /// (`StoreOptions::sqlite_mmap_mib`; 0: off).
    pub sqlite_mmap_mib: u64,
    /// How much nicer than the process the websocket threads (`sockets`) run, -20 to 19; 0:
    /// as the rest of the process. Above 0, a burst of fan-out yields the cores to the
    /// requests' threads: writers wait less for it and subscribers wait more (RELIABILITY.md,
    /// "1,000 subscribers").
    pub websocket_nice: i32,
    /// A GraphQL request over HTTP that takes at least this long is logged (`warn`, with its
    /// operation type, root field and milliseconds); None: none is.
    pub slow_request: Option<Duration>,
    /// Label sets each GenAI histogram on `/metrics` keeps; measurements with new ones beyond
    /// count in its overflow series (`crate::genai_metrics`).
    pub max_genai_series: usize,
    /// The SHA-256 of a secret that reads `/metrics` besides an admin token (a scraper's, so it
    /// needs no API token); None: admin tokens only.
    pub metrics_token_sha256: Option<[u8; 32]>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            read_your_writes: Duration::from_secs(5),
            max_subagent_depth: agentlog_domain::rules::operation_start::DEFAULT_MAX_SUBAGENT_DEPTH,
            notification_retention: Some(Duration::from_secs(30 * 24 * 3600)),
            notification_purge_every: Duration::from_secs(3600),
            statement_timeout: Some(Duration::from_secs(30)),
            log_poll_interval: StoreOptions::default().poll_interval,
            sqlite_mmap_mib: DEFAULT_SQLITE_MMAP_MIB,
            websocket_nice: DEFAULT_WEBSOCKET_NICE,
            slow_request: Some(Duration::from_millis(DEFAULT_SLOW_REQUEST_MS)),
            max_genai_series: crate::genai_metrics::DEFAULT_MAX_SERIES,
            metrics_token_sha256: None,
        }
    }
}

/// The application's services: what use cases, reactors and clock passes work with.
#[derive(Clone)]
pub struct App {
    /// The log.
    pub store: Arc<dyn EventStore>,
    /// Runs commands against the log.
    pub handler: CommandHandler,
    /// Keeps the read models.
    pub runner: ProjectionRunner,
    /// The read-model database.
    pub db: ReadDb,
    /// Parsed conversation trees, refreshed from the messages that changed.
    pub trees: Arc<ConversationTrees>,
    /// Live partial content of messages being written.
    pub deltas: DeltaHub,
    /// The same, to and from the other server instances on the database (PostgreSQL).
    pub relay: DeltaRelay,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// How it behaves.
    pub settings: Settings,
    /// The database's secret mixed into lease tokens (`server_secrets`).
    pub lease_key: agentlog_domain::context::LeaseKey,
}

impl App {
    /// Wait until the read models include `position` (bounded): a mutation's answer then reads
    /// its own writes.
    pub async fn settle(&self, position: i64) {
        if position > 0
            && let Err(e) = self.runner.wait_for(position, self.settings.read_your_writes).await
        {
            tracing::warn!(error = %e, position, "read models lag behind a mutation");
        }
    }
}

/// What a request handler has: the application and what the HTTP and websocket front adds
/// (tokens, per-user and per-address quotas, request limits, draining). Use cases and
/// reactors see only the [`App`] (this derefs to it).
#[derive(Clone)]
pub struct AppState {
    /// The application.
    pub app: App,
    /// Bearer tokens.
    pub tokens: Tokens,
    /// Open subscriptions per user.
    pub subscriptions: Quota,
    /// Open websocket connections per user.
    pub connections: Quota,
    /// Open websockets without a caller yet, per remote address and all together.
    pub anonymous: Quota,
    /// Limits.
    pub limits: ApiLimits,
    /// Draining before a stop.
    pub shutdown: Shutdown,
    /// The runtime websocket connections run on.
    pub sockets: crate::sockets::Sockets,
    /// GraphQL documents parsed lately, by text.
    pub parsed: Arc<crate::graphql::parsed::ParsedDocuments>,
    /// Read snapshots of the read models, one per query request.
    pub snapshots: agentlog_projections::Snapshots,
}

impl std::ops::Deref for AppState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.app
    }
}
