//! Imports: events recorded by another log keep their ids, versions, recording times and (when
//! free) positions; re-importing is a no-op; a gap or changed content is refused; appends after
//! an import continue above it.

use agentlog_eventlog::{EventLogError, ExpectedVersion, StoreOptions, testing::TestLog};
use chrono::Duration;

use crate::{
    on_both_backends,
    support::{all_events, caused, event, events},
};

async fn imported_events_keep_ids_versions_times_and_positions(log: TestLog) {
    // a source log with a chain across two streams
    let source = agentlog_eventlog::testing::sqlite_log(StoreOptions::default()).await;
    let root = event("test.started", "u1");
    let child = caused(&root, "test.followed");
    source.store.append("s-a", ExpectedVersion::NoStream, vec![root]).await.unwrap();
    source.store.append("s-b", ExpectedVersion::NoStream, events(3)).await.unwrap();
    source.store.append("s-a", ExpectedVersion::Exact(1), vec![child]).await.unwrap();
    let mut original = all_events(&*source.store).await;
    // pretend they were recorded long ago, with a gap in positions (as PostgreSQL may leave)
    for (i, e) in original.iter_mut().enumerate() {
        e.recorded_at -= Duration::days(30);
        e.position += i as i64 * 10;
    }

    let s = &*log.store;
    let first = s.import(original[..3].to_vec()).await.unwrap();
    assert_eq!((first.imported, first.skipped, first.renumbered), (3, 0, 0));
    // overlapping re-run: the first three are skipped, the rest imported
    let second = s.import(original.clone()).await.unwrap();
    assert_eq!((second.imported, second.skipped), (2, 3));
    assert_eq!(all_events(s).await, original, "ids, versions, positions, times and content kept");
    let again = s.import(original.clone()).await.unwrap();
    assert_eq!((again.imported, again.skipped), (0, original.len()));

    // changed content under a known id, and a version gap, are refused and write nothing
    let mut changed = original[0].clone();
    changed.payload = serde_json::json!({"tampered": true});
    assert!(matches!(s.import(vec![changed]).await, Err(EventLogError::IdempotencyConflict { .. })));
    let mut gap = original[1].clone();
    gap.event_id = uuid::Uuid::now_v7();
    gap.stream_version = 9;
    assert!(matches!(s.import(vec![gap]).await, Err(EventLogError::Conflict { .. })));
    assert_eq!(all_events(s).await.len(), original.len());

    // an ordinary append continues above the imported positions
    let head = original.last().unwrap().position;
    let appended = s.append("s-b", ExpectedVersion::Exact(3), events(1)).await.unwrap();
    assert!(appended.last_position() > head, "{} > {head}", appended.last_position());
    assert_eq!(appended.stream_version, 4);
    assert_eq!(s.head_position().await.unwrap(), appended.last_position());
}

on_both_backends!(StoreOptions::default() =>
    imported_events_keep_ids_versions_times_and_positions as import_keeps_ids_versions_times_positions,
);
