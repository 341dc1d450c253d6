//! One run (an operation stream) → its spans.

use agentlog_domain::{
    envelope::RecordedEvent,
    events::{AnyEvent, decode_any},
    operations::{CompletionReason, OperationEvent},
    streams::StreamKind,
};
use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::{
    common::v1::{AnyValue, KeyValue, any_value::Value},
    trace::v1::{Span, Status, span, status::StatusCode},
};

use crate::{conventions as cv, conventions::agentlog as al, ids};

/// Where a run sits in its tree: the top-level operation whose trace it belongs to (`None`: it is
/// the top level itself) and its parent, each named by its [`run_key`]. Without a parent key
/// the parent named in the run's own `operation.created` is taken from the run's namespace.
#[derive(Debug, Clone, Default)]
pub struct Ancestry {
    /// The top-level operation of the tree, when the run is a sub-agent or group member.
    pub root_operation_id: Option<String>,
    /// The run's parent, when it has one and its stream is known.
    pub parent: Option<String>,
}

/// The name a run's trace and span ids derive from: for an owned stream the stream (two users'
/// `op1` trace apart), for a global one the run's id (the ids its spans always had). `None`
/// for a stream that is not an operation's.
pub fn run_key(stream_id: &str) -> Option<String> {
    match StreamKind::parse(stream_id)? {
        (StreamKind::Operation, id) if StreamKind::parse_owner(stream_id).is_none() => Some(id.to_string()),
        (StreamKind::Operation, _) => Some(stream_id.to_string()),
        _ => None,
    }
}

/// The [`run_key`] of run `id` in the namespace of the run in `stream_id`.
fn key_beside(stream_id: &str, id: &str) -> String {
    match StreamKind::parse_owner(stream_id) {
        Some(owner) => StreamKind::Operation.owned_stream_id(&owner, id),
        None => id.to_string(),
    }
}

/// The operation a terminal event ends, when `event` ends one: `completed`, `failed`,
/// `cancelled`, or `interrupted` without a way to resume.
pub fn is_run_end(event: &RecordedEvent) -> Option<String> {
    let terminal = match event.event_type.as_str() {
        "operation.completed" | "operation.failed" | "operation.cancelled" => true,
        "operation.interrupted" => {
            !event.payload.get("canResume").and_then(serde_json::Value::as_bool).unwrap_or(false)
        }
        _ => false,
    };
    match StreamKind::parse(&event.stream_id) {
        Some((StreamKind::Operation, id)) if terminal => Some(id.to_string()),
        _ => None,
    }
}

fn kv(key: &str, value: Value) -> KeyValue {
    KeyValue { key: key.to_string(), value: Some(AnyValue { value: Some(value) }), ..KeyValue::default() }
}

fn text(key: &str, value: &str) -> KeyValue {
    kv(key, Value::StringValue(value.to_string()))
}

fn int(key: &str, value: u64) -> KeyValue {
    kv(key, Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)))
}

