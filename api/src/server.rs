//! Starting and stopping the server: open the log, start the projections, bootstrap the admin
//! token, serve HTTP until SIGINT/SIGTERM; then refuse new requests (UNAVAILABLE), close the
//! websockets (1001), answer what is in flight, stop the reactors and projections between
//! passes and close the log, all within the shutdown timeout.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use agentlog_eventlog::{CommandHandler, StoreOptions, open_store};
use agentlog_projections::{
    ProjectionRunner, ReadDb, RunnerOptions, all_projections, conversations::ConversationTrees,
};
use anyhow::Context as _;
use axum::serve::ListenerExt as _;
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
    shutdown::Shutdown,
    state::{ApiLimits, App, AppState, Settings},
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
    /// The HTTP front's limits.
    pub limits: ApiLimits,
    /// How the application behaves.
    pub settings: Settings,
    /// Export every run as an OpenTelemetry trace to this OTLP/HTTP collector.
    pub otlp: Option<crate::otlp::OtlpConfig>,
    /// Longest a shutdown may take, from the signal to the log closed: requests in flight,
    /// then the reactors' current passes, then the projections.
    pub shutdown_timeout: Duration,
}

/// Messages the conversation-tree cache holds before evicting the least recently used topic
/// (a few hundred MiB at realistic message sizes).
const TREE_CACHE_MESSAGES: usize = 200_000;

/// How often the server's SQLite log checkpoints its WAL, off the commit path
/// (`StoreOptions::sqlite_background_checkpoint`). A page written by many commits in one
/// interval is copied back once: at 100 ms the disk took 2.8× the writes per mutation, and on a
/// 1M log their bursts stalled every fsync on the machine (BENCHMARKS.md, "Mutation latency at
/// size").
const SQLITE_CHECKPOINT_EVERY: Duration = Duration::from_secs(2);

/// The database's lease key: made by the first instance to start (each proposes one, the first
/// insert stays), the same for every instance after.
async fn lease_key(db: &ReadDb) -> anyhow::Result<agentlog_domain::context::LeaseKey> {
    use sha2::Digest;
    let proposed = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    db.execute(
        "INSERT INTO server_secrets (name, value) VALUES ('lease_key', $1) ON CONFLICT (name) DO NOTHING",
        &[proposed.into()],
    )
    .await?;
    let rows = db.fetch("SELECT value FROM server_secrets WHERE name = 'lease_key'", &[]).await?;
    let value = rows.first().and_then(|r| r.str(0)).context("no lease key in server_secrets")?;
    Ok(agentlog_domain::context::LeaseKey(sha2::Sha256::digest(value.as_bytes()).into()))
}

/// Open everything the server needs.
pub async fn open_app(database: &str, settings: Settings, limits: ApiLimits) -> anyhow::Result<AppState> {
    let websocket_nice = settings.websocket_nice;
    let options = StoreOptions {
        statement_timeout: settings.statement_timeout,
        poll_interval: settings.log_poll_interval,
        sqlite_mmap_mib: settings.sqlite_mmap_mib,
        // A request's commit never copies the WAL back into a large database file.
        sqlite_background_checkpoint: Some(SQLITE_CHECKPOINT_EVERY),
        ..StoreOptions::default()
    };
    let store = open_store(database, options)
        .await
        .with_context(|| format!("opening the log at {}", agentlog_eventlog::redact(database)))?;
    let db = ReadDb::from(store.database());
    let runner = ProjectionRunner::new(Arc::clone(&store), db.clone(), all_projections(), RunnerOptions::server());
    runner.start().await.context("starting the projections")?;
    let deltas = DeltaHub::default();
    let tokens = Tokens::new(db.clone());
    let lease_key = lease_key(&db).await.context("reading the lease key")?;
    let app = App {
        lease_key,
        relay: DeltaRelay::start(store.database(), deltas.clone()),
        deltas,
        handler: CommandHandler::new(Arc::clone(&store)),
        store,
        runner,
        trees: Arc::new(ConversationTrees::new(db.clone(), TREE_CACHE_MESSAGES)),
        db,
        metrics: Arc::new(Metrics {
            genai: crate::genai_metrics::GenAiMetrics::new(settings.max_genai_series),
            ..Metrics::default()
        }),
        settings,
    };
    Ok(AppState {
        snapshots: app.db.snapshots(),
        app,
        tokens,
        subscriptions: Quota::default(),
        connections: Quota::default(),
        anonymous: Quota::default(),
        limits,
        shutdown: Shutdown::default(),
        sockets: crate::sockets::Sockets::start(websocket_nice).context("starting the websockets' runtime")?,
        parsed: Arc::default(),
    })
}

