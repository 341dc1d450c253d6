//! Unit tests of the api crate's pure parts. They live here, not beside the code, so that
//! `cargo test` does not compile the whole api crate a second time as a test harness (the
//! crate's `[lib] test = false`): the biggest single saving in CI's build.

use agentlog_api::{
    auth::{bearer, hash},
    deltas::{DeltaError, DeltaHub, MAX_DELTA_BYTES},
    feed::plan::{EventField, Payload, plan},
    metrics::{Gauges, Metrics},
    over_http::AnswerType,
};

#[test]
fn bearer_parses_the_scheme_case_insensitively() {
    assert_eq!(bearer("Bearer al_x"), Some("al_x"));
    assert_eq!(bearer("bearer  al_x "), Some("al_x"));
    assert_eq!(bearer("Basic abc"), None);
    assert_eq!(bearer("al_x"), None);
}

#[test]
fn hashes_are_hex_sha256() {
    assert_eq!(hash("a").len(), 64);
    assert_ne!(hash("a"), hash("b"));
}

#[test]
fn deltas_accumulate_and_reach_subscribers_then_finish() {
    let hub = DeltaHub::default();
    hub.publish("u", "t", "m", "He", 100).unwrap();
    let mut rx = hub.subscribe("u", "t");
    assert_eq!(hub.snapshots("u", "t")[0].delta, "He");
    assert_eq!(hub.publish("u", "t", "m", "llo", 100).unwrap(), 5);
    let d = rx.try_recv().unwrap();
    assert_eq!((d.delta.as_str(), d.snapshot, d.done, d.length), ("llo", false, false, 5));
    hub.finish("u", "t", "m");
    assert!(rx.try_recv().unwrap().done);
    assert!(hub.snapshots("u", "t").is_empty(), "a finished message keeps nothing in memory");
}

#[test]
fn two_users_topics_of_one_id_stream_apart_and_oversized_deltas_are_refused() {
    let hub = DeltaHub::default();
    let mut rx = hub.subscribe("u", "t");
    hub.publish("u", "t", "m", "x", 100).unwrap();
    // Topic ids are per owner: v's topic `t` is another topic.
    assert_eq!(hub.publish("v", "t", "m", "y", 100), Ok(1));
    assert_eq!(rx.try_recv().unwrap().delta, "x");
    assert!(rx.try_recv().is_err(), "v's delta never reaches u's subscriber");
    assert_eq!(hub.snapshots("v", "t")[0].delta, "y");
    let big = "x".repeat(MAX_DELTA_BYTES + 1);
    assert!(matches!(hub.publish("u", "t", "m", &big, 100), Err(DeltaError::Limit(_))));
    assert_eq!(hub.snapshots("u", "t")[0].delta, "x", "refused deltas change nothing");
}

#[test]
fn renders_counters_and_lag() {
    let m = Metrics::default();
    Metrics::inc(&m.appends);
    let text =
        m.render(Gauges { head_position: 10, projection_position: 7, failed_projections: 0, wal_checkpoints: None });
    assert!(text.contains("agentlog_appends_total 1\n"));
    assert!(text.contains("agentlog_projection_lag_events 3\n"));
    assert!(text.contains("# TYPE agentlog_subscribers gauge"));
}

#[test]
fn refusals_are_counted_by_reactor_and_code() {
    let m = Metrics::default();
    m.refused("orchestration", "NOT_FOUND");
    m.refused("orchestration", "NOT_FOUND");
    m.refused("task-cascade", "CONFLICT");
    let text = m.render(Gauges::default());
    assert!(text.contains("# TYPE agentlog_reactor_refusals_total counter\n"), "{text}");
    assert!(
        text.contains("agentlog_reactor_refusals_total{reactor=\"orchestration\",code=\"NOT_FOUND\"} 2\n"),
        "{text}"
    );
    assert!(text.contains("agentlog_reactor_refusals_total{reactor=\"task-cascade\",code=\"CONFLICT\"} 1\n"), "{text}");
}

fn accept(value: &str) -> AnswerType {
    let mut h = axum::http::HeaderMap::new();
    h.insert(axum::http::header::ACCEPT, axum::http::HeaderValue::from_str(value).unwrap());
    AnswerType::from_headers(&h)
}

/// GraphQL over HTTP: the answer's media type follows `Accept` (no header, `*/*` or an unknown
/// type: `application/json`).
#[test]
fn the_answer_type_follows_accept() {
    assert_eq!(AnswerType::from_headers(&axum::http::HeaderMap::new()), AnswerType::Json);
    assert_eq!(accept("*/*"), AnswerType::Json);
    assert_eq!(accept("application/json"), AnswerType::Json);
    assert_eq!(accept("application/graphql-response+json"), AnswerType::GraphqlResponse);
    assert_eq!(accept("application/graphql-response+json, application/json;q=0.9"), AnswerType::GraphqlResponse);
    assert_eq!(accept("application/json, application/graphql-response+json;q=0.5"), AnswerType::Json);
    assert_eq!(accept("text/plain"), AnswerType::Json);
}

fn payload(query: &str, variables: serde_json::Value) -> Payload {
    Payload { query: query.into(), variables: Some(variables), operation_name: None }
}

#[test]
fn feed_plans_a_plain_events_selection() {
    let p = plan(&payload(
        "subscription($p: Int, $s: Boolean!) { log: events(fromPosition: $p, settled: $s) { position at: recordedAt __typename } }",
        serde_json::json!({"p": 7, "s": true}),
    ))
    .expect("planned");
    assert_eq!(p.key, "log");
    assert_eq!(p.from_position, Some(7));
    assert!(p.settled);
    assert_eq!(
        p.fields,
        vec![
            ("position".into(), EventField::Position),
            ("at".into(), EventField::RecordedAt),
            ("__typename".into(), EventField::Typename)
        ]
    );
}

#[test]
fn feed_leaves_what_the_engine_must_judge_to_it() {
    let none = serde_json::json!({});
    for query in [
        "subscription { events { position ...F } } fragment F on Event { eventId }",
        "subscription { events { position @include(if: true) } }",
        "subscription { events { position position } }",
        "subscription { events { nope } }",
        "subscription { events(fromPosition: \"x\") { position } }",
        "subscription($p: String) { events(fromPosition: $p) { position } }",
        "subscription($p: Int, $q: Int) { events(fromPosition: $p) { position } }",
        "subscription($s: Boolean) { events(settled: $s) { position } }",
        "subscription { events(settled: null) { position } }",
        "subscription { events { position } operationChanged(id: \"x\") { position } }",
        "query { headPosition }",
        "subscription { events }",
        "subscription { events(unknown: 1) { position } }",
    ] {
        assert!(plan(&payload(query, none.clone())).is_none(), "{query}");
    }
}

#[test]
fn feed_coerces_a_filter_as_the_engine_does() {
    let p = plan(&payload(
        "subscription($f: EventFilterInput) { events(filter: $f) { position } }",
        serde_json::json!({"f": {"eventTypes": ["a.b"], "streamPrefix": "s-"}}),
    ))
    .expect("planned");
    let f = p.filter.expect("a filter");
    assert_eq!(f.event_types, Some(vec!["a.b".to_string()]));
    assert_eq!(f.stream_prefix.as_deref(), Some("s-"));
    assert!(plan(&payload("subscription { events(filter: {nope: 1}) { position } }", serde_json::json!({}))).is_none());
    let unknown = serde_json::json!({"f": {"nope": 1}});
    assert!(
        plan(&payload("subscription($f: EventFilterInput) { events(filter: $f) { position } }", unknown)).is_none()
    );
}
