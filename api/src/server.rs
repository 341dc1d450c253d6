//! Starting and stopping the server: open the log, start the projections, bootstrap the admin
//! token, serve HTTP until SIGINT/SIGTERM, then stop accepting and finish what is in flight.

use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use agentlog_eventlog::{CommandHandler, StoreOptions, open_store};
use agentlog_projections::{
    ProjectionRunner, ReadDb, RunnerOptions, all_projections, conversations::ConversationTrees,
};
use anyhow::Context as _;
use tokio::net::TcpListener;

use crate::{
    auth::Tokens,
    deltas::DeltaHub,
    graphql::build_schema,
    http::{Http, router},
    metrics::Metrics,
    quota::Quota,
    reactors::Reactors,
    relay::DeltaRelay,
    state::{ApiLimits, AppState},
};

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// `sqlite:…`, a file path, or `postgres://…`.
    pub database: String,
    /// Address to listen on (port 0 picks a free port).
    pub bind: SocketAddr,
    /// Where the first admin token is written.
    pub data_dir: PathBuf,
    /// Limits.
    pub limits: ApiLimits,
}

/// Messages the conversation-tree cache holds before evicting the least recently used topic
/// (a few hundred MiB at realistic message sizes).
const TREE_CACHE_MESSAGES: usize = 200_000;

/// Open everything the server needs.
pub async fn open_app(database: &str, limits: ApiLimits) -> anyhow::Result<AppState> {
    let options = StoreOptions { poll_interval: limits.log_poll_interval, ..StoreOptions::default() };
    let store =
        open_store(database, options).await.with_context(|| format!("opening the log at {}", redact(database)))?;
    let db = ReadDb::from(store.database());
    let runner = ProjectionRunner::new(Arc::clone(&store), db.clone(), all_projections(), RunnerOptions::default());
    runner.start().await.context("starting the projections")?;
    let deltas = DeltaHub::default();
    Ok(AppState {
        relay: DeltaRelay::start(store.database(), deltas.clone()),
        deltas,
        handler: CommandHandler::new(Arc::clone(&store)),
        store,
        runner,
        tokens: Tokens::new(db.clone()),
        trees: Arc::new(ConversationTrees::new(db.clone(), TREE_CACHE_MESSAGES)),
        db,
        metrics: Arc::new(Metrics::default()),
        subscriptions: Quota::default(),
        connections: Quota::default(),
        limits,
    })
}

fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
        _ => url.to_string(),
    }
}

/// Serve until a shutdown signal.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    let state = open_app(&config.database, config.limits.clone()).await?;
    match state.tokens.bootstrap_admin(&config.data_dir).await {
        Ok(Some(path)) => tracing::warn!(
            path = %path.display(),
            "first start: created an admin token; it is in this file (readable by you only) and is not shown again"
        ),
        Ok(None) => {}
        Err(e) => return Err(anyhow::anyhow!(e).context("creating the first admin token")),
    }
    let registered = crate::commands::builtins::register_builtin_agents(&state)
        .await
        .map_err(|e| anyhow::anyhow!(e).context("registering the built-in agents"))?;
    if registered > 0 {
        tracing::info!(registered, "registered the built-in agents");
    }
    let listener = TcpListener::bind(config.bind).await.with_context(|| format!("binding {}", config.bind))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    tracing::info!(%addr, "agentlog listening; GraphiQL at http://{addr}/graphql");
    let reactors = Reactors::start(&state);
    let schema = build_schema(state.clone());
    let app = router(Http { state: state.clone(), schema });
    axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await.context("serving HTTP")?;
    tracing::info!("shutting down: requests finished; stopping reactors and projections, closing the log");
    reactors.stop().await;
    state.runner.stop().await;
    state.store.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
