//! Source ids per owner (`emitSourceEvent`).

use super::*;
use agentlog_domain::signal::{Source, SourceCommand};

const EMIT: &str = "mutation($id: String!) { emitSourceEvent(sourceId: $id, sourceType: \"agent.execution.completed\", \
    payload: {n: 1}, timestampMs: 1700000000000) { accepted position scopeKey } }";

/// Source ids are per owner: bob's report with alice's `sourceId` is received as for an unknown
/// id (his own source, its own chain), alice's id again is still her one source, and a global
/// source stream written before ids were per owner stays its owner's.
async fn source_ids_are_per_owner(db: Db) {
    {
        let state = open_app(&db.url(), Settings::default(), ApiLimits::default()).await.expect("open the app");
        let ctx = Context::new(Utc::now(), Uuid::now_v7(), Actor::user("alice"), "alice");
        let receive = SourceCommand::Receive {
            source_id: "old".into(),
            source_type: "agent.execution.completed".into(),
            payload: json!({"n": 0}),
            scope_key: None,
            timestamp_ms: 1_700_000_000_000,
        };
        state.handler.execute_stream::<Source>("source-old", &receive, &ctx).await.expect("legacy source");
        state.store.close().await;
    }
    let s = Server::start(db).await;
    let alice = s.user_token("alice").await;
    let bob = s.user_token("bob").await;
    let a = s.data(Some(&alice), EMIT, json!({"id": "s1"})).await;
    let b = s.data(Some(&bob), EMIT, json!({"id": "s1"})).await;
    let unknown = s.data(Some(&bob), EMIT, json!({"id": "s2"})).await;
    assert_eq!(a["emitSourceEvent"]["accepted"], true, "{a}");
    assert_eq!(b["emitSourceEvent"]["accepted"], true, "{b}");
    assert_eq!(b["emitSourceEvent"]["scopeKey"], unknown["emitSourceEvent"]["scopeKey"], "as for an unknown id");
    let again = s.data(Some(&alice), EMIT, json!({"id": "s1"})).await;
    assert_eq!(again["emitSourceEvent"]["accepted"], false, "her own id again is one source: {again}");
    // The global stream of before: alice's id again is that source; bob's is his own.
    let old = s.data(Some(&alice), EMIT, json!({"id": "old"})).await;
    assert_eq!(old["emitSourceEvent"]["accepted"], false, "{old}");
    let old = s.data(Some(&bob), EMIT, json!({"id": "old"})).await;
    assert_eq!(old["emitSourceEvent"]["accepted"], true, "{old}");
    // Each sees only the sources of their own.
    let q = "{ events(filter: {eventTypes: [\"signal.source_received\"]}) { edges { node { streamId userId } } } }";
    for (token, who, want) in [
        (&alice, "alice", vec!["source-old", "source@alice/s1"]),
        (&bob, "bob", vec!["source@bob/s1", "source@bob/s2", "source@bob/old"]),
    ] {
        let d = s.data(Some(token), q, json!({})).await;
        let mut streams: Vec<String> = d["events"]["edges"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .inspect(|e| assert_eq!(e["node"]["userId"], who, "{d}"))
            .filter_map(|e| e["node"]["streamId"].as_str().map(str::to_string))
            .collect();
        streams.sort();
        let mut want: Vec<String> = want.into_iter().map(str::to_string).collect();
        want.sort();
        assert_eq!(streams, want, "{d}");
    }
    let db = s.stop();
    support::verify_read_models(&db).await;
}

both!(source_ids_are_per_owner as source_ids_per_owner);
