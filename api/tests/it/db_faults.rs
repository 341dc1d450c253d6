//! The database fails under load. The test runs a private PostgreSQL server (this project's
//! `scripts/pg-test-server.sh` on a free port, so the shared test server is not disturbed),
//! drives the agentlog server with `agentlog-load`, then crashes PostgreSQL (immediate
//! shutdown: every connection reset) and starts it again on the same data. Meanwhile:
//! - `/readyz` answers 503 while the database is down, and 200 again once it is back, without
//!   anyone restarting agentlog;
//! - requests during the outage fail in bounded time with `extensions.code` UNAVAILABLE (never
//!   UNAUTHENTICATED because the token could not be looked up, never a hang);
//!
//! and afterwards, as in the crash test: every acknowledged mutation is in the log, nothing is
//! in it twice, the read models equal a rebuild, and the resuming subscriber saw every event
//! exactly once.
//!
//! PostgreSQL only (an embedded SQLite file has no server to lose). Runs when PostgreSQL is
//! available (`AGENTLOG_TEST_PG_URL` set, as for every PostgreSQL test); required in CI.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use agentlog_eventlog::testing::pg_url;
use agentlog_load::Config;
use serde_json::json;

use crate::{
    faults::{TempRecord, check_nothing_lost},
    support::{Db, Server, error_code},
};

/// A PostgreSQL server of this test's own, stopped and deleted on drop.
pub struct PrivatePostgres {
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    /// Its URL.
    pub url: String,
}

impl PrivatePostgres {
    /// Start one, or None when PostgreSQL tests are skipped (outside CI, without PostgreSQL).
    pub fn start(test: &str) -> Option<Self> {
        Self::start_under(test, &std::env::temp_dir())
    }

    /// [`Self::start`] with its data in a directory under `parent`.
    pub fn start_under(test: &str, parent: &Path) -> Option<Self> {
        Self::start_with(test, parent, &[])
    }

    /// [`Self::start_under`] with more environment for the script (`PG_MAX_CONNECTIONS`, …).
    pub fn start_with(test: &str, parent: &Path, env: &[(&str, &str)]) -> Option<Self> {
        pg_url(test)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = parent.join(format!("agentlog-pg-fault-{port}"));
        let url = script_with(port, &dir, "start", env);
        Some(Self { port, dir, url })
    }

    /// Is it accepting connections?
    pub async fn is_up(&self) -> bool {
        let (port, dir) = (self.port, self.dir.clone());
        tokio::task::spawn_blocking(move || status(port, &dir)).await.unwrap_or(false)
    }

    /// Run the script's `action` (crash, resume) on this server, off the runtime's threads:
    /// the load runs meanwhile.
    pub async fn run(&self, action: &'static str) {
        let (port, dir) = (self.port, self.dir.clone());
        tokio::task::spawn_blocking(move || script(port, &dir, action)).await.expect("the script's thread");
    }
}

/// Run `scripts/pg-test-server.sh action` for the server on `port` with data in `dir`; its stdout.
fn script(port: u16, dir: &Path, action: &str) -> String {
    script_with(port, dir, action, &[])
}

fn script_with(port: u16, dir: &Path, action: &str, env: &[(&str, &str)]) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-test-server.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(action)
        .envs(env.iter().copied())
        .env("PG_PORT", port.to_string())
        .env("PG_DIR", dir)
        // A crash must not lose acknowledged commits: with the test server's default
        // `synchronous_commit = off` PostgreSQL itself acknowledges commits it can lose.
        .env("PG_DURABLE", "1")
        .output()
        .expect("run scripts/pg-test-server.sh");
    assert!(out.status.success(), "pg-test-server.sh {action}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `scripts/pg-test-server.sh status` for the server on `port`: exit 0 when it is up.
fn status(port: u16, dir: &Path) -> bool {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-test-server.sh");
    Command::new("bash")
        .arg(script)
        .arg("status")
        .env("PG_PORT", port.to_string())
        .env("PG_DIR", dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| script(self.port, &self.dir, "stop"));
    }
}

/// Poll `path` until it answers `status` (at most `within`); true when it did.
async fn status_becomes(server: &Server, path: &str, status: u16, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if server.get(path).await.0 == status {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_under_load() {
    let Some(pg) = PrivatePostgres::start("postgres_restarted_under_load") else { return };
    let server = Server::start(Db::Shared(pg.url.clone())).await;
    let record = TempRecord::create();
    let mut config = Config::new(server.base.clone(), server.admin_token.clone());
    config.clients = 4;
    config.subscribers = 1;
    // Long enough to go on well after the outage (PostgreSQL's crash recovery takes seconds).
    config.duration = Some(Duration::from_secs(24));
    config.record = Some(record.0.clone());
    config.request_timeout = Duration::from_secs(20);
    config.drain_timeout = Duration::from_secs(60);
    let load = tokio::spawn(agentlog_load::run(config));

    tokio::time::sleep(Duration::from_secs(3)).await;
    pg.run("crash").await;
    let down = Instant::now();
    assert!(
        status_becomes(&server, "/readyz", 503, Duration::from_secs(15)).await,
        "/readyz reports the database down"
    );
    assert_eq!(server.get("/healthz").await.0, 200, "the process itself is alive");
    // A query and a mutation during the outage: a clear error, in bounded time.
    let probe = |what: &'static str, query: &'static str| {
        let server = &server;
        async move {
            let asked = Instant::now();
            let r = server.gql(Some(&server.admin_token), query, json!({})).await;
            let took = asked.elapsed();
            assert_eq!(error_code(&r).as_deref(), Some("UNAVAILABLE"), "{what} during the outage: {r}");
            assert!(took < Duration::from_secs(8), "{what} answered after {took:?}");
            eprintln!("{what} during the outage answered UNAVAILABLE in {took:?}");
        }
    };
    tokio::join!(
        probe("query", "{ headPosition }"),
        probe(
            "mutation",
            "mutation { createNotification(input: {category: \"x\", type: \"y\", title: \"t\", body: \"b\"}) { position } }"
        ),
    );
    let outage = Duration::from_secs(4);
    if let Some(rest) = outage.checked_sub(down.elapsed()) {
        tokio::time::sleep(rest).await;
    }
    pg.run("resume").await;
    let back = Instant::now();
    assert!(status_becomes(&server, "/readyz", 200, Duration::from_secs(60)).await, "agentlog recovered by itself");
    eprintln!("ready again {:?} after the database came back", back.elapsed());
    let head = |r: serde_json::Value| r["headPosition"].as_i64().unwrap_or(0);
    let head_when_back = head(server.data(Some(&server.admin_token), "{ headPosition }", json!({})).await);

    let report = load.await.expect("the load task").expect("the load run");
    eprintln!("{report}");
    let sub = &report.subscribers[0];
    assert_eq!(sub.duplicates, 0, "the subscriber saw an event twice");
    assert!(sub.caught_up, "the subscriber reached the head after the outage: {sub:?}");
    assert!(report.acknowledged > 20, "the load did something: {report}");
    assert!(report.head_position > head_when_back, "the load went on after the outage: {report}");
    // Work continued after the outage: a mutation now succeeds.
    server
        .data(
            Some(&server.admin_token),
            "mutation { createNotification(input: {category: \"x\", type: \"y\", title: \"after\", body: \"b\"}) { position } }",
            json!({}),
        )
        .await;

    check_nothing_lost(server, &record, &report).await;
    drop(pg);
}
