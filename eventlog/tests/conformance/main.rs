//! The event log's conformance suite: the same test functions run against SQLite and PostgreSQL.
//! Each `foo` below becomes `foo_sqlite` and `foo_postgres`. One binary for the crate's
//! integration tests: each `tests/*.rs` file would be a separately linked executable.

mod appends;
mod command_handler;
mod imports;
mod postgres_ordering;
mod postgres_plans;
mod postgres_upgrade;
mod reads;
mod subscriptions;
mod support;
mod tables;

/// Generate `<name>_sqlite` and `<name>_postgres` tests from `async fn <name>(TestLog)`.
#[macro_export]
macro_rules! on_both_backends {
    ($options:expr => $($test:path as $name:ident),* $(,)?) => { paste::paste! { $(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn [<$name _sqlite>]() {
            $test(agentlog_eventlog::testing::sqlite_log($options).await).await
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn [<$name _postgres>]() {
            if let Some(log) = agentlog_eventlog::testing::postgres_log(stringify!([<$name _postgres>]), $options).await {
                $test(log).await
            }
        }
    )* } };
}
