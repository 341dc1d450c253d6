//! Crashes under load. `agentlog-load` drives the real server (a realistic mix: users chatting
//! with branches and tool messages, workers claiming, renewing, reporting and completing, tasks
//! with dependencies and runs, briefs, notifications, and a subscriber following the whole log)
//! while the server is SIGKILLed several times and restarted on the same database, data
//! directory and port. Afterwards:
//! - every mutation the server acknowledged is in the log (the event at its answered position
//!   is in its stream; an appended message is there);
//! - nothing is in the log twice (event ids unique; each stream's versions 1..n, no gap or
//!   repeat) and the log passes the checks of `agentlog-replay verify`;
//! - the read models, caught up, equal a rebuild from position 0;
//! - the subscriber, resuming from its last position after each restart, saw every event up to
//!   where it stopped exactly once, in order.
//!
//! CI runs a few seconds of load per backend. A longer run, e.g. a minute with 8 clients:
//! `AGENTLOG_FAULTS_SECS=60 AGENTLOG_FAULTS_CLIENTS=8 cargo test --release -p agentlog-api --test it -- faults --nocapture`

use std::time::Duration;

use agentlog_load::{Config, Record, Report};

use crate::support::{Db, Server, check_acknowledged, check_log, check_workers_worked, read_log, verify_read_models};

/// Server kills during the load.
const KILLS: u32 = 3;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A record file in the temp directory, removed on drop.
pub struct TempRecord(pub std::path::PathBuf);

impl TempRecord {
    pub fn create() -> Self {
        Self(std::env::temp_dir().join(format!("agentlog-load-{}.jsonl", uuid::Uuid::now_v7().simple())))
    }
}

impl Drop for TempRecord {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn crash_under_load(db: Db) {
    let secs: f64 = env_or("AGENTLOG_FAULTS_SECS", 6.0);
    let mut server = Server::start(db).await;
    let record = TempRecord::create();
    let mut config = Config::new(server.base.clone(), server.admin_token.clone());
    config.clients = env_or("AGENTLOG_FAULTS_CLIENTS", 4);
    config.subscribers = 1;
    config.duration = Some(Duration::from_secs_f64(secs));
    config.record = Some(record.0.clone());
    config.request_timeout = Duration::from_secs(10);
    let load = tokio::spawn(agentlog_load::run(config));

    let gap = Duration::from_secs_f64(secs / f64::from(KILLS + 1));
    for _ in 0..KILLS {
        tokio::time::sleep(gap).await;
        server.restart().await;
    }
    let report = load.await.expect("the load task").expect("the load run");
    eprintln!("{report}");
    let sub = &report.subscribers[0];
    assert!(sub.disconnects >= u64::from(KILLS), "the subscriber lived through every kill: {sub:?}");
    assert_eq!(sub.duplicates, 0, "the subscriber saw an event twice");
    assert!(sub.caught_up, "the subscriber reached the head after the last restart: {sub:?}");
    assert!(report.acknowledged > 20, "the load did something: {report}");
    check_workers_worked(&report);

    check_nothing_lost(server, &record, &report).await;
}

/// After a load with faults, stop the server and check its database: every acknowledged
/// mutation is in the log, nothing is there twice and the log's checks pass, the first
/// subscriber saw exactly the log's positions up to where it stopped, and the read models
/// equal a rebuild.
pub async fn check_nothing_lost(server: Server, record: &TempRecord, report: &Report) {
    let db = server.stop();
    check_nothing_lost_in(&db, record, report).await;
}

/// [`check_nothing_lost`] on a database whose server has stopped.
pub async fn check_nothing_lost_in(db: &Db, record: &TempRecord, report: &Report) {
    let events = read_log(db).await;
    check_log(&events);
    let records = Record::read_file(&record.0).expect("the record file");
    assert_eq!(records.len() as u64, report.acknowledged, "one record per acknowledged mutation");
    check_acknowledged(&records, &events);
    // Exactly the log's events up to where the subscriber stopped: none missed, none twice.
    let sub = &report.subscribers[0];
    let want: Vec<i64> = events.iter().map(|e| e.position).take_while(|p| *p <= sub.last_position).collect();
    assert_eq!(sub.positions.len(), want.len(), "the subscriber saw {} events of {}", sub.positions.len(), want.len());
    assert!(sub.positions == want, "the subscriber's positions differ from the log's");
    verify_read_models(db).await;
}

both!(crash_under_load as crash_under_load);
