//! The events table itself: append-only, enforced by the database.

use agentlog_eventlog::{ExpectedVersion, StoreOptions, testing::TestLog};

use crate::{
    on_both_backends,
    support::{all_events, events},
};

async fn the_events_table_refuses_update_and_delete(log: TestLog) {
    let s = &*log.store;
    s.append("ro-1", ExpectedVersion::NoStream, events(3)).await.unwrap();
    let before = all_events(s).await;
    let update = log.raw.execute("UPDATE events SET event_type = 'test.tampered'").await.unwrap_err();
    assert!(update.contains("append-only"), "{update}");
    let delete = log.raw.execute("DELETE FROM events").await.unwrap_err();
    assert!(delete.contains("append-only"), "{delete}");
    let one = log.raw.execute("DELETE FROM events WHERE stream_version = 2").await.unwrap_err();
    assert!(one.contains("append-only"), "{one}");
    if matches!(log.raw, agentlog_eventlog::testing::RawDb::Postgres(_)) {
        let truncate = log.raw.execute("TRUNCATE events").await.unwrap_err();
        assert!(truncate.contains("append-only"), "{truncate}");
    }
    assert_eq!(all_events(s).await, before);
}

on_both_backends!(StoreOptions::default() =>
    the_events_table_refuses_update_and_delete as events_table_refuses_update_and_delete,
);
