//! Streamed partial content (token deltas): relayed live to subscribers, never stored.
//!
//! A worker publishes each delta of a message it is writing; subscribers of the topic get it at
//! once. The hub keeps the content so far per message, so a subscriber that joins (or falls
//! behind) mid-stream first gets a snapshot of it. When the worker appends the finished message
//! (`appendMessage`), the partial is dropped and subscribers get a final `done` delta: the log
//! holds one event per finished message, never one per delta.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::sync::broadcast;

/// Largest single delta, bytes.
pub const MAX_DELTA_BYTES: usize = 64 * 1024;
/// Largest partial message, bytes.
pub const MAX_PARTIAL_BYTES: usize = 4 * 1024 * 1024;
/// Messages being streamed at once, server-wide.
pub const MAX_PARTIALS: usize = 10_000;
/// A partial nobody extended for this long is dropped (its worker died).
const IDLE: Duration = Duration::from_secs(600);
/// Deltas a subscriber may fall behind by before it gets a snapshot instead.
const CHANNEL: usize = 1_024;

/// One delta as subscribers see it.
#[derive(Debug, Clone, PartialEq, Eq, async_graphql::SimpleObject)]
pub struct MessageDelta {
    /// The topic.
    pub topic_id: String,
    /// The message being written.
    pub message_id: String,
    /// New content (with `snapshot`: all content so far).
    pub delta: String,
    /// `delta` is the whole content so far (sent on join and after falling behind).
    pub snapshot: bool,
    /// The message was appended: no more deltas follow; read it from the conversation.
    pub done: bool,
    /// Bytes of content so far.
    pub length: i64,
}

/// Why a delta was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeltaError {
    /// Too large.
    #[error("{0}")]
    Limit(String),
    /// The message was appended already: its stream is over.
    #[error("message {0} was appended already; its deltas are over")]
    Finished(String),
}

struct Partial {
    owner: String,
    content: String,
    touched: Instant,
}

#[derive(Default)]
struct Inner {
    /// By (owner, topic, message): topic ids are per owner.
    partials: HashMap<(String, String, String), Partial>,
    /// By (owner, topic).
    topics: HashMap<(String, String), broadcast::Sender<MessageDelta>>,
    /// Messages appended in the last [`IDLE`], by (owner, topic, message): a delta that arrives
    /// after its message's `finish` (from another instance, whose relay is not ordered with
    /// this one's) starts no partial of a stored message.
    finished: HashMap<(String, String, String), Instant>,
}

/// The live relay of partial content, per server process.
#[derive(Clone, Default)]
pub struct DeltaHub {
    inner: Arc<Mutex<Inner>>,
}

impl DeltaHub {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves only partial text behind: keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Add `delta` to message `message_id` of `owner`'s topic `topic_id`, and relay it. A
    /// new message is refused when `owner` streams `max_per_owner` already (so one user cannot
    /// take every place of the server's [`MAX_PARTIALS`]).
    pub fn publish(
        &self,
        owner: &str,
        topic_id: &str,
        message_id: &str,
        delta: &str,
        max_per_owner: usize,
    ) -> Result<i64, DeltaError> {
        if delta.len() > MAX_DELTA_BYTES {
            return Err(DeltaError::Limit(format!("a delta may be at most {MAX_DELTA_BYTES} bytes")));
        }
        let mut inner = self.lock();
        let now = Instant::now();
        let key = (owner.to_string(), topic_id.to_string(), message_id.to_string());
        if !inner.partials.contains_key(&key) {
            inner.partials.retain(|_, p| now.duration_since(p.touched) < IDLE);
            inner.finished.retain(|_, at| now.duration_since(*at) < IDLE);
            if inner.finished.contains_key(&key) {
                return Err(DeltaError::Finished(message_id.to_string()));
            }
            if inner.partials.values().filter(|p| p.owner == owner).count() >= max_per_owner {
                return Err(DeltaError::Limit(format!(
                    "you stream {max_per_owner} messages already, the most one user may; append one first"
                )));
            }
            if inner.partials.len() >= MAX_PARTIALS {
                return Err(DeltaError::Limit(format!("at most {MAX_PARTIALS} messages may stream at once")));
            }
        }
        let partial = inner.partials.entry(key).or_insert_with(|| Partial {
            owner: owner.to_string(),
            content: String::new(),
            touched: now,
        });
        if partial.content.len() + delta.len() > MAX_PARTIAL_BYTES {
            return Err(DeltaError::Limit(format!("a streamed message may be at most {MAX_PARTIAL_BYTES} bytes")));
        }
        partial.content.push_str(delta);
        partial.touched = now;
        let length = partial.content.len() as i64;
        if let Some(tx) = inner.topics.get(&(owner.to_string(), topic_id.to_string())) {
            let d = MessageDelta {
                topic_id: topic_id.to_string(),
                message_id: message_id.to_string(),
                delta: delta.to_string(),
                snapshot: false,
                done: false,
                length,
            };
            // No receiver left is fine: nobody is watching.
            let _ = tx.send(d);
        }
        Ok(length)
    }

