//! Shared by the CLI tests: a generated log on either backend with caught-up read models, and
//! running the binary against it.

use std::{
    process::{Command, Output},
    sync::{Arc, OnceLock},
};

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{
    EventFilter, EventStore, StoreOptions,
    testing::{TestDbGuard, TestLog, reopen},
};
use agentlog_projections::{ProjectionRunner, ReadDb, RunnerOptions, all_projections};
use agentlog_workload::{Workload, WorkloadConfig};
use serde_json::Value;

/// A log holding the workload, its read models caught up, as a server would leave them.
pub struct Fixture {
    /// The log (keeps the database alive).
    pub log: TestLog,
    /// Its URL, for `--database`.
    pub url: String,
    /// The head position.
    pub head: i64,
}

/// The workload, generated once per test binary: small enough for a quick debug-build test,
/// big enough to hold every aggregate, sub-agents, failures and signal chains.
pub fn workload() -> &'static Workload {
    static WORKLOAD: OnceLock<Workload> = OnceLock::new();
    WORKLOAD.get_or_init(|| {
        Workload::generate(&WorkloadConfig { min_events: 500, users: 3, ..WorkloadConfig::default() })
            .expect("generate the workload")
    })
}

/// Store options for loading a test log quickly: a test needs no durability across power loss.
pub fn fast() -> StoreOptions {
    StoreOptions { sqlite_synchronous_full: false, ..StoreOptions::default() }
}

/// Append the workload to `log` (one append per round, so causes precede effects) and catch
/// the read models up.
pub async fn fixture(mut log: TestLog) -> Fixture {
    if let TestDbGuard::Postgres(db) = &log.guard {
        // Hundreds of small commits: without waiting for each to reach the disk.
        log.raw.execute(&format!("ALTER DATABASE {} SET synchronous_commit = off", db.name)).await.expect("alter");
        let fresh = reopen(&log.guard, fast()).await;
        log.store.close().await;
        log.store = fresh;
    }
    let head = workload().append_to(&*log.store).await.expect("append the workload");
    let runner = ProjectionRunner::new(
        Arc::clone(&log.store),
        ReadDb::from(log.store.database()),
        all_projections(),
        RunnerOptions::default(),
    );
    assert_eq!(runner.catch_up().await.expect("catch up"), head);
    Fixture { url: log.guard.url(), log, head }
}

/// Run `agentlog-replay --database <url> <args…>`.
pub fn replay(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentlog-replay"))
        .arg("--database")
        .arg(url)
        .args(args)
        .env_remove("AGENTLOG_DATABASE_URL")
        .output()
        .expect("run agentlog-replay")
}

/// The JSON on stdout of a run that must have succeeded.
pub fn json_ok(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {}\nstdout: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Every event of the log.
pub async fn all_events(store: &dyn EventStore) -> Vec<RecordedEvent> {
    store.read_all(0, &EventFilter::all(), usize::MAX >> 1).await.expect("read the log")
}

/// Run `$f(Fixture)` on SQLite and on PostgreSQL (`<name>_sqlite`, `<name>_postgres`).
#[macro_export]
macro_rules! both {
    ($($f:ident as $name:ident),* $(,)?) => { $(
        pub mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let log = agentlog_eventlog::testing::sqlite_log($crate::support::fast()).await;
                super::$f($crate::support::fixture(log).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let name = concat!(module_path!(), "::postgres");
                if let Some(log) = agentlog_eventlog::testing::postgres_log(name, $crate::support::fast()).await {
                    super::$f($crate::support::fixture(log).await).await
                }
            }
        }
    )* };
}
