//! `agentlog`: the server binary.

use std::{net::SocketAddr, path::PathBuf};

use agentlog_api::{
    auth::{Role, Tokens},
    server::{ServeConfig, open_app, serve},
    state::ApiLimits,
};
use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

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
enum Command {
    /// Serve the GraphQL API (and the projections and reactors).
    Serve {
        /// `sqlite:…`, a file path, or `postgres://…`.
        #[arg(long, env = "AGENTLOG_DATABASE_URL", default_value = "sqlite:agentlog.db")]
        database: String,
        /// Address to listen on.
        #[arg(long, env = "AGENTLOG_BIND", default_value = "127.0.0.1:8080")]
        bind: SocketAddr,
        /// Where the first admin token is written.
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
        /// Largest answer over HTTP, bytes; a larger one is replaced by a LIMIT error.
        #[arg(long, env = "AGENTLOG_MAX_RESPONSE_BYTES", default_value_t = ApiLimits::default().max_response_bytes)]
        max_response_bytes: usize,
        /// How long a query may run, milliseconds; then it is stopped and answered with LIMIT.
        #[arg(long, env = "AGENTLOG_QUERY_TIMEOUT_MS", default_value_t = 30_000)]
        query_timeout_ms: u64,
        /// How often the log is polled for other instances' commits, milliseconds (on
        /// PostgreSQL LISTEN/NOTIFY wakes an instance at once; the poll is the fallback).
        #[arg(long, env = "AGENTLOG_LOG_POLL_MS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
        log_poll_ms: u64,
    },
    /// Print the GraphQL schema (SDL).
    Schema,
    /// Manage bearer tokens.
    Token {
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
        /// The database.
        #[arg(long, env = "AGENTLOG_DATABASE_URL", default_value = "sqlite:agentlog.db")]
        database: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&cli.log).with_context(|| format!("bad --log filter `{}`", cli.log))?)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
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
            max_response_bytes,
            query_timeout_ms,
            log_poll_ms,
        } => {
            let limits = ApiLimits {
                max_subscriptions,
                max_subscriptions_per_user,
                max_streams_per_user,
                max_connections_per_user,
                max_response_bytes,
                query_timeout: std::time::Duration::from_millis(query_timeout_ms),
                log_poll_interval: std::time::Duration::from_millis(log_poll_ms),
                ..ApiLimits::default()
            };
            serve(ServeConfig { database, bind, data_dir, limits }).await
        }
        Command::Schema => {
            print!("{}", agentlog_api::graphql::sdl());
            Ok(())
        }
        Command::Token { command: TokenCommand::Create { user, admin, name, database } } => {
            let app = open_app(&database, ApiLimits::default()).await?;
            let role = if admin { Role::Admin } else { Role::User };
            let token = Tokens::new(app.db.clone()).create(&user, role, &name).await.map_err(anyhow::Error::from)?;
            println!("{}", token.secret);
            app.runner.stop().await;
            app.store.close().await;
            Ok(())
        }
    }
}
