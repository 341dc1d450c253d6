//! `agentlog`: the server binary.

use std::{net::SocketAddr, path::PathBuf};

use agentlog_api::{
    auth::{Role, Tokens},
    server::{ServeConfig, serve},
    state::{ApiLimits, Settings},
};
use agentlog_eventlog::{StoreOptions, open_store};
use agentlog_projections::ReadDb;
use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// The server's allocator: mimalloc. Requests, decoded events and read-model rows are built on
/// one thread and freed on another all the time; mimalloc's per-thread free lists take that
/// without the system allocator's arena locks and consolidation (BENCHMARKS.md, batched writes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// agentlog: the system of record for AI-agent operations.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Log level or filter (e.g. `info`, `agentlog_api=debug`).
    #[arg(long, env = "AGENTLOG_LOG", default_value = "info", global = true)]
    log: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[expect(clippy::large_enum_variant, reason = "parsed once at start; boxing the flags buys nothing")]
enum Command {
    /// Serve the GraphQL API (and the projections and reactors).
    Serve {
        /// `sqlite:…`, a file path, or `postgres://…`.
        #[arg(long, env = "AGENTLOG_DATABASE_URL", default_value = "sqlite:agentlog.db")]
        database: String,
        /// Address to listen on.
        #[arg(long, env = "AGENTLOG_BIND", default_value = "127.0.0.1:8080")]
        bind: SocketAddr,
        /// Where the first admin token is written (made when missing).
        #[arg(long, env = "AGENTLOG_DATA_DIR", default_value = ".")]
        data_dir: PathBuf,
        /// Most subscriptions open at once on this instance (all kinds together); one more is
        /// refused (LIMIT).
        #[arg(long, env = "AGENTLOG_MAX_SUBSCRIPTIONS", default_value_t = ApiLimits::default().max_subscriptions)]
        max_subscriptions: usize,
        /// Most subscriptions one user may have open at once; one more is refused (LIMIT).
        #[arg(long, env = "AGENTLOG_MAX_SUBSCRIPTIONS_PER_USER", default_value_t = ApiLimits::default().max_subscriptions_per_user)]
        max_subscriptions_per_user: usize,
        /// Most messages one user may stream (`publishMessageDelta`) at once (LIMIT beyond).
        #[arg(long, env = "AGENTLOG_MAX_STREAMS_PER_USER", default_value_t = ApiLimits::default().max_streams_per_user)]
        max_streams_per_user: usize,
        /// Most websocket connections one user may hold at once; one more is refused at
        /// `connection_init`.
        #[arg(long, env = "AGENTLOG_MAX_CONNECTIONS_PER_USER", default_value_t = ApiLimits::default().max_connections_per_user)]
        max_connections_per_user: usize,
        /// Export every run as an OpenTelemetry GenAI trace to this OTLP/HTTP collector
        /// (`http://host:4318`, or its `/v1/traces` URL); off when absent
        #[arg(long, env = "AGENTLOG_OTLP_ENDPOINT")]
        otlp_endpoint: Option<String>,
        /// A header sent with every OTLP export, `name=value` (repeatable; the variable takes a
        /// comma-separated list): a trace backend's credentials
        #[arg(long = "otlp-header", env = "AGENTLOG_OTLP_HEADERS", value_delimiter = ',', hide_env_values = true)]
        otlp_headers: Vec<String>,
        /// Most bytes in one OTLP export request (protobuf); a run with more spans goes out in
        /// several. Lower it to a collector's request-size limit
        #[arg(long, env = "AGENTLOG_OTLP_MAX_REQUEST_BYTES", default_value_t = agentlog_api::otlp::MAX_REQUEST_BYTES as u64, value_parser = clap::value_parser!(u64).range(1024..))]
        otlp_max_request_bytes: u64,
        /// Most websockets without a token one remote address may hold before their
        /// `connection_init` (429 beyond).
        #[arg(long, env = "AGENTLOG_MAX_ANONYMOUS_CONNECTIONS_PER_ADDRESS", default_value_t = ApiLimits::default().max_anonymous_connections_per_address)]
        max_anonymous_connections_per_address: usize,
        /// Most websockets without a token the server holds, all addresses together (429 beyond).
        #[arg(long, env = "AGENTLOG_MAX_ANONYMOUS_CONNECTIONS", default_value_t = ApiLimits::default().max_anonymous_connections)]
        max_anonymous_connections: usize,
        /// How long a websocket may wait before `connection_init`, milliseconds; then it is
        /// closed with 4408.
        #[arg(long, env = "AGENTLOG_CONNECTION_INIT_TIMEOUT_MS", default_value_t = 10_000)]
        connection_init_timeout_ms: u64,
        /// Largest answer over HTTP and largest subscription result over a websocket, bytes; a
        /// larger one is replaced by a LIMIT error (the subscription goes on).
        #[arg(long, env = "AGENTLOG_MAX_RESPONSE_BYTES", default_value_t = ApiLimits::default().max_response_bytes)]
        max_response_bytes: usize,
        /// Most rollup cells one `analytics` report may read; a larger report is refused with
        /// LIMIT.
        #[arg(long, env = "AGENTLOG_MAX_ANALYTICS_CELLS", default_value_t = ApiLimits::default().max_analytics_cells)]
        max_analytics_cells: usize,
        /// Most sub-agent levels below a top-level run; a deeper `spawnSubagent` (or group
        /// member run) is refused with LIMIT.
        #[arg(long, env = "AGENTLOG_MAX_SUBAGENT_DEPTH", default_value_t = Settings::default().max_subagent_depth)]
        max_subagent_depth: u32,
        /// How long a query may run, milliseconds; then it is stopped and answered with LIMIT.
        #[arg(long, env = "AGENTLOG_QUERY_TIMEOUT_MS", default_value_t = 30_000)]
        query_timeout_ms: u64,
        /// PostgreSQL: how long one database statement may run, milliseconds (0: no bound);
        /// the database then cancels it and frees its connection. SQLite has no such bound:
        /// a stopped query ends at its next row.
        #[arg(long, env = "AGENTLOG_STATEMENT_TIMEOUT_MS", default_value_t = 30_000)]
        statement_timeout_ms: u64,
        /// Archived notifications older than this leave the inbox (the log keeps them),
        /// seconds; 0 keeps them. Default 30 days.
        #[arg(long, env = "AGENTLOG_NOTIFICATION_RETENTION_SECS", default_value_t = 30 * 24 * 3600)]
        notification_retention_secs: u64,
        /// How often archived notifications past the retention are purged, seconds.
        #[arg(long, env = "AGENTLOG_NOTIFICATION_PURGE_EVERY_SECS", default_value_t = 3600)]
        notification_purge_every_secs: u64,
        /// Longest a shutdown (SIGTERM, Ctrl-C) may take, seconds: requests in flight are
        /// answered and new ones refused meanwhile; past it the process exits with status 1.
        #[arg(long, env = "AGENTLOG_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
        shutdown_timeout_secs: u64,
        /// How often the log is polled for other instances' commits, milliseconds (on
        /// PostgreSQL LISTEN/NOTIFY wakes an instance at once; the poll is the fallback).
        #[arg(long, env = "AGENTLOG_LOG_POLL_MS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
        log_poll_ms: u64,
        /// SQLite: MiB of the database file each connection reads through a memory map (0:
        /// off; SQLite maps at most ~2 GiB). Reads after other connections' commits then find
        /// their pages mapped rather than reading them again; the mapped pages count in
        /// resident memory as file pages the kernel may reclaim.
        #[arg(long, env = "AGENTLOG_SQLITE_MMAP_MIB", default_value_t = agentlog_api::state::DEFAULT_SQLITE_MMAP_MIB)]
        sqlite_mmap_mib: u64,
        /// How much nicer than the process the websocket threads run (-20 to 19; 0: as the
        /// process). Above 0, a burst of subscription traffic yields the cores to requests:
        /// writers' latency falls, subscribers' delivery latency rises. Below 0 needs
        /// CAP_SYS_NICE.
        #[arg(long, env = "AGENTLOG_WEBSOCKET_NICE", default_value_t = agentlog_api::state::DEFAULT_WEBSOCKET_NICE, allow_negative_numbers = true,
              value_parser = clap::value_parser!(i32).range(-20..=19))]
        websocket_nice: i32,
        /// Log a GraphQL request over HTTP that takes at least this many milliseconds (`warn`:
        /// its operation type, root field and duration); 0: every request, -1: none.
        #[arg(long, env = "AGENTLOG_LOG_REQUESTS_OVER_MS", default_value_t = agentlog_api::state::DEFAULT_SLOW_REQUEST_MS as i64, allow_negative_numbers = true,
              value_parser = clap::value_parser!(i64).range(-1..))]
        log_requests_over_ms: i64,
        /// Label sets each GenAI histogram on `/metrics` keeps (agent ids, models, providers
        /// and error types come from users); measurements with new ones beyond count in one
        /// series labelled `otel_metric_overflow="true"`.
        #[arg(long, env = "AGENTLOG_MAX_GENAI_SERIES", default_value_t = agentlog_api::genai_metrics::DEFAULT_MAX_SERIES,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        max_genai_series: usize,
        /// A secret (at least 16 characters) that reads `/metrics` as `Authorization: Bearer
        /// <secret>`, for a scraper that should hold no API token; an admin token reads it too.
        /// Unset: admin tokens only (its labels carry users' agent ids and models).
        #[arg(long, env = "AGENTLOG_METRICS_TOKEN", hide_env_values = true)]
        metrics_token: Option<String>,
    },
    /// Print the GraphQL schema (SDL).
    Schema,
    /// Manage bearer tokens.
    Token {
        /// The database (before or after the subcommand).
        #[arg(long, global = true, env = "AGENTLOG_DATABASE_URL", default_value = "sqlite:agentlog.db")]
        database: String,
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a token and print it (shown once).
    Create {
        /// The user it belongs to.
        #[arg(long)]
        user: String,
        /// Make it an admin token.
        #[arg(long)]
        admin: bool,
        /// A name to recognise it by.
        #[arg(long, default_value = "cli")]
        name: String,
    },
    /// List tokens, newest first: ids, names, owners, roles, times; never secrets.
    List {
        /// Only this user's tokens.
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke a token at once: requests with it are refused; servers close its websockets
    /// within seconds. Fails when there is no live token of that id.
    Revoke {
        /// Its id (`token list`).
        token_id: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut filter = EnvFilter::try_new(&cli.log).with_context(|| format!("bad --log filter `{}`", cli.log))?;
    if !cli.log.contains("sqlx") {
        // PostgreSQL's NOTICEs reach sqlx's log at INFO: every start's migration check said
        // "relation \"_sqlx_migrations\" already exists, skipping". A filter naming sqlx keeps them.
        filter = filter.add_directive("sqlx::postgres::notice=warn".parse().context("the notice filter")?);
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        // A log line that cannot be written (stderr on a full disk) is dropped: reporting it
        // with `eprintln!` would panic whichever task logged, the event log's writer included.
        .log_internal_errors(false)
        .init();
    match cli.command {
        Command::Serve {
            database,
            bind,
            data_dir,
            max_subscriptions,
            max_subscriptions_per_user,
            max_streams_per_user,
            max_connections_per_user,
            otlp_endpoint,
            otlp_headers,
            otlp_max_request_bytes,
            max_anonymous_connections_per_address,
            max_anonymous_connections,
            connection_init_timeout_ms,
            max_response_bytes,
            max_analytics_cells,
            max_subagent_depth,
            query_timeout_ms,
            statement_timeout_ms,
            notification_retention_secs,
            notification_purge_every_secs,
            shutdown_timeout_secs,
            log_poll_ms,
            sqlite_mmap_mib,
            websocket_nice,
            log_requests_over_ms,
            max_genai_series,
            metrics_token,
        } => {
            let metrics_token_sha256 = match metrics_token.as_deref().filter(|t| !t.is_empty()) {
                Some(t) if t.chars().count() < 16 => anyhow::bail!("--metrics-token must be at least 16 characters"),
                Some(t) => Some(agentlog_api::auth::secret_sha256(t)),
                None => None,
            };
            let limits = ApiLimits {
                max_subscriptions,
                max_subscriptions_per_user,
                max_streams_per_user,
                max_connections_per_user,
                max_anonymous_connections_per_address,
                max_anonymous_connections,
                connection_init_timeout: std::time::Duration::from_millis(connection_init_timeout_ms),
                max_response_bytes,
                max_analytics_cells,
                query_timeout: std::time::Duration::from_millis(query_timeout_ms),
                ..ApiLimits::default()
            };
            let settings = Settings {
                max_subagent_depth,
                statement_timeout: (statement_timeout_ms > 0)
                    .then(|| std::time::Duration::from_millis(statement_timeout_ms)),
                notification_retention: (notification_retention_secs > 0)
                    .then(|| std::time::Duration::from_secs(notification_retention_secs)),
                notification_purge_every: std::time::Duration::from_secs(notification_purge_every_secs.max(1)),
                log_poll_interval: std::time::Duration::from_millis(log_poll_ms),
                sqlite_mmap_mib,
                websocket_nice,
                slow_request: u64::try_from(log_requests_over_ms).ok().map(std::time::Duration::from_millis),
                max_genai_series,
                metrics_token_sha256,
                ..Settings::default()
            };
            let otlp = otlp_endpoint
                .as_deref()
                .map(|e| agentlog_api::otlp::OtlpConfig::new(e).with_headers(&otlp_headers))
                .transpose()
                .map_err(anyhow::Error::msg)?
                .map(|config| agentlog_api::otlp::OtlpConfig {
                    max_request_bytes: usize::try_from(otlp_max_request_bytes).unwrap_or(usize::MAX),
                    ..config
                });
            let shutdown_timeout = std::time::Duration::from_secs(shutdown_timeout_secs);
            serve(ServeConfig { database, bind, data_dir, limits, settings, otlp, shutdown_timeout }).await
        }
        Command::Schema => {
            print!("{}", agentlog_api::graphql::sdl());
            Ok(())
        }
        Command::Token { database, command } => token_command(&database, command).await,
    }
}

/// `agentlog token …`: on the database directly, as the server would.
async fn token_command(database: &str, command: TokenCommand) -> anyhow::Result<()> {
    let create = matches!(command, TokenCommand::Create { .. });
    // Only `create` may start a log (before a first `serve`, as scripts do) or migrate one, as
    // the `serve` it precedes would. `list` and `revoke` neither leave an empty log behind a
    // mistyped path nor change the schema under a live server of another build (0040 rewrites
    // `events`).
    if !create {
        if let Some(path) = agentlog_eventlog::missing_sqlite_file(database) {
            anyhow::bail!("no log at `{path}`: the file does not exist (pass --database or set AGENTLOG_DATABASE_URL)");
        }
        let refusal = agentlog_eventlog::schema_refusal(database, "agentlog")
            .await
            .with_context(|| format!("reading the schema of the log at {}", agentlog_eventlog::redact(database)))?;
        if let Some(why) = refusal {
            anyhow::bail!(why);
        }
    }
    // The log and the tokens' table only: no projections, relays or sockets for one statement.
    let options = StoreOptions { migrate: create, listen_notify: false, ..StoreOptions::default() };
    let store = open_store(database, options)
        .await
        .with_context(|| format!("opening the log at {}", agentlog_eventlog::redact(database)))?;
    let tokens = Tokens::new(ReadDb::from(store.database()));
    let done = match command {
        TokenCommand::Create { user, admin, name, .. } => {
            let role = if admin { Role::Admin } else { Role::User };
            tokens
                .create(&user, role, &name)
                .await
                .map(|token| println!("{}", token.secret))
                .map_err(anyhow::Error::from)
        }
        TokenCommand::List { user, .. } => {
            tokens.list(user.as_deref()).await.map(|list| print!("{}", token_table(&list))).map_err(anyhow::Error::from)
        }
        TokenCommand::Revoke { token_id, .. } => match tokens.revoke(&token_id, None).await {
            Ok(true) => {
                println!("revoked {token_id}");
                Ok(())
            }
            Ok(false) => Err(anyhow::anyhow!("no live token {token_id}")),
            Err(e) => Err(e.into()),
        },
    };
    store.close().await;
    done
}

/// Tokens as a table, one per line, tab-separated under a header (times to the second, UTC).
fn token_table(list: &[agentlog_api::auth::TokenInfo]) -> String {
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| {
        t.map_or("-".to_string(), |t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
    };
    // Names and user ids come from users: a tab or a line break in one must not forge a column or a row.
    let cell = |s: &str| s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>();
    let mut out = String::from("TOKEN ID\tNAME\tUSER\tROLE\tCREATED\tLAST USED\tREVOKED\n");
    for t in list {
        let role = if t.admin { "admin" } else { "user" };
        out.push_str(&format!(
            "{}\t{}\t{}\t{role}\t{}\t{}\t{}\n",
            t.token_id,
            cell(&t.name),
            cell(&t.user_id),
            time(Some(t.created_at)),
            time(t.last_used_at),
            time(t.revoked_at)
        ));
    }
    out
}
