//! Shared by the read-model tests: a log on either backend, domain commands run through the
//! eventlog's command handler, and the projection runner caught up on demand.

#![allow(dead_code)] // not every helper is used by every test

use std::{sync::Arc, time::Duration};

use agentlog_domain::{aggregate::Aggregate, context::Context, envelope::Actor};
use agentlog_eventlog::{CommandHandler, StoreOptions, testing::TestLog};
use agentlog_projections::{ProjectionRunner, ReadDb, RunnerOptions, all_projections};
use chrono::{DateTime, TimeZone, Utc};
use uuid::Uuid;

/// A log, its read models and a clock for commands.
pub struct Harness {
    /// The log (keeps the database alive).
    pub log: TestLog,
    /// The read-model database.
    pub db: ReadDb,
    /// Runs every projection.
    pub runner: ProjectionRunner,
    handler: CommandHandler,
    ticks: i64,
}

impl Harness {
    /// Every projection over `log`.
    pub fn new(log: TestLog) -> Self {
        let db = ReadDb::from(log.store.database());
        let runner = ProjectionRunner::new(
            Arc::clone(&log.store),
            db.clone(),
            all_projections(),
            RunnerOptions { batch_size: 7, retry_delay: Duration::from_millis(50), ..RunnerOptions::default() },
        );
        let handler = CommandHandler::new(Arc::clone(&log.store));
        Self { log, db, runner, handler, ticks: 0 }
    }

    /// The time of the next command (one second apart).
    pub fn now(&self) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).single().unwrap_or_default() + chrono::Duration::seconds(self.ticks)
    }

    /// Run a command on aggregate `id` as `user`; panics when refused.
    pub async fn exec<A: Aggregate>(&mut self, user: &str, id: &str, cmd: A::Command) {
        if let Err(e) = self.try_exec::<A>(user, id, cmd).await {
            panic!("command on {id} refused: {e}");
        }
    }

    /// Run a command on aggregate `id` as `user`.
    pub async fn try_exec<A: Aggregate>(
        &mut self,
        user: &str,
        id: &str,
        cmd: A::Command,
    ) -> Result<(), agentlog_eventlog::CommandError> {
        let ctx = Context::new(self.now(), Uuid::now_v7(), Actor::user(user), user);
        self.ticks += 1;
        self.handler.execute_of::<A>(user, id, &cmd, &ctx).await.map(|_| ())
    }

    /// Apply everything appended so far.
    pub async fn sync(&self) {
        let head = self.runner.catch_up().await.unwrap();
        for s in self.runner.status() {
            assert!(
                s.failed.is_none() && s.position == head,
                "projection {} at {} of {head}: {:?}",
                s.name,
                s.position,
                s.failed
            );
        }
    }

    /// Empty every read model and apply the log again.
    pub async fn rebuild(&self) {
        self.runner.rebuild(None).await.unwrap();
        self.sync().await;
    }
}

/// Run `$f(log)` on SQLite and on PostgreSQL (`<name>_sqlite`, `<name>_postgres`).
#[macro_export]
macro_rules! both {
    ($($f:ident as $name:ident),* $(,)?) => { paste::paste! { $(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn [<$name _sqlite>]() {
            $f(agentlog_eventlog::testing::sqlite_log(agentlog_eventlog::StoreOptions::default()).await).await
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn [<$name _postgres>]() {
            if let Some(log) = agentlog_eventlog::testing::postgres_log(
                stringify!([<$name _postgres>]),
                agentlog_eventlog::StoreOptions::default(),
            )
            .await
            {
                $f(log).await
            }
        }
    )* } };
}

/// Default store options (re-exported for tests that open their own logs).
pub fn options() -> StoreOptions {
    StoreOptions::default()
}
