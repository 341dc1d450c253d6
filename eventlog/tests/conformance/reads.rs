//! Reading a stream and the whole log with filters.

use agentlog_eventlog::{EventFilter, ExpectedVersion, StoreOptions, testing::TestLog};

use crate::{
    on_both_backends,
    support::{caused, event, events},
};

async fn read_a_stream_from_a_version(log: TestLog) {
    let s = &*log.store;
    s.append("task-1", ExpectedVersion::NoStream, events(5)).await.unwrap();
    s.append("task-2", ExpectedVersion::NoStream, events(2)).await.unwrap();
    s.append("task-1", ExpectedVersion::Exact(5), events(2)).await.unwrap();
    let from3: Vec<i64> = s.read_stream("task-1", 3, 100).await.unwrap().iter().map(|e| e.stream_version).collect();
    assert_eq!(from3, vec![3, 4, 5, 6, 7]);
    let limited: Vec<i64> = s.read_stream("task-1", 2, 2).await.unwrap().iter().map(|e| e.stream_version).collect();
    assert_eq!(limited, vec![2, 3]);
    assert!(s.read_stream("task-1", 8, 10).await.unwrap().is_empty());
    assert!(s.read_stream("task-9", 1, 10).await.unwrap().is_empty());
    let all = s.read_stream("task-1", 1, 100).await.unwrap();
    assert!(all.windows(2).all(|w| w[0].position < w[1].position));
    assert!(all.iter().all(|e| e.stream_id == "task-1"));
}

async fn read_the_log_with_filters(log: TestLog) {
    let s = &*log.store;
    let source = event("source.received", "alice");
    let signal = caused(&source, "signal.emitted");
    let action = caused(&signal, "action.applied");
    s.append("source-1", ExpectedVersion::NoStream, vec![source.clone()]).await.unwrap();
    s.append("operation-1", ExpectedVersion::NoStream, vec![event("operation.started", "bob")]).await.unwrap();
    s.append("signal-1", ExpectedVersion::NoStream, vec![signal.clone(), action.clone()]).await.unwrap();
    s.append(
        "operation-2",
        ExpectedVersion::NoStream,
        vec![event("operation.started", "alice"), event("operation.completed", "alice")],
    )
    .await
    .unwrap();
    // prefix characters that are wildcards in LIKE must match literally, and case matters
    s.append("op_x-1", ExpectedVersion::NoStream, vec![event("test.happened", "carol")]).await.unwrap();
    s.append("OPERATION-3", ExpectedVersion::NoStream, vec![event("test.happened", "carol")]).await.unwrap();

    let types = |f: &EventFilter| {
        let f = f.clone();
        async move {
            s.read_all(0, &f, 100).await.unwrap().into_iter().map(|e| (e.stream_id, e.event_type)).collect::<Vec<_>>()
        }
    };
    let all = s.read_all(0, &EventFilter::all(), 100).await.unwrap();
    assert_eq!(all.len(), 8);
    assert!(all.windows(2).all(|w| w[0].position < w[1].position));

    assert_eq!(
        types(&EventFilter::types(["operation.started"])).await,
        vec![
            ("operation-1".to_string(), "operation.started".to_string()),
            ("operation-2".to_string(), "operation.started".to_string()),
        ]
    );
    assert_eq!(types(&EventFilter::types(["operation.completed", "signal.emitted"])).await.len(), 2);
    let prefixed = types(&EventFilter::all().with_stream_prefix("operation-")).await;
    assert_eq!(prefixed.len(), 3, "{prefixed:?}");
    assert_eq!(types(&EventFilter::all().with_stream_prefix("op_")).await.len(), 1);
    assert_eq!(types(&EventFilter::all().with_stream_prefix("op%")).await.len(), 0);
    let chain = s.read_all(0, &EventFilter::all().with_root_source(source.event_id), 100).await.unwrap();
    assert_eq!(
        chain.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        vec![source.event_id, signal.event_id, action.event_id]
    );
    assert_eq!(chain[2].metadata.chain.parent_node_id, Some(signal.event_id));
    let alice = s.read_all(0, &EventFilter::all().with_user("alice"), 100).await.unwrap();
    assert_eq!(alice.len(), 5);
    assert!(alice.iter().all(|e| e.metadata.user_id == "alice"));
    let combined = EventFilter::types(["operation.started"]).with_user("alice").with_stream_prefix("operation-");
    assert_eq!(types(&combined).await, vec![("operation-2".to_string(), "operation.started".to_string())]);

    // from a position, with a limit
    let after = all[2].position;
    let page = s.read_all(after, &EventFilter::all(), 3).await.unwrap();
    assert_eq!(
        page.iter().map(|e| e.position).collect::<Vec<_>>(),
        all[3..6].iter().map(|e| e.position).collect::<Vec<_>>()
    );
    assert!(s.read_all(all[7].position, &EventFilter::all(), 10).await.unwrap().is_empty());
    assert_eq!(s.head_position().await.unwrap(), all[7].position);

    // backward: the last `limit` strictly between two positions, newest first, filters applied
    let positions =
        |events: Vec<agentlog_domain::envelope::RecordedEvent>| events.iter().map(|e| e.position).collect::<Vec<_>>();
    let back = s.read_all_back(all[1].position, all[7].position, &EventFilter::all(), 3).await.unwrap();
    assert_eq!(positions(back), vec![all[6].position, all[5].position, all[4].position]);
    let back = s.read_all_back(all[1].position, all[4].position, &EventFilter::all(), 10).await.unwrap();
    assert_eq!(positions(back), vec![all[3].position, all[2].position]);
    let alice_back = s.read_all_back(0, i64::MAX, &EventFilter::all().with_user("alice"), 100).await.unwrap();
    assert_eq!(positions(alice_back.clone()), alice.iter().rev().map(|e| e.position).collect::<Vec<_>>());
    let started = s.read_all_back(0, i64::MAX, &EventFilter::types(["operation.started"]), 1).await.unwrap();
    assert_eq!(started.iter().map(|e| e.stream_id.as_str()).collect::<Vec<_>>(), ["operation-2"]);
    assert!(s.read_all_back(0, all[0].position, &EventFilter::all(), 10).await.unwrap().is_empty());
}

