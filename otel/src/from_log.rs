//! The spans of a run end, read from the log: the run's stream up to its end, and the root of its
//! tree from its parents' `operation.created`. Shared by the server's exporter and
//! `agentlog-replay export --format otlp`.

use agentlog_domain::envelope::RecordedEvent;
use agentlog_eventlog::{EventLogError, EventStore};

use crate::run::Ancestry;
use crate::run::is_run_end;
use crate::run::run_spans;
use opentelemetry_proto::tonic::trace::v1::Span;

/// Parent chains are as deep as the sub-agent depth limit; this bounds a walk on a broken log.
const MAX_DEPTH: usize = 64;

/// The top-level operation of the tree whose run starts with `created` (`None`: it is the top).
pub async fn root_of(store: &dyn EventStore, created: &RecordedEvent) -> Result<Option<String>, EventLogError> {
    let parent_of = |e: &RecordedEvent| e.payload.get("parentOperationId").and_then(|v| v.as_str()).map(str::to_string);
    let mut parent = parent_of(created);
    let mut root = None;
    for _ in 0..MAX_DEPTH {
        let Some(p) = parent else { break };
        let first = store.read_stream(&format!("operation-{p}"), 1, 1).await?;
        parent = first.first().and_then(parent_of);
        root = Some(p);
    }
    Ok(root)
}

/// The spans of the run that `end` ends (empty when `end` ends none).
pub async fn spans_of_end(store: &dyn EventStore, end: &RecordedEvent) -> Result<Vec<Span>, EventLogError> {
    let Some(operation_id) = is_run_end(end) else { return Ok(Vec::new()) };
    let upto = usize::try_from(end.stream_version).unwrap_or(usize::MAX);
    // The stream as it was at the end: a later resume does not change what this end sends.
    let events = store.read_stream(&format!("operation-{operation_id}"), 1, upto).await?;
    let Some(created) = events.first() else { return Ok(Vec::new()) };
    let ancestry = Ancestry { root_operation_id: root_of(store, created).await? };
    Ok(run_spans(&events, &ancestry))
}
