//! `generate`: an empty log is filled with the synthetic workload, deterministically (the same
//! seed gives the same events); a log with events is refused and left as it was; the generated
//! log rebuilds and verifies clean. SQLite only: the command appends through the same store
//! API on both backends.

use agentlog_eventlog::{StoreOptions, open_store, testing::TempSqlite};

use crate::support::{all_events, json_ok, replay};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_fills_an_empty_log_deterministically_and_refuses_a_full_one() {
    let (a, b) = (TempSqlite::new(), TempSqlite::new());
    let first = json_ok(&replay(&a.url(), &["--json", "generate", "--events", "1000", "--seed", "11"]));
    let events = first["events"].as_u64().expect("events");
    assert!(events >= 1000, "{first}");
    assert_eq!(first["head"].as_u64(), Some(events), "{first}");
    json_ok(&replay(&b.url(), &["--json", "generate", "--events", "1000", "--seed", "11"]));

    let (sa, sb) = (
        open_store(&a.url(), StoreOptions::default()).await.expect("open a"),
        open_store(&b.url(), StoreOptions::default()).await.expect("open b"),
    );
    let key = |e: &agentlog_domain::envelope::RecordedEvent| {
        (e.event_id, e.stream_id.clone(), e.stream_version, e.event_type.clone(), e.payload.clone())
    };
    let (ea, eb) = (all_events(&*sa).await, all_events(&*sb).await);
    assert_eq!(ea.len() as u64, events);
    assert!(ea.iter().map(key).eq(eb.iter().map(key)), "the same seed gives the same log");
    sb.close().await;

    // A log with events is refused, and nothing is appended.
    let again = replay(&a.url(), &["generate", "--events", "10"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has events"), "{again:?}");
    assert_eq!(sa.head_position().await.expect("head"), events as i64);
    sa.close().await;

    // Bad arguments write nothing either.
    let c = TempSqlite::new();
    let zero = replay(&c.url(), &["generate", "--events", "0"]);
    assert!(!zero.status.success() && String::from_utf8_lossy(&zero.stderr).contains("--events"), "{zero:?}");
    // As text: one line, ended (a shell's prompt does not follow it on the same line).
    let text = replay(&c.url(), &["generate", "--events", "20"]);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(text.status.success() && out.starts_with("generated ") && out.ends_with("starts\n"), "{text:?}");
    assert_eq!(out.lines().count(), 1, "{out}");

    // The generated log's read models rebuild and verify clean.
    json_ok(&replay(&a.url(), &["--json", "rebuild"]));
    json_ok(&replay(&a.url(), &["--json", "verify"]));
    // Also with most links in other pages (looked up in the table, not the page).
    json_ok(&replay(&a.url(), &["--json", "verify", "--log-only", "--page-size", "3"]));
}
