//! One load run: check the target and the token, prepare (user tokens, contended objects), start
//! the subscribers, run the clients until the budget is spent, then let the subscribers reach
//! the log's head, and report.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use tokio::{
    sync::{mpsc, watch},
    task::JoinSet,
};

use crate::budget::Budget;
use crate::client::Answer;
use crate::client::Gql;
use crate::client::Session;
use crate::client::Shared;
use crate::config::Config;
use crate::config::Scenario;
use crate::contention;
use crate::error::LoadError;
use crate::mixed;
use crate::record::Recorder;
use crate::report::Report;
use crate::stats::Stats;
use crate::subscriber;
use crate::subscriber::Pace;
use crate::subscriber::Stop;
use crate::target::Target;
use crate::write;

/// The longest the clients wait for the subscribers to subscribe before they start anyway.
const SUBSCRIBE_WAIT: Duration = Duration::from_secs(60);

/// Run the load described by `config` against a running server and report what it measured.
/// Refuses a target that is not this machine before sending anything.
pub async fn run(config: Config) -> Result<Report, LoadError> {
    let target = Target::parse(&config.url)?;
    let mut targets = vec![target.clone()];
    for url in &config.more_urls {
        targets.push(Target::parse(url)?);
    }
    if config.token.trim().is_empty() {
        return Err(LoadError::NoToken);
    }
    if config.clients == 0 && (config.subscribers == 0 || config.duration.is_none()) {
        return Err(LoadError::Config(
            "at least one client is needed (with none, subscribers only follow for --duration)".into(),
        ));
    }
    if config.duration.is_none() && config.max_mutations.is_none() {
        return Err(LoadError::Config("bound the run with a duration and/or a maximum of mutations".into()));
    }
    if config.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err(LoadError::Config("a rate must be a positive number of mutations per second".into()));
    }
    if config.slow_subscribers > config.subscribers {
        return Err(LoadError::Config("more slow subscribers than subscribers".into()));
    }
    let gql = Gql::new(targets.clone(), config.request_timeout)?;
    let start_head = match gql.post(&config.token, "{ headPosition }", &json!({})).await {
        Answer::Data(d) => d["headPosition"].as_i64().unwrap_or(0),
        Answer::Refused { code, message } => {
            return Err(LoadError::Setup(format!("the server refused the token: {code}: {message}")));
        }
        Answer::Transport(e) => return Err(LoadError::Setup(format!("cannot reach {}: {e}", target.graphql))),
    };
    // Subscribers first (from position 0, or from the head as it is now), so they see the
    // whole run; the slow ones are the last `slow_subscribers`. The clients start once every
    // subscriber has subscribed (or after `SUBSCRIBE_WAIT`), so what is timed as delivery is
    // delivery, not a thousand connections being set up.
    let (stop_tx, stop_rx) = watch::channel(None);
    let (subscribed_tx, mut subscribed_rx) = mpsc::unbounded_channel();
    let mut subscribers = JoinSet::new();
    let from = if config.subscribe_from_head { start_head } else { 0 };
    let connecting = Instant::now();
    for i in 0..config.subscribers {
        let slow = i >= config.subscribers - config.slow_subscribers;
        let pace = Pace { from, delay: if slow { config.slow_delay } else { Duration::ZERO } };
        // Subscribers spread over the instances too: each follows the log through its own.
        let websocket = targets[i % targets.len()].websocket.clone();
        subscribers.spawn(subscriber::follow(
            websocket,
            config.token.clone(),
            pace,
            subscribed_tx.clone(),
            stop_rx.clone(),
        ));
    }
    drop(subscribed_tx);
    let mut ready = 0;
    let deadline = tokio::time::Instant::now() + SUBSCRIBE_WAIT;
    while ready < config.subscribers {
        match tokio::time::timeout_at(deadline, subscribed_rx.recv()).await {
            Ok(Some(())) => ready += 1,
            Ok(None) | Err(_) => break,
        }
    }
    let subscribed = (ready, connecting.elapsed());
    if ready < config.subscribers {
        tracing::warn!(
            ready,
            of = config.subscribers,
            "not every subscriber subscribed in time; starting the load anyway"
        );
    }

    let started = Instant::now();
    let shared = Arc::new(Shared {
        gql: gql.clone(),
        budget: budget(&config, started),
        recorder: Recorder::new(config.record.as_deref(), started)?,
        run_id: run_id(),
        outage_limit: config.drain_timeout,
    });
    let progress = progress_bar(config.progress, &shared);

    let mut stats = Stats::default();
    let mut clients = JoinSet::new();
    match config.scenario {
        Scenario::Mixed => {
            let tokens = user_tokens(&gql, &config.token, &shared.run_id, config.clients).await?;
            let work = Arc::new(mixed::Mixed::default());
            for (i, tokens) in tokens.into_iter().enumerate() {
                let (s, work) = (Session::new(Arc::clone(&shared), i, config.seed), Arc::clone(&work));
                clients.spawn(async move { mixed::client(s, tokens, &work).await });
            }
        }
        Scenario::Contention => {
            let mut s = Session::new(Arc::clone(&shared), 0, config.seed);
            let contended = contention::setup(&mut s, &config.token, config.clients).await.map_err(|e| {
                LoadError::Setup(format!("creating the contended conversation, task and operation: {e:?}"))
            })?;
            stats.merge(s.stats);
            let contended = Arc::new(contended);
            for i in 0..config.clients {
                let (s, c, token) =
                    (Session::new(Arc::clone(&shared), i, config.seed), Arc::clone(&contended), config.token.clone());
                clients.spawn(async move { contention::client(s, token, &c).await });
            }
        }
        Scenario::Write => {
            let tokens = user_tokens(&gql, &config.token, &shared.run_id, config.clients).await?;
            for (i, tokens) in tokens.into_iter().enumerate() {
                let s = Session::new(Arc::clone(&shared), i, config.seed);
                clients.spawn(write::client(s, tokens, config.batch));
            }
        }
        Scenario::Baseline => {
            for i in 0..config.clients {
                let s = Session::new(Arc::clone(&shared), i, config.seed);
                clients.spawn(write::baseline_client(s, config.token.clone()));
            }
        }
    }
    // No clients: the subscribers follow what another process appends, for the duration.
    if config.clients == 0
        && let Some(duration) = config.duration
    {
        tokio::time::sleep_until((started + duration).into()).await;
    }
    let mut failure = None;
    while let Some(joined) = clients.join_next().await {
        match joined {
            Ok(Ok(s)) => stats.merge(s),
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) => failure = failure.or(Some(format!("a client panicked: {e}"))),
        }
    }
    let elapsed = started.elapsed();
    shared.recorder.finish()?;
    if let Some(e) = failure {
        return Err(LoadError::Client(e));
    }

    // Let the subscribers reach the head as it is now (the server may be restarting).
    let head = head_position(&gql, &config.token, config.drain_timeout).await;
    let _ = stop_tx.send(Some(Stop { head: head.unwrap_or(i64::MAX), give_up: Instant::now() + config.drain_timeout }));
    let mut report = Report::build(config.scenario, config.clients, elapsed, shared.budget.sent(), stats);
    report.rate = config.rate;
    report.head_position = head.unwrap_or(-1);
    report.appended = head.map_or(0, |h| h - start_head);
    let mut followed = Vec::with_capacity(config.subscribers);
    while let Some(joined) = subscribers.join_next().await {
        if let Ok(s) = joined {
            followed.push(s);
        }
    }
    report.add_subscribers(followed);
    report.subscribed = subscribed.0;
    report.subscribe_secs = subscribed.1.as_secs_f64();
    progress.finish_and_clear();
    Ok(report)
}