    /// The message was appended to `owner`'s topic: drop its partial and tell subscribers.
    pub fn finish(&self, owner: &str, topic_id: &str, message_id: &str) {
        let mut inner = self.lock();
        let key = (owner.to_string(), topic_id.to_string(), message_id.to_string());
        let removed = inner.partials.remove(&key);
        let now = Instant::now();
        inner.finished.retain(|_, at| now.duration_since(*at) < IDLE);
        inner.finished.insert(key, now);
        if let (Some(p), Some(tx)) = (removed, inner.topics.get(&(owner.to_string(), topic_id.to_string()))) {
            let _ = tx.send(MessageDelta {
                topic_id: topic_id.to_string(),
                message_id: message_id.to_string(),
                delta: String::new(),
                snapshot: false,
                done: true,
                length: p.content.len() as i64,
            });
        }
    }

    /// Snapshots of every message of `owner`'s topic `topic_id` being written now.
    pub fn snapshots(&self, owner: &str, topic_id: &str) -> Vec<MessageDelta> {
        let inner = self.lock();
        let now = Instant::now();
        let mut out: Vec<MessageDelta> = inner
            .partials
            .iter()
            // A partial idle past IDLE is its worker's leftover, not a message being written.
            .filter(|((o, t, _), p)| o == owner && t == topic_id && now.duration_since(p.touched) < IDLE)
            .map(|((_, t, m), p)| MessageDelta {
                topic_id: t.clone(),
                message_id: m.clone(),
                delta: p.content.clone(),
                snapshot: true,
                done: false,
                length: p.content.len() as i64,
            })
            .collect();
        out.sort_by(|a, b| a.message_id.cmp(&b.message_id));
        out
    }

    /// Receive the deltas of `owner`'s topic `topic_id` from now on.
    pub fn subscribe(&self, owner: &str, topic_id: &str) -> broadcast::Receiver<MessageDelta> {
        let mut inner = self.lock();
        // Drop channels nobody listens to any more.
        inner.topics.retain(|_, tx| tx.receiver_count() > 0);
        inner
            .topics
            .entry((owner.to_string(), topic_id.to_string()))
            .or_insert_with(|| broadcast::channel(CHANNEL).0)
            .subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_appended_message_takes_no_more_deltas() {
        let hub = DeltaHub::default();
        assert_eq!(hub.publish("u", "t", "m1", "Hel", 10), Ok(3));
        hub.finish("u", "t", "m1");
        assert!(matches!(hub.publish("u", "t", "m1", "late", 10), Err(DeltaError::Finished(_))));
        assert!(hub.snapshots("u", "t").is_empty(), "no partial of a stored message");
        // A `done` that comes first (from another instance) holds off the message's deltas too.
        hub.finish("u", "t", "m2");
        assert!(matches!(hub.publish("u", "t", "m2", "x", 10), Err(DeltaError::Finished(_))));
        assert_eq!(hub.publish("u", "t", "m3", "x", 1), Ok(1), "finished messages take no stream place");
    }
}
