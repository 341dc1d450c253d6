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

/// A read-model table held locked past the statement timeout (an operator's `LOCK TABLE`, a
/// long `CREATE INDEX`) makes the projections' statements fail with 57014 while it lasts. That
/// failure passes: the runner applies the batch again, waiting longer each time, and the read
/// models catch up once the lock is gone — nothing is marked failed (`/readyz` stays 200) and
/// no restart is needed. (SQLite: `projections/tests/it/runner.rs`,
/// `runner_applies_again_after_a_passing_failure`, with a real full disk.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_read_model_table_delays_its_projection_only() {
    use sqlx::Connection;
    let Some(db) = Db::postgres("a_locked_read_model_table_delays_its_projection_only").await else { return };
    let url = db.url();
    let s = Server::start_with(db, &["--statement-timeout-ms", "300"]).await;
    let alice = s.user_token("alice").await;
    let agent = json!({"agentId": "a1", "config": {"slug": "a1", "title": "Helper", "model": "m1", "provider": "p1"}});
    s.data(Some(&alice), "mutation($i: JSON!) { registerAgent(input: $i) { position } }", json!({"i": agent})).await;
    let start = "mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }";
    let status = "query($id: String!) { operation(id: $id) { status } }";
    s.data(Some(&alice), start, json!({"i": {"operationId": "op1", "kind": "TASK", "agentId": "a1"}})).await;
    assert!(!s.data(Some(&alice), status, json!({"id": "op1"})).await["operation"].is_null());

    let mut locker = sqlx::PgConnection::connect(&url).await.expect("a connection of the test's own");
    sqlx::query("BEGIN").execute(&mut locker).await.expect("begin");
    sqlx::query("LOCK TABLE operations IN ACCESS EXCLUSIVE MODE").execute(&mut locker).await.expect("the lock");
    // Its answer waits for the read models (at most 5 s) while the runner's attempts meet the
    // lock and are cancelled.
    s.data(Some(&alice), start, json!({"i": {"operationId": "op2", "kind": "TASK", "agentId": "a1"}})).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(s.get("/readyz").await.0, 200, "a passing failure marks no projection failed");
    sqlx::query("ROLLBACK").execute(&mut locker).await.expect("the lock released");

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if !s.gql(Some(&alice), status, json!({"id": "op2"})).await["data"]["operation"].is_null() {
            break;
        }
        assert!(Instant::now() < deadline, "the read models caught up once the lock was gone");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(s.get("/readyz").await.0, 200);
    assert!(!s.logged("statement timeout").is_empty(), "the runner met the cancelled statement");
    assert!(s.metric("agentlog_projection_resumes_total").await > 0, "the resumes are counted");
    s.stop();
}
