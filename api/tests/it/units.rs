//! Unit tests of the api crate's pure parts. They live here, not beside the code, so that
//! `cargo test` does not compile the whole api crate a second time as a test harness (the
//! crate's `[lib] test = false`): the biggest single saving in CI's build.

use agentlog_api::{
    auth::{bearer, hash},
    deltas::{DeltaError, DeltaHub, MAX_DELTA_BYTES},
    feed::{
        plan::{EventField, Payload, plan},
        render::event_json,
        shared::Renders,
    },
    genai_metrics::GenAiMetrics,
    graphql::{
        admission::{Expansion, Refusal, admit, measure},
        durations::{Operation, RequestDurations},
        global_id::{GlobalId, NodeType},
        parsed::{DocumentCounts, MAX_GENERATION_TEXT, MAX_TEXT, ParsedDocuments},
    },
    metrics::{Gauges, Metrics},
    over_http::AnswerType,
    reactors::notification_retention::slot_of,
    state::ApiLimits,
};
use agentlog_eventlog::CommandCounts;
use async_graphql::parser::types::ExecutableDocument;
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::DateTime;
use std::time::Duration;

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
    Metrics::inc(&m.http_requests);
    let commands = CommandCounts { appends: 5, conflicts: 1, on_cache: 3, reloaded: 2 };
    let text = m.render(Gauges {
        head_position: 10,
        projection_position: 7,
        failed_projections: 0,
        projection_resumes: 4,
        commands,
        documents: DocumentCounts { reused: 7, parsed: 2 },
        wal_checkpoints: None,
    });
    assert!(text.contains("agentlog_http_requests_total 1\n"));
    assert!(text.contains("agentlog_appends_total 5\n") && text.contains("agentlog_conflicts_total 1\n"));
    assert!(text.contains("agentlog_cached_state_commands_total{outcome=\"appended\"} 3\n"), "{text}");
    assert!(text.contains("agentlog_cached_state_commands_total{outcome=\"reloaded\"} 2\n"), "{text}");
    assert!(text.contains("agentlog_graphql_documents_total{outcome=\"reused\"} 7\n"), "{text}");
    assert!(text.contains("agentlog_projection_lag_events 3\n"));
    assert!(text.contains("agentlog_projection_resumes_total 4\n"), "{text}");
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

// graphql::global_id

#[test]
fn global_ids_round_trip_and_refuse_garbage() {
    for (owner, id) in [("alice", "t-1"), ("a:b", "x:y"), ("ü", "ï")] {
        let g = GlobalId::new(NodeType::CronJob, owner, id);
        assert_eq!(GlobalId::parse(&g.to_string()), Some(g));
    }
    let other_owner = GlobalId::new(NodeType::Task, "bob", "t-1").to_string();
    assert_ne!(other_owner, GlobalId::new(NodeType::Task, "alice", "t-1").to_string());
    for bad in ["", "nope", "VGFzazox", "VGFzazo5OTphOmI"] {
        assert_eq!(GlobalId::parse(bad), None, "{bad}");
    }
    assert_eq!(GlobalId::parse(&URL_SAFE_NO_PAD.encode("Spaceship:5:alice:t-1")), None);
}

// graphql::admission

fn bomb(levels: usize) -> String {
    let mut q = format!("query {{ ...F{} }} fragment F0 on Query {{ __typename }}", levels - 1);
    for i in 1..levels {
        let spreads: Vec<String> = (0..10).map(|_| format!("...F{}", i - 1)).collect();
        q.push_str(&format!(" fragment F{i} on Query {{ {} }}", spreads.join(" ")));
    }
    q
}

fn parse(q: &str) -> ExecutableDocument {
    async_graphql::parser::parse_query(q).expect("parses")
}

#[test]
fn spreads_count_as_their_expansion() {
    let doc = parse(&bomb(3));
    // F0 = 1, F1 = 10, F2 = 100; the operation 100; the definitions 111.
    assert_eq!(measure(&doc, 10_000), Ok(Expansion { selections: 211, depth: 1 }));
    let doc = parse(&bomb(9));
    assert!(matches!(measure(&doc, 2_000), Err(Refusal::Limit(_))));
}

#[test]
fn depth_counts_fields_through_fragments() {
    let doc = parse("{ a { ...B } } fragment B on X { b { c { d } } }");
    assert_eq!(measure(&doc, 100).map(|e| e.depth), Ok(4));
}