async fn reopening_migrates_nothing_and_keeps_everything(log: TestLog) {
    let s = &*log.store;
    s.append("keep-1", ExpectedVersion::NoStream, events(3)).await.unwrap();
    let again = agentlog_eventlog::testing::reopen(&log.guard, StoreOptions::default()).await;
    assert_eq!(again.stream_version("keep-1").await.unwrap(), 3);
    let appended = again.append("keep-1", ExpectedVersion::Exact(3), events(1)).await.unwrap();
    assert_eq!(appended.stream_version, 4);
    again.close().await;
}

async fn locate_finds_stored_events_and_only_them(log: TestLog) {
    let s = &*log.store;
    let first = events(40);
    let second = events(30);
    let ids: Vec<uuid::Uuid> = first.iter().chain(&second).map(|e| e.event_id).collect();
    let a = s.append("locate-a", ExpectedVersion::NoStream, first).await.unwrap();
    let b = s.append("locate-b", ExpectedVersion::NoStream, second).await.unwrap();
    // More ids than a command's chunk of 64, with ids never stored among them.
    let mut asked = ids.clone();
    asked.insert(10, uuid::Uuid::now_v7());
    asked.push(uuid::Uuid::now_v7());
    let mut found = s.locate(&asked).await.unwrap();
    found.sort_by_key(|e| e.position);
    let expected: Vec<(i64, &str, i64)> = a
        .positions
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, "locate-a", i as i64 + 1))
        .chain(b.positions.iter().enumerate().map(|(i, p)| (*p, "locate-b", i as i64 + 1)))
        .collect();
    let got: Vec<(i64, &str, i64)> =
        found.iter().map(|e| (e.position, e.stream_id.as_str(), e.stream_version)).collect();
    assert_eq!(got, expected);
    assert!(s.locate(&[uuid::Uuid::now_v7()]).await.unwrap().is_empty());
    assert!(s.locate(&[]).await.unwrap().is_empty());
}

async fn unparsed_reads_hand_out_the_payloads_read_parses(log: TestLog) {
    let s = &*log.store;
    let payloads = [
        serde_json::json!({"n": 1, "text": "hello"}),
        serde_json::json!({"unicode": "é — 漢字 \u{1F600}", "escaped": "a\"b\\c\n", "nested": {"list": [1, 2.5, -3, null, true]}}),
        serde_json::json!({"big": 9_007_199_254_740_993_u64, "small": 1e-7, "empty": {}, "none": []}),
        serde_json::json!({"long key first": 1, "a": 2, "b": {"z": 1, "y": [{"k": "v"}]}}),
        serde_json::json!({}),
    ];
    let appended: Vec<_> = payloads
        .iter()
        .map(|p| {
            let mut e = event("test.happened", "u1");
            e.payload = p.clone();
            e
        })
        .collect();
    s.append("unparsed-1", ExpectedVersion::NoStream, appended).await.unwrap();
    s.append("other-1", ExpectedVersion::NoStream, events(2)).await.unwrap();

    let filter = EventFilter::all().with_stream_prefix("unparsed-");
    let parsed = s.read_all(0, &filter, 100).await.unwrap();
    let unparsed = s.read_all_unparsed(0, &filter, 100).await.unwrap();
    assert_eq!(unparsed.len(), payloads.len());
    for ((u, p), written) in unparsed.into_iter().zip(&parsed).zip(&payloads) {
        assert!(u.event.payload.is_null(), "the payload stays text: {:?}", u.event.payload);
        assert_eq!(&serde_json::from_str::<serde_json::Value>(&u.payload).unwrap(), written, "{}", u.payload);
        assert_eq!(&p.payload, written);
        assert_eq!(u.event.position, p.position);
        assert_eq!(u.event.event_id, p.event_id);
        assert_eq!(u.event.metadata, p.metadata);
        assert_eq!(u.event.recorded_at, p.recorded_at);
        assert_eq!(u.parsed().unwrap(), *p);
    }
    // the same pages and limits as `read_all`
    let page = s.read_all_unparsed(parsed[1].position, &filter, 2).await.unwrap();
    assert_eq!(page.iter().map(|e| e.event.position).collect::<Vec<_>>(), [parsed[2].position, parsed[3].position]);
}

on_both_backends!(StoreOptions::default() =>
    unparsed_reads_hand_out_the_payloads_read_parses as unparsed_reads_equal_parsed_ones,
    locate_finds_stored_events_and_only_them as locate_finds_stored_events,
    read_a_stream_from_a_version as read_stream_from_version,
    read_the_log_with_filters as read_all_with_filters_and_limit,
    reopening_migrates_nothing_and_keeps_everything as migrations_rerun_is_noop,
);
