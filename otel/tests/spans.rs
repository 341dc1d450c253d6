//! A run's events → its spans: names, parents, attributes, ids, status and HITL events.

use agentlog_domain::envelope::{Actor, EventMetadata, RecordedEvent};
use agentlog_otel::{Ancestry, conventions as cv, ids, is_run_end, run_spans};
use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::{
    common::v1::any_value::Value,
    trace::v1::{Span, status::StatusCode},
};
use serde_json::{Value as Json, json};
use uuid::Uuid;

fn at(s: u32) -> String {
    format!("2026-12-01T10:00:{s:02}Z")
}

fn event(op: &str, version: i64, event_type: &str, schema: i32, payload: Json) -> RecordedEvent {
    let id = Uuid::from_u128(u128::from(version as u64) + (op.len() as u128) * 1_000);
    RecordedEvent {
        position: version,
        event_id: id,
        stream_id: format!("operation-{op}"),
        stream_version: version,
        event_type: event_type.into(),
        schema_version: schema,
        payload,
        metadata: EventMetadata::source(Uuid::from_u128(7), Actor::user("u"), "u", "topic:t1"),
        recorded_at: at(version as u32).parse::<DateTime<Utc>>().unwrap(),
    }
}

fn created(op: &str, parent: Option<&str>) -> RecordedEvent {
    let mut spec = json!({"operationId": op, "kind": if parent.is_some() { "subagent" } else { "conversation" },
        "agent": {"agentId": "writer", "configVersion": 1, "model": "gpt-4o", "provider": "openai"},
        "topicId": "t1", "background": false});
    if let Some(p) = parent {
        spec["parentOperationId"] = json!(p);
    }
    let mut payload = spec;
    payload["userId"] = json!("u");
    payload["at"] = json!(at(0));
    event(op, 1, "operation.created", 1, payload)
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text(span: &Span, key: &str) -> Option<String> {
    match attr(span, key) {
        Some(Value::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(Value::IntValue(i)) => Some(*i),
        _ => None,
    }
}

fn run(op: &str, parent: Option<&str>) -> Vec<RecordedEvent> {
    vec![
        created(op, parent),
        event(op, 2, "operation.started", 1, json!({"at": at(1)})),
        event(
            op,
            3,
            "operation.step_recorded",
            2,
            json!({"stepIndex": 1, "phase": "acting",
            "toolCalls": [{"id": "1-1", "name": "web/search", "status": "succeeded"}, {"id": "1-2", "name": "fs/read", "status": "failed"}],
            "usage": {"inputTokens": 100, "outputTokens": 20, "costMicros": 300}, "at": at(3)}),
        ),
        event(
            op,
            4,
            "operation.human_asked",
            1,
            json!({"card": {"cardId": "c1", "title": "Proceed?", "kind": "confirm"}, "at": at(4)}),
        ),
        event(
            op,
            5,
            "operation.human_answered",
            1,
            json!({"cardId": "c1", "answer": {"kind": "confirm", "confirmed": true}, "waitedMs": 2000, "at": at(6)}),
        ),
        event(
            op,
            6,
            "operation.step_recorded",
            2,
            json!({"stepIndex": 2, "phase": "responding",
            "usage": {"inputTokens": 50, "outputTokens": 10, "costMicros": 100}, "at": at(8)}),
        ),
        event(op, 7, "operation.completed", 1, json!({"reason": "done", "at": at(9)})),
    ]
}

#[test]
fn a_run_is_an_agent_span_with_chat_and_tool_children() {
    let events = run("op-1", None);
    assert_eq!(is_run_end(&events[6]).as_deref(), Some("op-1"));
    assert!(events[..6].iter().all(|e| is_run_end(e).is_none()));
    let spans = run_spans(&events, &Ancestry::default());
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["invoke_agent writer", "execute_tool web/search", "execute_tool fs/read", "chat gpt-4o", "chat gpt-4o"]
    );
    let agent = &spans[0];
    assert_eq!(agent.trace_id, ids::trace_id("op-1"));
    assert_eq!(agent.span_id, ids::operation_span_id("op-1"));
    assert!(agent.parent_span_id.is_empty(), "a top-level run is a root span");
    assert_eq!(text(agent, cv::OPERATION_NAME).as_deref(), Some("invoke_agent"));
    assert_eq!(text(agent, cv::PROVIDER_NAME).as_deref(), Some("openai"));
    assert_eq!(text(agent, cv::REQUEST_MODEL).as_deref(), Some("gpt-4o"));
    assert_eq!(text(agent, cv::AGENT_ID).as_deref(), Some("writer"));
    assert_eq!(text(agent, cv::CONVERSATION_ID).as_deref(), Some("t1"));
    assert_eq!(text(agent, cv::agentlog::ROOT_SOURCE_ID), Some(Uuid::from_u128(7).to_string()));
    assert_eq!(int(agent, cv::USAGE_INPUT_TOKENS), Some(150));
    assert_eq!(int(agent, cv::USAGE_OUTPUT_TOKENS), Some(30));
    assert_eq!(int(agent, cv::agentlog::COST_MICROS), Some(400));
    assert_eq!(agent.status.as_ref().map(|s| s.code), Some(StatusCode::Ok as i32));
    let hitl: Vec<&str> = agent.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(hitl, ["agentlog.hitl.asked", "agentlog.hitl.answered"]);
    // the run's span starts when the run was created (queued time included), the first step when
    // a worker started it, the second when the human answered
    let (chat1, chat2) = (&spans[3], &spans[4]);
    assert_eq!(chat1.parent_span_id, agent.span_id);
    assert_eq!(chat1.start_time_unix_nano, agent.start_time_unix_nano + 1_000_000_000);
    assert!(chat1.end_time_unix_nano > chat1.start_time_unix_nano);
    assert_eq!(chat2.start_time_unix_nano, agent.events[1].time_unix_nano);
    assert_eq!(int(chat1, cv::USAGE_INPUT_TOKENS), Some(100));
    // tools are children of their step, with their call ids; a failed call is an error span
    let (search, read) = (&spans[1], &spans[2]);
    assert_eq!(search.parent_span_id, chat1.span_id);
    assert_eq!(text(search, cv::TOOL_CALL_ID).as_deref(), Some("1-1"));
    assert_eq!(read.status.as_ref().map(|s| s.code), Some(StatusCode::Error as i32));
    assert!(search.status.is_none());
    // the same events give the same spans
    assert_eq!(run_spans(&events, &Ancestry::default()), spans);
}

#[test]
fn a_sub_agent_is_a_child_in_its_roots_trace() {
    let events = run("op-child", Some("op-1"));
    let spans = run_spans(&events, &Ancestry { root_operation_id: Some("op-1".into()), ..Ancestry::default() });
    assert_eq!(spans[0].trace_id, ids::trace_id("op-1"));
    assert_eq!(spans[0].parent_span_id, ids::operation_span_id("op-1"));
    assert!(spans.iter().all(|s| s.trace_id == ids::trace_id("op-1")));
}

#[test]
fn an_unfinished_run_has_no_spans_and_a_failure_is_an_error() {
    let mut events = run("op-2", None);
    events.pop();
    assert!(run_spans(&events, &Ancestry::default()).is_empty());
    events.push(event(
        "op-2",
        7,
        "operation.failed",
        1,
        json!({"error": {"message": "model refused", "type": "provider_error"}, "at": at(9)}),
    ));
    let spans = run_spans(&events, &Ancestry::default());
    let agent = &spans[0];
    assert_eq!(
        agent.status.as_ref().map(|s| (s.code, s.message.as_str())),
        Some((StatusCode::Error as i32, "model refused"))
    );
    assert_eq!(text(agent, cv::ERROR_TYPE).as_deref(), Some("provider_error"));
    // a resumable interruption does not end the run; one that cannot resume does
    let mut interrupted = run("op-3", None);
    interrupted.pop();
    interrupted.push(event(
        "op-3",
        7,
        "operation.interrupted",
        1,
        json!({"reason": "lease_expired", "canResume": true, "at": at(9)}),
    ));
    assert!(is_run_end(&interrupted[6]).is_none());
    assert!(run_spans(&interrupted, &Ancestry::default()).is_empty());
}

/// The run's events in `owner`'s owned stream (operation ids are per owner).
fn owned(owner: &str, events: Vec<RecordedEvent>) -> Vec<RecordedEvent> {
    events
        .into_iter()
        .map(|e| RecordedEvent { stream_id: e.stream_id.replacen('-', &format!("@{owner}/"), 1), ..e })
        .collect()
}

#[test]
fn two_owners_runs_of_one_id_trace_apart() {
    let alice = run_spans(&owned("alice", run("op-1", None)), &Ancestry::default());
    let bob = run_spans(&owned("bob", run("op-1", None)), &Ancestry::default());
    assert_eq!(alice[0].trace_id, ids::trace_id("operation@alice/op-1"));
    assert_ne!(alice[0].trace_id, bob[0].trace_id);
    assert_ne!(alice[0].span_id, bob[0].span_id);
    assert!(alice.iter().zip(&bob).all(|(a, b)| a.span_id != b.span_id));
    assert_eq!(is_run_end(&owned("bob", run("op-1", None))[6]).as_deref(), Some("op-1"));
    // A global stream's run keeps the ids it always had; an owned child names its parent in its
    // owner's namespace.
    let global = run_spans(&run("op-1", None), &Ancestry::default());
    assert_eq!(global[0].trace_id, ids::trace_id("op-1"));
    let child = run_spans(&owned("bob", run("op-child", Some("op-1"))), &Ancestry::default());
    assert_eq!(child[0].parent_span_id, bob[0].span_id);
}
