//! The spans of a run end, read from the log: the run's stream up to its end, and the root of its
//! tree from its parents' `operation.created`. Shared by the server's exporter and
//! `agentlog-replay export --format otlp`.

use agentlog_domain::{envelope::RecordedEvent, streams::StreamKind};
use agentlog_eventlog::{EventLogError, EventStore};

use crate::run::Ancestry;
use crate::run::RunSpans;
use crate::run::is_run_end;
use crate::run::run_key;
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

/// Events of a run's stream read at a time while its spans are built.
const STREAM_PAGE: usize = 1_000;

/// The spans of the run that `end` ends (empty when `end` ends none), collected. The run's
/// `invoke_agent` span comes last; [`SpansOfEnd`] hands them out a page of the stream at a time.
pub async fn spans_of_end(store: &dyn EventStore, end: &RecordedEvent) -> Result<Vec<Span>, EventLogError> {
    let mut reader = SpansOfEnd::open(store, end).await?;
    let mut spans = Vec::new();
    while let Some(page) = reader.next().await? {
        spans.extend(page);
    }
    Ok(spans)
}

/// The spans of the run that an end event ends, read from the run's stream a page at a time:
/// memory stays one page of events and its spans however long the run.
pub struct SpansOfEnd<'a> {
    store: &'a dyn EventStore,
    stream_id: String,
    /// The end's version: the stream as it was at the end (a later resume changes nothing).
    upto: i64,
    /// The last version applied.
    version: i64,
    /// `None` once the run's `invoke_agent` span is out (or it has none).
    run: Option<RunSpans>,
}

impl<'a> SpansOfEnd<'a> {
    /// Start reading the run `end` ends: its creation and its ancestry. A reader of nothing
    /// when `end` ends no run (an interrupted run that can resume, an event of another stream).
    pub async fn open(store: &'a dyn EventStore, end: &RecordedEvent) -> Result<Self, EventLogError> {
        let mut reader =
            Self { store, stream_id: end.stream_id.clone(), upto: end.stream_version, version: 1, run: None };
        if is_run_end(end).is_none() {
            return Ok(reader);
        }
        let first = store.read_stream(&end.stream_id, 1, 1).await?;
        if let Some(created) = first.first() {
            let ancestry = ancestry_of(store, created).await?;
            reader.run = RunSpans::start(created, &ancestry);
        }
        Ok(reader)
    }

    /// The next spans: a page of the stream's steps and tool calls, then the run's own span;
    /// `None` when all are out.
    pub async fn next(&mut self) -> Result<Option<Vec<Span>>, EventLogError> {
        while self.run.is_some() {
            if self.version >= self.upto {
                return Ok(self.run.take().and_then(RunSpans::finish).map(|root| vec![root]));
            }
            let want = usize::try_from(self.upto - self.version).unwrap_or(usize::MAX).min(STREAM_PAGE);
            let page = self.store.read_stream(&self.stream_id, self.version + 1, want).await?;
            let Some(run) = self.run.as_mut() else { break };
            let (after, upto) = (self.version, self.upto);
            for e in page.iter().filter(|e| e.stream_version > after && e.stream_version <= upto) {
                run.apply(e);
                self.version = e.stream_version;
            }
            if page.len() < want {
                // The stream ends before its end event (it cannot, in a sound log): no run span.
                self.version = self.upto;
            }
            let spans = run.take();
            if !spans.is_empty() {
                return Ok(Some(spans));
            }
        }
        Ok(None)
    }
}
