//! Finding what an earlier attempt of a command wrote.
//!
//! A command's events get ids derived from its command id (`Context::first_event_id` and the
//! ids after it), so a client that resends a request whose answer it lost — same `requestId`,
//! same command id — can be answered from the log instead of deciding again. Deciding again
//! is wrong for most commands: the first attempt changed the state, so the retry would be
//! refused (a resolved brief cannot be resolved twice) although the request succeeded.

use std::collections::HashMap;

use agentlog_domain::context::Context;

use crate::{
    append::{AppendResult, LocatedEvent},
    error::{EventLogError, ValidationError},
    filter::EventFilter,
    store::EventStore,
};

/// Ids are looked up this many at a time; a command that wrote more is read chunk by chunk
/// until a chunk finds none.
const CHUNK: u32 = 64;

/// The appends an earlier attempt of `ctx`'s command made, one per stream in log order
/// (each marked `duplicate`), or `None` when no event of that command is in the log. When
/// `ctx` names its request ([`Context::request_digest`]) and the earlier attempt recorded
/// another, the command id was reused for a different request: [`ValidationError::RequestReused`].
///
/// Events whose ids come from an idempotency key are not found here; they dedupe themselves
/// when appended again.
pub async fn applied_command(
    store: &dyn EventStore,
    ctx: &Context,
) -> Result<Option<Vec<AppendResult>>, EventLogError> {
    let mut found: Vec<LocatedEvent> = Vec::new();
    let mut start = 0u32;
    loop {
        let ids: Vec<uuid::Uuid> = (start..start + CHUNK).map(|n| ctx.nth_event_id(n)).collect();
        let located = store.locate(&ids).await?;
        if located.is_empty() {
            break;
        }
        found.extend(located);
        start += CHUNK;
    }
    if found.is_empty() {
        return Ok(None);
    }
    found.sort_unstable_by_key(|e| e.position);
    if let (Some(ours), Some(first)) = (ctx.request_digest.as_deref(), found.first()) {
        // The same requestId for another request (other arguments, another mutation): refused,
        // never answered with what that one wrote. Events written before digests were
        // recorded carry none and are taken as the same request.
        let earlier = store.read_all(first.position - 1, &EventFilter::all(), 1).await?;
        let digest =
            earlier.first().filter(|e| e.position == first.position).and_then(|e| e.metadata.request_digest.as_deref());
        if digest.is_some_and(|theirs| theirs != ours) {
            return Err(EventLogError::Validation(ValidationError::RequestReused));
        }
    }
    let mut order: Vec<String> = Vec::new();
    let mut by_stream: HashMap<String, AppendResult> = HashMap::new();
    for LocatedEvent { position, stream_id, stream_version } in found {
        let entry = by_stream.entry(stream_id.clone()).or_insert_with(|| {
            order.push(stream_id.clone());
            AppendResult { stream_id, positions: Vec::new(), stream_version: 0, duplicate: true }
        });
        entry.positions.push(position);
        entry.stream_version = entry.stream_version.max(stream_version);
    }
    Ok(Some(order.iter().filter_map(|s| by_stream.remove(s)).collect()))
}

/// Is an event of `ctx`'s command in the log (its first event id)?
pub(crate) async fn command_seen(store: &dyn EventStore, ctx: &Context) -> Result<bool, EventLogError> {
    Ok(!store.locate(&[ctx.first_event_id()]).await?.is_empty())
}
