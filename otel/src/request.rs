//! Spans → one OTLP export request.

use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value::Value},
    resource::v1::Resource,
    trace::v1::{ResourceSpans, ScopeSpans, Span},
};
use prost::Message;

use crate::conventions;

/// The export request carrying `spans`, from the resource `service.name = service`.
pub fn export_request(service: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
    let resource = Resource {
        attributes: vec![KeyValue {
            key: conventions::SERVICE_NAME.into(),
            value: Some(AnyValue { value: Some(Value::StringValue(service.into())) }),
            ..KeyValue::default()
        }],
        ..Resource::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "agentlog".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans,
                schema_url: conventions::SCHEMA_URL.into(),
            }],
            schema_url: conventions::SCHEMA_URL.into(),
        }],
    }
}

/// The usual bound of one export request: gRPC's default message limit, the smallest that
/// common collectors apply.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// Room left for the length prefixes that grow with a request's spans.
const SLACK: usize = 32;

/// Spans gathered into export requests of at most a number of encoded bytes: the unit a
/// collector limits (the OpenTelemetry Collector's `max_request_body_size`, gRPC's 4 MiB
/// message). A span larger than the bound alone goes out in a request of its own.
#[derive(Debug)]
pub struct Batches {
    max_bytes: usize,
    /// An empty request's size (the resource and the scope).
    empty: usize,
    spans: Vec<Span>,
    bytes: usize,
}

impl Batches {
    /// Requests from resource `service.name = service` of at most `max_bytes` each.
    pub fn new(service: &str, max_bytes: usize) -> Self {
        let empty = export_request(service, Vec::new()).encoded_len() + SLACK;
        Self { max_bytes, empty, spans: Vec::new(), bytes: empty }
    }

    /// Add `span`; when it does not fit beside the spans gathered so far, those come back
    /// first, a request's worth (`span` then starts the next).
    pub fn push(&mut self, span: Span) -> Option<Vec<Span>> {
        let len = span.encoded_len();
        let size = 1 + prost::length_delimiter_len(len) + len;
        let full = (!self.spans.is_empty() && self.bytes + size > self.max_bytes).then(|| self.take());
        self.bytes += size;
        self.spans.push(span);
        full
    }

    /// The spans gathered so far, as one request's worth.
    pub fn take(&mut self) -> Vec<Span> {
        self.bytes = self.empty;
        std::mem::take(&mut self.spans)
    }

    /// True when no span is gathered.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name_len: usize) -> Span {
        Span { name: "x".repeat(name_len), trace_id: vec![1; 16], span_id: vec![2; 8], ..Span::default() }
    }

    #[test]
    fn every_request_stays_within_its_bound() {
        let bound = 1_000;
        let mut batches = Batches::new("agentlog", bound);
        let mut requests = Vec::new();
        for n in 0..200 {
            if let Some(full) = batches.push(span(n % 90)) {
                requests.push(full);
            }
        }
        requests.push(batches.take());
        assert!(batches.is_empty());
        assert_eq!(requests.iter().map(Vec::len).sum::<usize>(), 200, "every span once");
        assert!(requests.len() > 10);
        for spans in requests {
            let size = export_request("agentlog", spans).encoded_len();
            assert!(size <= bound, "a request of {size} bytes");
        }
    }

    #[test]
    fn a_span_over_the_bound_goes_alone() {
        let mut batches = Batches::new("agentlog", 200);
        assert!(batches.push(span(10)).is_none());
        let before = batches.push(span(500)).expect("the small one goes first");
        assert_eq!(before.len(), 1);
        let big = batches.push(span(10)).expect("the big one goes alone");
        assert_eq!(big.len(), 1);
        assert_eq!(big[0].name.len(), 500);
    }
}
