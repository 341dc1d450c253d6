//! Spans → one OTLP export request.

use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value::Value},
    resource::v1::Resource,
    trace::v1::{ResourceSpans, ScopeSpans, Span},
};

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