/// Serve until a shutdown signal.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    // The address first: a start that cannot listen (the port taken) writes nothing — no new
    // database, no admin token. Connections made before serving wait in the backlog.
    let listener = TcpListener::bind(config.bind).await.with_context(|| format!("binding {}", config.bind))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let state = open_app(&config.database, config.settings.clone(), config.limits.clone()).await?;
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
    // Every write goes out at once: a subscription's frames are small and come one after another
    // without an answer from the client, which Nagle's algorithm would hold back until the
    // client's (delayed) acknowledgement of the one before.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY on a connection");
        }
    });
    tracing::info!(%addr, "agentlog listening; GraphiQL at http://{addr}/graphql");
    let reactors = Reactors::start(&state);
    // Tokens other instances revoke close this one's websockets too.
    let revocations = tokio::spawn(state.tokens.clone().follow_revocations(crate::auth::REVOCATION_CHECK_EVERY));
    let (stop_export, stopped) = tokio::sync::watch::channel(false);
    // The GenAI metrics count what the log records from now on (the head read before serving).
    let head = state.store.head_position().await.context("reading the head of the log")?;
    let genai_metrics = tokio::spawn(crate::reactors::genai_metrics::follow(state.app.clone(), head, stopped.clone()));
    let exporter = config.otlp.clone().map(|otlp| tokio::spawn(crate::otlp::run(state.app.clone(), otlp, stopped)));
    let schema = build_schema(state.clone());
    let app = router(Http::new(state.clone(), schema));
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    let (stop_listening, listening_stopped) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = listening_stopped.await;
            })
            .await
    });
    shutdown_signal().await;
    let deadline = tokio::time::Instant::now() + config.shutdown_timeout;
    state.shutdown.begin();
    tracing::info!(
        in_flight = state.shutdown.in_flight(),
        timeout = ?config.shutdown_timeout,
        "shutting down: refusing new requests (UNAVAILABLE), closing websockets (1001), answering those in flight"
    );
    let drained = tokio::time::timeout_at(deadline, state.shutdown.drained()).await.is_ok();
    let _ = stop_listening.send(());
    revocations.abort();
    let stopped = drained
        && stop_within(deadline, "HTTP", async {
            match http.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "serving HTTP ended with an error"),
                Err(e) => tracing::warn!(error = %e, "the HTTP task failed"),
            }
        })
        .await;
    // Between passes: each reactor finishes the reaction or clock pass it is in and commits its
    // checkpoint; then the projections stop (a batch in flight rolls back with its checkpoint).
    // The next start resumes each from its committed checkpoint.
    let stopped = stopped
        && stop_within(deadline, "reactors", reactors.stop()).await
        && stop_within(deadline, "log followers (OTLP export, GenAI metrics)", async {
            let _ = stop_export.send(true);
            let _ = genai_metrics.await;
            if let Some(exporter) = exporter {
                let _ = exporter.await;
            }
        })
        .await
        && stop_within(deadline, "projections", async {
            state.runner.stop().await;
        })
        .await;
    state.store.close().await;
    if !drained {
        anyhow::bail!(
            "shutdown timed out after {:?} with {} request(s) still in flight; their outcome is in the log",
            config.shutdown_timeout,
            state.shutdown.in_flight()
        );
    }
    anyhow::ensure!(stopped, "shutdown timed out after {:?}", config.shutdown_timeout);
    tracing::info!("shut down: every admitted request answered, reactors and projections stopped at a checkpoint");
    Ok(())
}

/// Await `part` until `deadline`; false (and logged) when it did not finish in time.
async fn stop_within(deadline: tokio::time::Instant, what: &str, part: impl Future<Output = ()>) -> bool {
    let done = tokio::time::timeout_at(deadline, part).await.is_ok();
    if !done {
        tracing::error!(part = what, "shutdown timed out stopping it");
    }
    done
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
