//! The GenAI metrics' measurements of a run, read from its spans: what
//! `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` record (semantic
//! conventions [`crate::conventions::VERSION`]), one per `invoke_agent` and `chat` span, with the
//! attributes those metrics carry. Pure; the server keeps the histograms.

use opentelemetry_proto::tonic::common::v1::any_value::Value;

use crate::conventions as cv;
use opentelemetry_proto::tonic::trace::v1::Span;

/// One GenAI operation's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// `gen_ai.operation.name`: `invoke_agent` or `chat`.
    pub operation: String,
    /// `gen_ai.provider.name` (empty when the run named none).
    pub provider: String,
    /// `gen_ai.request.model` (empty when the run named none).
    pub model: String,
    /// `gen_ai.agent.id`.
    pub agent: String,
    /// `error.type`, when the operation failed.
    pub error_type: Option<String>,
    /// How long it took, in seconds.
    pub duration_secs: f64,
    /// Input tokens (`chat` only: a run's totals are its steps' sums, so counting both would
    /// count twice).
    pub input_tokens: Option<i64>,
    /// Output tokens (`chat` only).
    pub output_tokens: Option<i64>,
}

/// The measurements of `spans` (one run's): its `invoke_agent` span and each `chat` span.
pub fn measurements(spans: &[Span]) -> Vec<Measurement> {
    spans
        .iter()
        .filter_map(|span| {
            let operation = text(span, cv::OPERATION_NAME)?;
            let chat = match operation.as_str() {
                "chat" => true,
                "invoke_agent" => false,
                _ => return None,
            };
            let nanos = span.end_time_unix_nano.saturating_sub(span.start_time_unix_nano);
            Some(Measurement {
                provider: text(span, cv::PROVIDER_NAME).unwrap_or_default(),
                model: text(span, cv::REQUEST_MODEL).unwrap_or_default(),
                agent: text(span, cv::AGENT_ID).unwrap_or_default(),
                error_type: text(span, cv::ERROR_TYPE),
                duration_secs: nanos as f64 / 1e9,
                input_tokens: chat.then(|| int(span, cv::USAGE_INPUT_TOKENS)).flatten(),
                output_tokens: chat.then(|| int(span, cv::USAGE_OUTPUT_TOKENS)).flatten(),
                operation,
            })
        })
        .collect()
}

fn value<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()
}

fn text(span: &Span, key: &str) -> Option<String> {
    match value(span, key)? {
        Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match value(span, key)? {
        Value::IntValue(n) => Some(*n),
        _ => None,
    }
}
