//! The spans of a run end, read from the log: the run's stream up to its end, and the root of its
//! tree from its parents' `operation.created`. Shared by the server's exporter and
//! `agentlog-replay export --format otlp`.

use agentlog_domain::{envelope::RecordedEvent, streams::StreamKind};
use agentlog_eventlog::{EventLogError, EventStore};

use crate::run::Ancestry;
use crate::run::is_run_end;
use crate::run::run_key;
use crate::run::run_spans;
use opentelemetry_proto::tonic::trace::v1::Span;

/// Parent chains are as deep as the sub-agent depth limit; this bounds a walk on a broken log.
const MAX_DEPTH: usize = 64;

/// Where the run whose stream starts with `created` sits in its tree: its parent and the
/// top-level operation (`None`: it is the top), each named by its [`run_key`]. Parents are
/// named in the run owner's namespace.
pub async fn ancestry_of(store: &dyn EventStore, created: &RecordedEvent) -> Result<Ancestry, EventLogError> {
    let parent_of = |e: &RecordedEvent| e.payload.get("parentOperationId").and_then(|v| v.as_str()).map(str::to_string);
    let owner = StreamKind::parse_owner(&created.stream_id).unwrap_or_else(|| created.user_id().to_string());
    let mut next = parent_of(created);
    let mut ancestry = Ancestry::default();
    for _ in 0..MAX_DEPTH {
        let Some(p) = next else { break };
        let stream = operation_stream(store, &owner, &p).await?;
        let first = store.read_stream(&stream, 1, 1).await?;
        next = first.first().and_then(parent_of);
        let key = run_key(&stream).unwrap_or(p);
        ancestry.parent.get_or_insert_with(|| key.clone());
        ancestry.root_operation_id = Some(key);
    }
    Ok(ancestry)
}

/// The stream of `owner`'s run `id`: the global one written before operation ids were per owner
/// when it is `owner`'s, else the owned one.
async fn operation_stream(store: &dyn EventStore, owner: &str, id: &str) -> Result<String, EventLogError> {
    let global = StreamKind::Operation.stream_id(id);
    let first = store.read_stream(&global, 1, 1).await?;
    if first.first().is_some_and(|e| e.user_id() == owner) {
        return Ok(global);
    }
    Ok(StreamKind::Operation.owned_stream_id(owner, id))
}

/// The spans of the run that `end` ends (empty when `end` ends none).
pub async fn spans_of_end(store: &dyn EventStore, end: &RecordedEvent) -> Result<Vec<Span>, EventLogError> {
    if is_run_end(end).is_none() {
        return Ok(Vec::new());
    }
    let upto = usize::try_from(end.stream_version).unwrap_or(usize::MAX);
    // The stream as it was at the end: a later resume does not change what this end sends.
    let events = store.read_stream(&end.stream_id, 1, upto).await?;
    let Some(created) = events.first() else { return Ok(Vec::new()) };
    let ancestry = ancestry_of(store, created).await?;
    Ok(run_spans(&events, &ancestry))
}
