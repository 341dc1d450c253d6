//! What a start says about the schema: a new database gets one line ("creating the schema"),
//! a database of an earlier build one line per migration it is about to apply (an upgrade's
//! migration may rewrite `events`, and start-up waits for it), a current one nothing; and the
//! events an earlier build wrote are served after the upgrade.

use std::borrow::Cow;

use crate::support;

use agentlog_eventlog::migrate::{POSTGRES, SQLITE};
use serde_json::json;
use sqlx::{Connection, migrate::Migrator};
use support::{Db, Server};

/// The migrations before version 40, applied to `db` as the builds before it left it.
async fn migrate_before_40(db: &Db) {
    let before = |all: &Migrator| Migrator {
        migrations: Cow::Owned(all.iter().filter(|m| m.version < 40).cloned().collect()),
        ..Migrator::DEFAULT
    };
    let url = db.url();
    if url.starts_with("sqlite:") {
        let mut conn = sqlx::SqliteConnection::connect(&format!("{url}?mode=rwc")).await.expect("connect");
        before(&SQLITE).run(&mut conn).await.expect("migrate");
    } else {
        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
        before(&POSTGRES).run(&mut conn).await.expect("migrate");
    }
}

async fn a_start_says_what_it_does_to_the_schema(db: Db) {
    // A new database: one line.
    let s = Server::start(db).await;
    assert_eq!(s.logged("creating the schema").len(), 1, "{:?}", s.logged("schema"));
    assert!(s.logged("applying migration").is_empty(), "{:?}", s.logged("applying migration"));
    // A restart on it: nothing (nor PostgreSQL's NOTICE that the migrations' table exists).
    let mut s = s;
    s.restart().await;
    assert_eq!(s.logged("creating the schema").len(), 1);
    assert!(s.logged("applying migration").is_empty(), "{:?}", s.logged("applying migration"));
    assert!(s.logged("already exists").is_empty(), "{:?}", s.logged("already exists"));
}

async fn an_upgrade_says_each_migration_and_keeps_the_log(db: Db) {
    migrate_before_40(&db).await;
    let s = Server::start(db).await;
    let applying = s.logged("applying migration");
    assert_eq!(applying.len(), 3, "{applying:?}");
    assert!(applying[0].contains("version=40") && applying[0].contains("events json text"), "{applying:?}");
    assert!(applying[1].contains("version=41") && applying[1].contains("budget spend rollups"), "{applying:?}");
    assert!(applying[2].contains("version=42") && applying[2].contains("server secrets"), "{applying:?}");
    assert!(s.logged("creating the schema").is_empty());
    // The upgraded log takes and serves events.
    let alice = s.user_token("alice").await;
    s.data(Some(&alice), "mutation { createConversation(topicId: \"c1\") { position } }", json!({})).await;
    let log = s.data(Some(&alice), "{ events(first: 5) { edges { node { eventType } } } }", json!({})).await;
    assert_eq!(log["events"]["edges"][0]["node"]["eventType"], "conversation.created", "{log}");
}

both!(
    a_start_says_what_it_does_to_the_schema as a_start_says_what_it_does_to_the_schema,
    an_upgrade_says_each_migration_and_keeps_the_log as an_upgrade_says_each_migration_and_keeps_the_log
);
