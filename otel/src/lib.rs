//! agentlog's runs as OpenTelemetry traces following the GenAI semantic conventions
//! ([`conventions::VERSION`]): an `invoke_agent {agent}` span per operation (its sub-agents' and
//! group members' spans are its children, in the same trace), a `chat {model}` span per step,
//! an `execute_tool {tool}` span per tool call, HITL waits as span events.
//!
//! `run_spans` is pure: an operation's recorded events (and its root's id) in, OTLP protobuf
//! messages out; `spans_of_end` reads those events from the log.
//! Ids are derived from agentlog's ids, so exporting the same run twice gives the same spans
//! and a collector can drop the repeat.
//!
//! ```
//! use agentlog_otel::{Ancestry, run_spans};
//! # let events: Vec<agentlog_domain::envelope::RecordedEvent> = Vec::new();
//! // The events of `operation-<id>`, in stream order; a top-level run has no ancestors.
//! let spans = run_spans(&events, &Ancestry::default());
//! assert!(spans.is_empty(), "no events, no spans");
//! ```

pub mod conventions;
mod from_log;
pub mod ids;
mod measure;
mod request;
mod run;

pub use from_log::{SpansOfEnd, ancestry_of, spans_of_end};
pub use measure::{Measurement, measurements};
pub use opentelemetry_proto::tonic::trace::v1::Span;
pub use request::{Batches, MAX_REQUEST_BYTES, export_request};
pub use run::{Ancestry, RunSpans, is_run_end, run_key, run_spans};