#[test]
fn cycles_and_deep_nesting_are_refused_without_recursing_forever() {
    let doc = parse("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }");
    assert!(matches!(measure(&doc, 100), Err(Refusal::Cycle(_))));
    let mut q = String::from("{ ...F0 }");
    for i in 0..200 {
        q.push_str(&format!(" fragment F{i} on Query {{ ...F{} }}", i + 1));
    }
    q.push_str(" fragment F200 on Query { __typename }");
    assert!(matches!(measure(&parse(&q), 10_000), Err(Refusal::Limit(_))));
}

/// graphql-js's `getIntrospectionQuery()` (what GraphiQL sends), with descriptions.
const INTROSPECTION: &str = "query IntrospectionQuery { __schema { queryType { name } mutationType { name } \
    subscriptionType { name } types { ...FullType } directives { name description locations args { ...InputValue } } } } \
    fragment FullType on __Type { kind name description fields(includeDeprecated: true) { name description \
    args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason } inputFields { ...InputValue } \
    interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason } \
    possibleTypes { ...TypeRef } } \
    fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue } \
    fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { \
    kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }";

#[test]
fn introspection_is_measured_like_the_engine_measures_it() {
    // Small once expanded; 13 deep, as the engine's own depth check counts it.
    let doc = parse(INTROSPECTION);
    let e = measure(&doc, 2_000).expect("measured");
    assert!(e.selections < 500, "{e:?}");
    assert_eq!(e.depth, 13);
    // Admitted under its own allowance, with or without a token, at the default depth of 12.
    assert!(admit(&doc, &ApiLimits::default(), false).is_ok());
    let stricter = ApiLimits { max_introspection_depth: 12, ..ApiLimits::default() };
    assert!(matches!(admit(&doc, &stricter, true), Err(Refusal::Limit(_))));
    // The same depth in a data query is refused.
    let data = parse("{ a { b { c { d { e { f { g { h { i { j { k { l { m } } } } } } } } } } } } }");
    assert!(matches!(admit(&data, &ApiLimits::default(), true), Err(Refusal::Limit(_))));
}

#[test]
fn only_introspection_is_anonymous() {
    let limits = ApiLimits::default();
    let intro = parse("{ __schema { types { name } } ...T } fragment T on Query { __typename }");
    assert!(admit(&intro, &limits, false).is_ok());
    let data = parse("{ __typename ...T } fragment T on Query { headPosition }");
    assert_eq!(admit(&data, &limits, false), Err(Refusal::Unauthenticated));
    assert!(admit(&data, &limits, true).is_ok());
}

// reactors::notification_retention

#[test]
fn slots_start_on_multiples_of_the_period() {
    let t = DateTime::parse_from_rfc3339("2026-12-01T13:47:12.5Z").expect("time").to_utc();
    let hour = slot_of(t, Duration::from_secs(3600));
    assert_eq!(hour.to_rfc3339(), "2026-12-01T13:00:00+00:00");
    assert_eq!(slot_of(hour, Duration::from_secs(3600)), hour);
}

// feed::shared

fn recorded(position: i64, payload: serde_json::Value) -> agentlog_domain::envelope::RecordedEvent {
    use agentlog_domain::envelope::{Actor, EventMetadata};
    agentlog_domain::envelope::RecordedEvent {
        position,
        event_id: uuid::Uuid::from_u128(position as u128),
        stream_id: format!("s-{position}"),
        stream_version: 1,
        event_type: "a.b".into(),
        schema_version: 1,
        payload,
        metadata: EventMetadata::source(uuid::Uuid::from_u128(7), Actor::user("u"), "u", "topic:t1"),
        recorded_at: DateTime::from_timestamp_micros(1_733_400_000_000_000 + position).expect("time"),
    }
}