fn nanos(at: DateTime<Utc>) -> u64 {
    at.timestamp_nanos_opt().and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

/// What the fold keeps while it walks the run's events.
#[derive(Default)]
struct Fold {
    spans: Vec<Span>,
    events: Vec<span::Event>,
    started: Option<DateTime<Utc>>,
    last_step_end: Option<DateTime<Utc>>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cost_micros: Option<u64>,
    end: Option<(DateTime<Utc>, Status, String, Option<String>)>,
}

fn add(sum: &mut Option<u64>, value: Option<u64>) {
    if let Some(v) = value {
        *sum = Some(sum.unwrap_or(0).saturating_add(v));
    }
}

/// The spans of one run, from the events of its stream in stream order: empty until the run has
/// ended. The run's `invoke_agent` span comes first.
pub fn run_spans(events: &[RecordedEvent], ancestry: &Ancestry) -> Vec<Span> {
    let Some((first, rest)) = events.split_first() else { return Vec::new() };
    let Some(mut run) = RunSpans::start(first, ancestry) else { return Vec::new() };
    for e in rest {
        run.apply(e);
    }
    let spans = run.take();
    match run.finish() {
        Some(root) => std::iter::once(root).chain(spans).collect(),
        None => Vec::new(),
    }
}

/// One run's spans built an event at a time, so a long run is never held whole: each step's
/// spans are ready once its event is applied ([`RunSpans::take`]), the run's own `invoke_agent`
/// span at its end ([`RunSpans::finish`]).
pub struct RunSpans {
    key: String,
    op_id: String,
    trace_id: Vec<u8>,
    op_span: Vec<u8>,
    parent: Option<String>,
    agent_id: String,
    model: Option<String>,
    kind: String,
    /// Attributes every span of the run carries.
    common: Vec<KeyValue>,
    created_at: DateTime<Utc>,
    f: Fold,
}

impl RunSpans {
    /// Begin with the run's first event; `None` when it is not an `operation.created`.
    pub fn start(first: &RecordedEvent, ancestry: &Ancestry) -> Option<Self> {
        let Ok(AnyEvent::Operation(OperationEvent::Created(created))) =
            decode_any(&first.event_type, first.schema_version, &first.payload)
        else {
            return None;
        };
        let spec = &created.spec;
        let op_id = spec.operation_id.clone();
        let key = run_key(&first.stream_id).unwrap_or_else(|| op_id.clone());
        let trace_id = ids::trace_id(ancestry.root_operation_id.as_deref().unwrap_or(&key)).to_vec();
        let op_span = ids::operation_span_id(&key).to_vec();
        let parent = ancestry
            .parent
            .clone()
            .or_else(|| spec.parent_operation_id.as_deref().map(|p| key_beside(&first.stream_id, p)));
        let mut common = vec![text(cv::AGENT_ID, &spec.agent.agent_id), text(cv::AGENT_NAME, &spec.agent.agent_id)];
        if let Some(p) = &spec.agent.provider {
            common.push(text(cv::PROVIDER_NAME, p));
        }
        if let Some(m) = &spec.agent.model {
            common.push(text(cv::REQUEST_MODEL, m));
        }
        if let Some(topic) = &spec.topic_id {
            common.push(text(cv::CONVERSATION_ID, topic));
        }
        common.push(text(al::OPERATION_ID, &op_id));
        common.push(text(al::ROOT_SOURCE_ID, &first.chain().root_source_id.to_string()));
        let kind =
            serde_json::to_value(spec.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        Some(Self {
            key,
            op_id,
            trace_id,
            op_span,
            parent,
            agent_id: spec.agent.agent_id.clone(),
            model: spec.agent.model.clone(),
            kind,
            common,
            created_at: created.at,
            f: Fold { started: Some(created.at), ..Fold::default() },
        })
    }

    /// Fold the run's next event (in stream order, after the first).
    pub fn apply(&mut self, e: &RecordedEvent) {
        let Ok(AnyEvent::Operation(event)) = decode_any(&e.event_type, e.schema_version, &e.payload) else {
            return;
        };
        let f = &mut self.f;
        match event {
            // The run's span starts at its creation (time in the queue included); its first step
            // when a worker started it.
            OperationEvent::Started(s) => f.last_step_end = Some(s.at),
            OperationEvent::StepRecorded(step) => {
                let start = f.last_step_end.or(f.started).unwrap_or(step.at).min(step.at);
                let step_span = ids::step_span_id(&self.key, step.step_index).to_vec();
                let mut attributes =
                    vec![text(cv::OPERATION_NAME, "chat"), int(al::STEP_INDEX, u64::from(step.step_index))];
                attributes.extend(self.common.iter().filter(|kv| kv.key != al::ROOT_SOURCE_ID).cloned());
                if let Some(t) = step.usage.input_tokens {
                    attributes.push(int(cv::USAGE_INPUT_TOKENS, t));
                }
                if let Some(t) = step.usage.output_tokens {
                    attributes.push(int(cv::USAGE_OUTPUT_TOKENS, t));
                }
                if let Some(c) = step.usage.cost_micros {
                    attributes.push(int(al::COST_MICROS, c));
                }
                attributes.push(int(al::POSITION, u64::try_from(e.position).unwrap_or(0)));
                add(&mut f.input_tokens, step.usage.input_tokens);
                add(&mut f.output_tokens, step.usage.output_tokens);
                add(&mut f.cost_micros, step.usage.cost_micros);
                for call in &step.tool_calls {
                    let mut attributes = vec![
                        text(cv::OPERATION_NAME, "execute_tool"),
                        text(cv::TOOL_NAME, &call.name),
                        text(cv::TOOL_CALL_ID, &call.id),
                        text(al::OPERATION_ID, &self.op_id),
                    ];
                    let failed = call.status.as_deref() == Some("failed");
                    if let Some(status) = &call.status {
                        attributes.push(text(al::TOOL_STATUS, status));
                    }
                    f.spans.push(Span {
                        trace_id: self.trace_id.clone(),
                        span_id: ids::tool_span_id(&self.key, step.step_index, &call.id).to_vec(),
                        parent_span_id: step_span.clone(),
                        name: format!("execute_tool {}", call.name),
                        kind: span::SpanKind::Internal as i32,
                        start_time_unix_nano: nanos(step.at),
                        end_time_unix_nano: nanos(step.at),
                        attributes,
                        status: failed
                            .then(|| Status { message: "the tool call failed".into(), code: StatusCode::Error as i32 }),
                        ..Span::default()
                    });
                }
                f.spans.push(Span {
                    trace_id: self.trace_id.clone(),
                    span_id: step_span,
                    parent_span_id: self.op_span.clone(),
                    name: format!("chat {}", self.model.as_deref().unwrap_or("unknown")),
                    kind: span::SpanKind::Client as i32,
                    start_time_unix_nano: nanos(start),
                    end_time_unix_nano: nanos(step.at),
                    attributes,
                    ..Span::default()
                });
                f.last_step_end = Some(step.at);
            }
            OperationEvent::HumanAsked(asked) => f.events.push(span::Event {
                time_unix_nano: nanos(asked.at),
                name: "agentlog.hitl.asked".into(),
                attributes: vec![
                    text("agentlog.hitl.card_id", &asked.card.card_id),
                    text("agentlog.hitl.title", &asked.card.title),
                ],
                ..span::Event::default()
            }),
            OperationEvent::HumanAnswered(answered) => {
                f.events.push(span::Event {
                    time_unix_nano: nanos(answered.at),
                    name: "agentlog.hitl.answered".into(),
                    attributes: vec![
                        text("agentlog.hitl.card_id", &answered.card_id),
                        int("agentlog.hitl.waited_ms", answered.waited_ms),
                    ],
                    ..span::Event::default()
                });
                f.last_step_end = Some(answered.at);
            }
            OperationEvent::HumanWaitTimedOut(timed_out) => f.events.push(span::Event {
                time_unix_nano: nanos(timed_out.at),
                name: "agentlog.hitl.timed_out".into(),
                attributes: vec![
                    text("agentlog.hitl.card_id", &timed_out.card_id),
                    int("agentlog.hitl.waited_ms", timed_out.waited_ms),
                ],
                ..span::Event::default()
            }),
            OperationEvent::Completed(done) => {
                let reason = match done.reason {
                    CompletionReason::Done => "done",
                    CompletionReason::MaxSteps => "max_steps",
                    CompletionReason::CostLimit => "cost_limit",
                    CompletionReason::Error => "error",
                    CompletionReason::Interrupted => "interrupted",
                    _ => "other",
                };
                let status = if done.reason == CompletionReason::Done {
                    Status { message: String::new(), code: StatusCode::Ok as i32 }
                } else {
                    Status { message: format!("ended by {reason}"), code: StatusCode::Error as i32 }
                };
                f.end = Some((done.at, status, reason.into(), (reason != "done").then(|| reason.to_string())));
            }
            OperationEvent::Failed(failed) => {
                let error_type =
                    failed.error.error_type.clone().or(failed.error.code.clone()).unwrap_or_else(|| "error".into());
                let status = Status { message: failed.error.message.clone(), code: StatusCode::Error as i32 };
                f.end = Some((failed.at, status, "error".into(), Some(error_type)));
            }
            OperationEvent::Cancelled(cancelled) => {
                let message = cancelled.reason.clone().unwrap_or_else(|| "cancelled".into());
                let status = Status { message, code: StatusCode::Error as i32 };
                f.end = Some((cancelled.at, status, "cancelled".into(), Some("cancelled".into())));
            }
            OperationEvent::Interrupted(interrupted) if !interrupted.can_resume => {
                let status = Status { message: interrupted.reason.clone(), code: StatusCode::Error as i32 };
                f.end = Some((interrupted.at, status, "interrupted".into(), Some("interrupted".into())));
            }
            // A later event (a resume) reopens an interrupted run.
            OperationEvent::Resumed(_) => f.end = None,
            _ => {}
        }
    }

    /// The spans finished so far (steps and tool calls), handed over.
    pub fn take(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.f.spans)
    }

    /// The run's own `invoke_agent` span, when the last event applied ended the run.
    pub fn finish(self) -> Option<Span> {
        let f = self.f;
        let (end, status, reason, error_type) = f.end?;
        let mut attributes = vec![text(cv::OPERATION_NAME, "invoke_agent")];
        attributes.extend(self.common);
        attributes.push(text(al::OPERATION_KIND, &self.kind));
        attributes.push(text(al::COMPLETION_REASON, &reason));
        if let Some(t) = error_type {
            attributes.push(text(cv::ERROR_TYPE, &t));
        }
        if let Some(t) = f.input_tokens {
            attributes.push(int(cv::USAGE_INPUT_TOKENS, t));
        }
        if let Some(t) = f.output_tokens {
            attributes.push(int(cv::USAGE_OUTPUT_TOKENS, t));
        }
        if let Some(c) = f.cost_micros {
            attributes.push(int(al::COST_MICROS, c));
        }
        let parent_span_id = self.parent.as_deref().map(|p| ids::operation_span_id(p).to_vec()).unwrap_or_default();
        Some(Span {
            trace_id: self.trace_id,
            span_id: self.op_span,
            parent_span_id,
            name: format!("invoke_agent {}", self.agent_id),
            kind: span::SpanKind::Internal as i32,
            start_time_unix_nano: nanos(f.started.unwrap_or(self.created_at)),
            end_time_unix_nano: nanos(end),
            attributes,
            events: f.events,
            status: Some(status),
            ..Span::default()
        })
    }
}