/// The run's budget from `started`, on the config's schedule when it has a rate.
fn budget(config: &Config, started: Instant) -> Budget {
    let budget = Budget::new(config.duration.map(|d| started + d), config.max_mutations);
    match config.rate {
        Some(rate) => budget.with_rate(started, rate, config.clients),
        None => budget,
    }
}

/// A short id for this run's objects: the random tail of a UUID v7.
fn run_id() -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    format!("ld{}", &id[id.len() - 10..])
}

/// A token per client: a user of its own when `token` is an admin's (`createToken`), else
/// everyone shares `token`.
async fn user_tokens(gql: &Gql, token: &str, run_id: &str, clients: usize) -> Result<Vec<mixed::Tokens>, LoadError> {
    let mut tokens = Vec::with_capacity(clients);
    for i in 0..clients {
        let user = format!("{run_id}-u{i}");
        let answer = gql
            .post(
                token,
                "mutation($u: String!) { createToken(userId: $u, name: \"agentlog-load\") { secret } }",
                &json!({"u": user}),
            )
            .await;
        match answer {
            Answer::Data(d) => {
                let secret = d["createToken"]["secret"].as_str().unwrap_or_default().to_string();
                tokens.push(mixed::Tokens { user: secret, user_id: Some(user), worker: token.to_string() });
            }
            Answer::Refused { code, .. } if code == "FORBIDDEN" && i == 0 => {
                tracing::info!("the token is not an admin's: every client acts as its user");
                let shared = mixed::Tokens { user: token.to_string(), user_id: None, worker: token.to_string() };
                return Ok(vec![shared; clients]);
            }
            Answer::Refused { code, message } => {
                return Err(LoadError::Setup(format!("creating a user token: {code}: {message}")));
            }
            Answer::Transport(e) => return Err(LoadError::Setup(format!("creating a user token: {e}"))),
        }
    }
    Ok(tokens)
}

/// The log's head, asking until the server answers (at most `within`).
async fn head_position(gql: &Gql, token: &str, within: Duration) -> Option<i64> {
    let until = Instant::now() + within;
    loop {
        if let Answer::Data(d) = gql.post(token, "{ headPosition }", &json!({})).await {
            return d.get("headPosition").and_then(Value::as_i64);
        }
        if Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A spinner on stderr with the counts so far (hidden unless asked for).
fn progress_bar(show: bool, shared: &Arc<Shared>) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_draw_target(ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let (ticker, shared) = (bar.clone(), Arc::clone(shared));
    tokio::spawn(async move {
        while !ticker.is_finished() {
            ticker.set_message(format!(
                "{} mutations sent, {} acknowledged",
                shared.budget.sent(),
                shared.recorder.count()
            ));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
    bar
}