#[test]
fn feed_renders_an_event_once_per_selection_and_keeps_a_bounded_number() {
    let renders = Renders::default();
    let q = |fields: &str| plan(&payload(&format!("subscription {{ events {{ {fields} }} }}"), serde_json::json!({})));
    let a = q("position payload recordedAt").expect("planned");
    let a_again = q("position payload recordedAt").expect("planned");
    let b = q("p: position payload recordedAt").expect("planned");
    let (sa, sa2, sb) = (renders.selection(&a), renders.selection(&a_again), renders.selection(&b));
    let e = recorded(5, serde_json::json!({"x": "ü\n", "n": 1.5}));
    let first = renders.event(sa, &a, &e);
    // The same selection in another subscription gets the very same render.
    assert!(std::sync::Arc::ptr_eq(&first, &renders.event(sa2, &a_again, &e)));
    // Another selection (an alias) its own, and each is what the event renders as alone.
    let other = renders.event(sb, &b, &e);
    assert!(!std::sync::Arc::ptr_eq(&first, &other));
    for (p, got) in [(&a, &first), (&b, &other)] {
        let mut alone = Vec::new();
        event_json(&mut alone, p, &e);
        assert_eq!(&alone[..], &got[..]);
    }
    assert!(std::str::from_utf8(&other).expect("text").starts_with(r#"{"p":5,"payload":"#));
    // Old renders are let go once 16,384 newer ones are kept: the first is rendered again.
    for position in 6..(6 + 16_384) {
        renders.event(sa, &a, &recorded(position, serde_json::json!({})));
    }
    let again = renders.event(sa, &a, &e);
    assert!(!std::sync::Arc::ptr_eq(&first, &again));
    assert_eq!(first, again);
    // Past 64 distinct selections, a new one renders alone: correct, not kept.
    for i in 0..70 {
        let p = q(&format!("x{i}: position")).expect("planned");
        let s = renders.selection(&p);
        let one = renders.event(s, &p, &e);
        let two = renders.event(s, &p, &e);
        assert_eq!(one, two);
        assert_eq!(std::sync::Arc::ptr_eq(&one, &two), i < 62, "selection {i}");
    }
}

/// Parse `text` through `docs` and keep it, as admission does for an admitted request.
fn parse_and_keep(docs: &ParsedDocuments, text: &str) -> async_graphql::parser::types::ExecutableDocument {
    let parsed = docs.parse(text).expect("parses");
    if !parsed.reused {
        docs.keep(text, &parsed.doc);
    }
    parsed.doc
}

#[test]
fn reuses_kept_documents_and_stays_bounded() {
    let docs = ParsedDocuments::new(4);
    let q = "mutation { reportStep(id: \"r\", leaseToken: \"t\", phase: ACTING) { position } }";
    assert!(!docs.parse(q).unwrap().reused);
    assert!(!docs.parse(q).unwrap().reused, "not kept until admitted");
    let first = parse_and_keep(&docs, q);
    let again = docs.parse(q).unwrap();
    assert!(again.reused);
    assert_eq!(format!("{first:?}"), format!("{:?}", again.doc), "the same document");
    assert_eq!(docs.counts(), DocumentCounts { reused: 1, parsed: 3 });
    for i in 0..20 {
        parse_and_keep(&docs, &format!("{{ operation(id: \"{i}\") {{ id }} }}"));
        assert!(docs.held() <= 4, "bounded in entries");
    }
    assert!(docs.parse("{ nope").is_err(), "a syntax error is the engine's error");
    let long = format!("{{ a: headPosition {} }}", " ".repeat(MAX_TEXT));
    parse_and_keep(&docs, &long);
    assert!(!docs.parse(&long).unwrap().reused, "a long text is parsed each time");
    let none = ParsedDocuments::new(0);
    parse_and_keep(&none, q);
    assert!(!none.parse(q).unwrap().reused, "capacity 0 keeps nothing");
}

#[test]
fn kept_documents_are_bounded_in_text() {
    let docs = ParsedDocuments::new(10_000);
    let pad = " ".repeat(MAX_TEXT - 64);
    for i in 0..200 {
        parse_and_keep(&docs, &format!("{{ a{i}: headPosition {pad} }}"));
    }
    let most = 2 * MAX_GENERATION_TEXT / (MAX_TEXT - 64);
    assert!(docs.held() <= most + 1, "{} documents of ~4 KiB kept", docs.held());
}

#[test]
fn a_document_in_use_survives_churn() {
    let docs = ParsedDocuments::new(4);
    let hot = "{ headPosition }";
    for i in 0..50 {
        parse_and_keep(&docs, hot);
        parse_and_keep(&docs, &format!("{{ operation(id: \"{i}\") {{ id }} }}"));
    }
    assert_eq!(docs.counts().reused, 49, "the hot text parsed once");
}

// ---- `graphql::durations`: request durations by operation type and root field.

fn operation_of(text: &str, name: Option<&str>) -> Option<(&'static str, String)> {
    Operation::of(&async_graphql::parser::parse_query(text).unwrap(), name).map(|o| (o.kind, o.field))
}

#[test]
fn an_operation_is_labelled_by_its_root_field() {
    assert_eq!(operation_of("{ operations { id } }", None), Some(("query", "operations".into())));
    assert_eq!(
        operation_of("mutation M { x: reportStep(id: 1) { position } }", None),
        Some(("mutation", "reportStep".into()))
    );
    assert_eq!(
        operation_of("{ __typename a: head b: head }", None),
        Some(("query", "head".into())),
        "aliases and __typename"
    );
    assert_eq!(operation_of("{ a b }", None), Some(("query", "several".into())));
    assert_eq!(
        operation_of("query { ...F } fragment F on Query { tasks { id } }", None),
        Some(("query", "tasks".into()))
    );
    assert_eq!(operation_of("query { ... on Query { tasks } }", None), Some(("query", "tasks".into())));
}

#[test]
fn the_named_operation_is_the_one_labelled() {
    let doc = "query A { tasks } mutation B { createTask }";
    assert_eq!(operation_of(doc, Some("B")), Some(("mutation", "createTask".into())));
    assert_eq!(operation_of(doc, None), None, "several operations and none named: the engine refuses it");
    assert_eq!(operation_of(doc, Some("C")), None);
}

#[test]
fn fragment_cycles_end() {
    let doc = "query { ...A } fragment A on Query { a ...B } fragment B on Query { b ...A }";
    assert_eq!(operation_of(doc, None), Some(("query", "several".into())));
}

#[test]
fn each_label_set_is_one_series() {
    let d = RequestDurations::default();
    let step = Operation { kind: "mutation", field: "reportStep".into() };
    d.observe(Some(&step), Duration::from_millis(3));
    d.observe(Some(&step), Duration::from_millis(30));
    d.observe(None, Duration::from_micros(200));
    let mut out = String::new();
    d.render(&mut out);
    let name = "agentlog_graphql_request_duration_seconds";
    assert!(
        out.contains(&format!("{name}_bucket{{operation_type=\"mutation\",field=\"reportStep\",le=\"0.005\"}} 1\n")),
        "{out}"
    );
    assert!(
        out.contains(&format!("{name}_bucket{{operation_type=\"mutation\",field=\"reportStep\",le=\"0.05\"}} 2\n")),
        "{out}"
    );
    assert!(out.contains(&format!("{name}_count{{operation_type=\"mutation\",field=\"reportStep\"}} 2\n")), "{out}");
    assert!(out.contains(&format!("{name}_count{{operation_type=\"none\",field=\"none\"}} 1\n")), "{out}");
}

// ---- `genai_metrics`: the GenAI histograms' cap on label sets.

#[test]
fn genai_label_sets_beyond_the_cap_share_the_overflow_series() {
    let metrics = GenAiMetrics::new(2);
    let chat = |agent: &str| agentlog_otel::Measurement {
        operation: "chat".into(),
        provider: "openai".into(),
        model: "gpt-4o".into(),
        agent: agent.into(),
        error_type: None,
        duration_secs: 0.5,
        input_tokens: None,
        output_tokens: None,
    };
    for agent in ["a", "b", "c", "a", "d", "b"] {
        metrics.record_run(&[chat(agent)]);
    }
    let mut out = String::new();
    metrics.render(&mut out);
    let count = |labels: &str| {
        let prefix = format!("gen_ai_client_operation_duration_seconds_count{{{labels}}} ");
        out.lines().find_map(|l| l.strip_prefix(&prefix)).map(str::to_string)
    };
    let of = |a: &str| {
        format!(
            "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"openai\",gen_ai_request_model=\"gpt-4o\",gen_ai_agent_id=\"{a}\""
        )
    };
    assert_eq!(count(&of("a")).as_deref(), Some("2"), "{out}");
    assert_eq!(count(&of("b")).as_deref(), Some("2"), "{out}");
    assert_eq!(count("otel_metric_overflow=\"true\"").as_deref(), Some("2"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("gen_ai_client_operation_duration_seconds_count")).count(),
        3,
        "{out}"
    );
}
