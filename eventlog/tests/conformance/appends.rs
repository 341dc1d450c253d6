//! Appends: expected versions, atomic batches, idempotency, bad input.

use std::sync::Arc;

use agentlog_eventlog::{
    EventLogError, ExpectedVersion, Limits, StoreOptions, StreamAppend, ValidationError, testing::TestLog,
};
use serde_json::json;

use crate::{
    on_both_backends,
    support::{all_events, count, event, events},
};

async fn expected_versions(log: TestLog) {
    let s = &*log.store;
    let first = s.append("op-1", ExpectedVersion::NoStream, events(2)).await.unwrap();
    assert_eq!(first.stream_version, 2);
    assert!(first.positions[0] < first.positions[1]);
    assert!(!first.duplicate);

    // a mismatch names the stream, what was expected and what is there, and writes nothing
    for expected in [ExpectedVersion::NoStream, ExpectedVersion::Exact(1), ExpectedVersion::Exact(3)] {
        let err = s.append("op-1", expected, events(1)).await.unwrap_err();
        match &err {
            EventLogError::Conflict { stream_id, expected: e, actual } => {
                assert_eq!(stream_id, "op-1");
                assert_eq!(*e, expected);
                assert_eq!(*actual, 2);
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        let text = err.to_string();
        assert!(text.contains("op-1") && text.contains("actual 2"), "{text}");
        assert_eq!(s.read_stream("op-1", 1, 100).await.unwrap().len(), 2);
    }
    let missing = s.append("op-2", ExpectedVersion::Exact(1), events(1)).await.unwrap_err();
    assert!(matches!(missing, EventLogError::Conflict { actual: 0, .. }), "{missing:?}");
    let zero = s.append("op-2", ExpectedVersion::Exact(0), events(1)).await.unwrap_err();
    assert!(zero.is_conflict());
    assert_eq!(s.stream_version("op-2").await.unwrap(), 0);

    let exact = s.append("op-1", ExpectedVersion::Exact(2), events(1)).await.unwrap();
    assert_eq!(exact.stream_version, 3);
    let any = s.append("op-1", ExpectedVersion::Any, events(2)).await.unwrap();
    assert_eq!(any.stream_version, 5);
    let any_new = s.append("op-3", ExpectedVersion::Any, events(1)).await.unwrap();
    assert_eq!(any_new.stream_version, 1);
    let versions: Vec<i64> = s.read_stream("op-1", 1, 100).await.unwrap().iter().map(|e| e.stream_version).collect();
    assert_eq!(versions, vec![1, 2, 3, 4, 5]);
    assert_eq!(count(s).await, 6);
}

async fn concurrent_writers_on_one_stream_never_share_a_version(log: TestLog) {
    let store = Arc::clone(&log.store);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let mut won = 0;
            for _ in 0..25 {
                loop {
                    let v = store.stream_version("hot-1").await.unwrap();
                    match store.append("hot-1", ExpectedVersion::from_version(v), events(1)).await {
                        Ok(_) => {
                            won += 1;
                            break;
                        }
                        Err(e) if e.is_conflict() => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            }
            won
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 200);
    let versions: Vec<i64> =
        store.read_stream("hot-1", 1, 1000).await.unwrap().iter().map(|e| e.stream_version).collect();
    assert_eq!(versions, (1..=200).collect::<Vec<_>>());
}

async fn a_failed_batch_leaves_no_trace(log: TestLog) {
    let s = &*log.store;
    let taken = events(1);
    s.append("other-1", ExpectedVersion::Any, taken.clone()).await.unwrap();
    let before = all_events(s).await;

    // the middle event re-uses an id stored elsewhere: the whole batch is refused
    let mut batch = events(3);
    batch[1] = taken[0].clone();
    let err = s.append("batch-1", ExpectedVersion::Any, batch.clone()).await.unwrap_err();
    assert!(matches!(err, EventLogError::IdempotencyConflict { .. }), "{err:?}");
    assert_eq!(all_events(s).await, before);
    assert_eq!(s.stream_version("batch-1").await.unwrap(), 0);

    // a multi-stream append whose second part conflicts writes neither part
    let err = s
        .append_multi(vec![
            StreamAppend::new("batch-2", ExpectedVersion::NoStream, events(2)),
            StreamAppend::new("other-1", ExpectedVersion::Exact(7), events(1)),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(err, EventLogError::Conflict { ref stream_id, actual: 1, .. } if stream_id == "other-1"),
        "{err:?}"
    );
    assert_eq!(all_events(s).await, before);

    // a batch whose last event is invalid is refused before it reaches the database
    let mut batch = events(3);
    batch[2].event_type = "NotDotted".into();
    let err = s.append("batch-3", ExpectedVersion::Any, batch).await.unwrap_err();
    assert!(matches!(err, EventLogError::Validation(ValidationError::InvalidEventType(_))), "{err:?}");
    assert_eq!(all_events(s).await, before);

    // and a good multi-stream append writes both parts atomically
    let ok = s
        .append_multi(vec![
            StreamAppend::new("batch-2", ExpectedVersion::NoStream, events(2)),
            StreamAppend::new("other-1", ExpectedVersion::Exact(1), events(1)),
        ])
        .await
        .unwrap();
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[0].stream_version, 2);
    assert_eq!(ok[1].stream_version, 2);
}

async fn reappending_the_same_ids_is_idempotent(log: TestLog) {
    let s = &*log.store;
    let batch = events(3);
    let first = s.append("idem-1", ExpectedVersion::NoStream, batch.clone()).await.unwrap();
    let head = s.head_position().await.unwrap();
    // the same events again: success, original positions, nothing written — even though the
    // expectation (no stream) no longer holds, as with EventStoreDB
    let again = s.append("idem-1", ExpectedVersion::NoStream, batch.clone()).await.unwrap();
    assert!(again.duplicate);
    assert_eq!(again.positions, first.positions);
    assert_eq!(again.stream_version, 3);
    assert_eq!(s.head_position().await.unwrap(), head);
    assert_eq!(count(s).await, 3);

    // the same id with other content is an error, and writes nothing
    let mut changed = batch.clone();
    changed[1].payload = json!({"tampered": true});
    let err = s.append("idem-1", ExpectedVersion::Any, changed).await.unwrap_err();
    assert!(
        matches!(err, EventLogError::IdempotencyConflict { event_id, .. } if event_id == batch[1].event_id),
        "{err:?}"
    );
    // the same id in another stream is an error too
    let err = s.append("idem-2", ExpectedVersion::Any, vec![batch[0].clone()]).await.unwrap_err();
    assert!(matches!(err, EventLogError::IdempotencyConflict { .. }), "{err:?}");
    // part old, part new: refused
    let mut mixed = vec![batch[2].clone()];
    mixed.extend(events(1));
    let err = s.append("idem-1", ExpectedVersion::Any, mixed).await.unwrap_err();
    assert!(matches!(err, EventLogError::IdempotencyConflict { .. }), "{err:?}");
    assert_eq!(count(s).await, 3);

    // the same new events raced from several tasks are written once
    let racing = events(2);
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let store = Arc::clone(&log.store);
        let racing = racing.clone();
        tasks.push(tokio::spawn(async move { store.append("idem-3", ExpectedVersion::Any, racing).await.unwrap() }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    assert_eq!(results.iter().filter(|r| !r.duplicate).count(), 1);
    assert!(results.iter().all(|r| r.positions == results[0].positions));
    assert_eq!(count(s).await, 5);
}

fn refuse<T: std::fmt::Debug>(r: Result<T, EventLogError>) -> ValidationError {
    match r {
        Err(EventLogError::Validation(v)) => v,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

async fn bad_input_is_refused_and_writes_nothing(log: TestLog) {
    let s = &*log.store;
    s.append("ok-1", ExpectedVersion::Any, events(1)).await.unwrap();
    let head = s.head_position().await.unwrap();

    assert_eq!(refuse(s.append("", ExpectedVersion::Any, events(1)).await), ValidationError::EmptyStreamId);
    assert!(matches!(
        refuse(s.append("has space", ExpectedVersion::Any, events(1)).await),
        ValidationError::InvalidStreamId { .. }
    ));
    assert!(matches!(
        refuse(s.append(&"x".repeat(300), ExpectedVersion::Any, events(1)).await),
        ValidationError::InvalidStreamId { .. }
    ));
    assert_eq!(refuse(s.append("ok-1", ExpectedVersion::Any, vec![]).await), ValidationError::NoEvents);
    for bad_type in ["started", "Operation.Started", "operation started", "operation.", "op-x.y"] {
        let mut e = events(1);
        e[0].event_type = bad_type.into();
        assert!(
            matches!(refuse(s.append("ok-1", ExpectedVersion::Any, e).await), ValidationError::InvalidEventType(_)),
            "{bad_type}"
        );
    }
    for not_object in [json!([1, 2]), json!("text"), json!(null), json!(3)] {
        let mut e = events(1);
        e[0].payload = not_object;
        assert!(matches!(
            refuse(s.append("ok-1", ExpectedVersion::Any, e).await),
            ValidationError::PayloadNotObject { .. }
        ));
    }
    let mut big = events(1);
    big[0].payload = json!({"blob": "x".repeat(2 * 1024 * 1024)});
    assert!(matches!(
        refuse(s.append("ok-1", ExpectedVersion::Any, big).await),
        ValidationError::PayloadTooLarge { limit: 1048576, .. }
    ));
    let mut nul = events(1);
    nul[0].payload = json!({"text": "a\u{0}b"});
    assert!(matches!(refuse(s.append("ok-1", ExpectedVersion::Any, nul).await), ValidationError::NulInJson { .. }));
    let mut twice = events(2);
    twice[1].event_id = twice[0].event_id;
    assert!(matches!(
        refuse(s.append("ok-1", ExpectedVersion::Any, twice).await),
        ValidationError::DuplicateEventId(_)
    ));
    let mut nobody = events(1);
    nobody[0].metadata.user_id = String::new();
    assert!(matches!(
        refuse(s.append("ok-1", ExpectedVersion::Any, nobody).await),
        ValidationError::EmptyUserId { .. }
    ));
    let mut old = events(1);
    old[0].schema_version = 0;
    assert!(matches!(
        refuse(s.append("ok-1", ExpectedVersion::Any, old).await),
        ValidationError::InvalidSchemaVersion { .. }
    ));
    let dup_stream = s
        .append_multi(vec![
            StreamAppend::new("ok-2", ExpectedVersion::Any, events(1)),
            StreamAppend::new("ok-2", ExpectedVersion::Any, events(1)),
        ])
        .await;
    assert!(matches!(refuse(dup_stream), ValidationError::DuplicateStream(_)));

    assert_eq!(s.head_position().await.unwrap(), head);
    assert_eq!(count(s).await, 1);
}

async fn the_payload_limit_is_configurable(log: TestLog) {
    let s = &*log.store;
    let mut e = events(1);
    e[0].payload = json!({"blob": "x".repeat(2000)});
    let err = s.append("small-1", ExpectedVersion::Any, e).await.unwrap_err();
    assert!(matches!(err, EventLogError::Validation(ValidationError::PayloadTooLarge { limit: 1024, .. })), "{err:?}");
    let mut e = events(1);
    e[0].payload = json!({"blob": "x".repeat(900)});
    s.append("small-1", ExpectedVersion::Any, e).await.unwrap();
}

async fn events_round_trip_exactly(log: TestLog) {
    let s = &*log.store;
    let source = event("source.received", "u7");
    let child = crate::support::caused(&source, "signal.emitted");
    let mut wide = event("test.happened", "u7");
    wide.payload =
        json!({"unicode": "héllo ✓ 你好", "nested": {"a": [1, 2.5, -3, true, null]}, "big": 9007199254740993_u64});
    wide.metadata = wide.metadata.clone().with_correlation("req-9");
    let appended =
        s.append("rt-1", ExpectedVersion::NoStream, vec![source.clone(), child.clone(), wide.clone()]).await.unwrap();
    let back = s.read_stream("rt-1", 1, 10).await.unwrap();
    assert_eq!(back.len(), 3);
    for ((got, sent), pos) in back.iter().zip([&source, &child, &wide]).zip(&appended.positions) {
        assert_eq!(got.event_id, sent.event_id);
        assert_eq!(got.event_type, sent.event_type);
        assert_eq!(got.schema_version, sent.schema_version);
        assert_eq!(got.payload, sent.payload);
        assert_eq!(got.metadata, sent.metadata);
        assert_eq!(got.position, *pos);
        assert_eq!(got.stream_id, "rt-1");
    }
    assert_eq!(back[1].metadata.chain.root_source_id, source.event_id);
    assert_eq!(back[1].metadata.chain.parent_node_id, Some(source.event_id));
    assert!(back[0].recorded_at <= back[2].recorded_at);
    assert_eq!(back[0].recorded_at.timestamp_subsec_nanos() % 1000, 0, "microsecond precision");
}

async fn a_guard_part_holds_a_stream_it_does_not_write(log: TestLog) {
    let s = &*log.store;
    s.append("read-1", ExpectedVersion::Any, events(2)).await.unwrap();
    let before = all_events(s).await;
    // the read stream moved past the version the decision read: nothing is written
    let err = s
        .append_multi(vec![
            StreamAppend::new("write-1", ExpectedVersion::NoStream, events(1)),
            StreamAppend::new("read-1", ExpectedVersion::Exact(1), Vec::new()),
        ])
        .await
        .unwrap_err();
    assert!(
        matches!(err, EventLogError::Conflict { ref stream_id, actual: 2, .. } if stream_id == "read-1"),
        "{err:?}"
    );
    assert_eq!(all_events(s).await, before);
    // at the version read: the write lands, the guarded stream is untouched
    let ok = s
        .append_multi(vec![
            StreamAppend::new("write-1", ExpectedVersion::NoStream, events(1)),
            StreamAppend::new("read-1", ExpectedVersion::Exact(2), Vec::new()),
        ])
        .await
        .unwrap();
    assert_eq!(ok[0].stream_version, 1);
    assert!(ok[1].positions.is_empty());
    assert_eq!(s.stream_version("read-1").await.unwrap(), 2);
    assert_eq!(all_events(s).await.len(), before.len() + 1);
    // guards alone write nothing and are refused as such
    let err =
        s.append_multi(vec![StreamAppend::new("read-1", ExpectedVersion::Exact(2), Vec::new())]).await.unwrap_err();
    assert!(matches!(err, EventLogError::Validation(ValidationError::NoEvents)), "{err:?}");
}

/// `append_in_order`: many appends queued at once are committed in the order given (positions
/// rise with it, and an append that expects the version an earlier one makes succeeds), each is
/// judged alone (a conflict or bad input fails only itself), and the answers come back in order.
async fn appends_in_order_are_committed_in_order_and_judged_alone(log: TestLog) {
    let s = &*log.store;
    let mut appends = Vec::new();
    for i in 0..300i64 {
        // Each stream is written by three appends in a row, each expecting the one before.
        let expected = if i % 3 == 0 { ExpectedVersion::NoStream } else { ExpectedVersion::Exact(i % 3) };
        appends.push(vec![
            StreamAppend::new(format!("ord-{}", i / 3), expected, events(1)),
            StreamAppend::new(format!("tick-{i}"), ExpectedVersion::NoStream, events(1)),
        ]);
    }
    // A conflict (ord-0 is at version 3 by then) and an empty append, in the middle.
    appends.insert(150, vec![StreamAppend::new("ord-0", ExpectedVersion::Exact(1), events(1))]);
    appends.insert(151, vec![StreamAppend::new("empty-1", ExpectedVersion::Any, Vec::new())]);
    let answers = s.append_in_order(appends).await;
    assert_eq!(answers.len(), 302);
    assert!(answers[150].as_ref().is_err_and(EventLogError::is_conflict), "{:?}", answers[150]);
    assert!(matches!(answers[151], Err(EventLogError::Validation(ValidationError::NoEvents))), "{:?}", answers[151]);
    let mut last = 0;
    for (i, answer) in answers.iter().enumerate().filter(|(i, _)| *i != 150 && *i != 151) {
        let results = answer.as_ref().unwrap_or_else(|e| panic!("append {i}: {e}"));
        let positions: Vec<i64> = results.iter().flat_map(|r| r.positions.iter().copied()).collect();
        assert!(positions.iter().all(|p| *p > last), "append {i} at {positions:?}, after {last}");
        last = positions.iter().copied().max().unwrap_or(last);
    }
    assert_eq!(count(s).await, 600);
    assert_eq!(s.stream_version("ord-0").await.unwrap(), 3);
    assert_eq!(s.stream_version("ord-99").await.unwrap(), 3);
}

on_both_backends!(StoreOptions::default() =>
    appends_in_order_are_committed_in_order_and_judged_alone as append_in_order,
    expected_versions as append_with_expected_version_any_no_stream_exact,
    concurrent_writers_on_one_stream_never_share_a_version as concurrent_appends_to_one_stream,
    a_failed_batch_leaves_no_trace as batch_is_atomic,
    a_guard_part_holds_a_stream_it_does_not_write as guard_part_holds_a_read_stream,
    reappending_the_same_ids_is_idempotent as idempotent_reappend,
    bad_input_is_refused_and_writes_nothing as bad_input_refused,
    events_round_trip_exactly as events_round_trip,
);

on_both_backends!(StoreOptions { limits: Limits { max_payload_bytes: 1024, ..Limits::default() }, ..StoreOptions::default() } =>
    the_payload_limit_is_configurable as payload_limit_configurable,
);
