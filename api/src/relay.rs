//! Token deltas across server instances on one PostgreSQL database.
//!
//! [`DeltaHub`] relays streamed partial content to the subscribers of its own process. With
//! several instances, a worker publishes to one and a subscriber may listen on another, so each
//! instance also sends what it accepted (`publish`, `finish`) to the others over PostgreSQL's
//! `NOTIFY agentlog_deltas`, and feeds what the others send into its own hub. A sender task
//! takes everything that queued while its previous `NOTIFY` was in flight and sends it in one
//! statement, so deltas leave in the order they were accepted; PostgreSQL delivers a
//! transaction's notifications in order. A delta larger than a notification may carry is sent
//! in pieces (subscribers elsewhere see several smaller deltas of the same content).
//!
//! Best effort, like the deltas themselves: nothing is stored, a notification lost while an
//! instance reconnects is not sent again (the finished message reaches everyone through the
//! log). With SQLite there is no channel between processes, and deltas reach only the
//! subscribers of the process that received them.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use agentlog_eventlog::DatabasePool;
use serde::{Deserialize, Serialize};
use sqlx::{PgPool, postgres::PgListener};
use tokio::{sync::mpsc, task::JoinHandle};

use crate::deltas::DeltaHub;

/// The notification channel.
const CHANNEL: &str = "agentlog_deltas";
/// Largest piece of delta text per notification: PostgreSQL caps a payload at 8,000 bytes, and
/// JSON escaping can grow text up to six times.
const PIECE_BYTES: usize = 1_000;

/// PostgreSQL's bound on a notification's payload (it refuses 8,000 bytes or more).
const NOTIFY_BYTES: usize = 8_000;
/// Deltas waiting to be sent; past this the newest are dropped (and logged).
const QUEUE: usize = 10_000;
/// Most notifications per statement.
const BATCH: usize = 500;

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Relayed {
    /// The sending instance (an instance ignores its own).
    #[serde(rename = "i")]
    instance: String,
    /// Its number at the sender: PostgreSQL delivers identical payloads of one transaction once,
    /// and two pieces of a delta can be identical.
    #[serde(rename = "n")]
    seq: u64,
    /// The topic.
    #[serde(rename = "t")]
    topic_id: String,
    /// The message.
    #[serde(rename = "m")]
    message_id: String,
    /// The topic's owner (topic ids are per owner).
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    /// A piece of the delta; absent for `done`.
    #[serde(rename = "d", default, skip_serializing_if = "Option::is_none")]
    delta: Option<String>,
}

/// Sends this instance's deltas to the other instances and receives theirs; a no-op with SQLite.
/// Cheap to clone; its tasks stop when the last clone is dropped.
#[derive(Clone, Default)]
pub struct DeltaRelay {
    outbox: Option<mpsc::Sender<Relayed>>,
    instance: String,
    seq: Arc<AtomicU64>,
    _tasks: Option<Arc<Tasks>>,
}

struct Tasks(Vec<JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

impl DeltaRelay {
    /// Relay through `database` when it is PostgreSQL, feeding others' deltas into `hub`.
    pub fn start(database: DatabasePool, hub: DeltaHub) -> Self {
        let DatabasePool::Postgres(pool) = database else { return Self::default() };
        let instance = uuid::Uuid::new_v4().simple().to_string();
        let (outbox, queued) = mpsc::channel(QUEUE);
        let tasks = vec![tokio::spawn(send(pool.clone(), queued)), tokio::spawn(receive(pool, hub, instance.clone()))];
        Self { outbox: Some(outbox), instance, seq: Arc::default(), _tasks: Some(Arc::new(Tasks(tasks))) }
    }

    /// Tell the other instances about a delta this instance accepted.
    pub fn publish(&self, owner: &str, topic_id: &str, message_id: &str, delta: &str) {
        for piece in pieces(delta, PIECE_BYTES) {
            self.queue(topic_id, message_id, Some(owner), Some(piece));
        }
    }

    /// Tell the other instances that a message was appended to `owner`'s topic (its stream ends).
    pub fn finish(&self, owner: &str, topic_id: &str, message_id: &str) {
        self.queue(topic_id, message_id, Some(owner), None);
    }

    fn queue(&self, topic_id: &str, message_id: &str, owner: Option<&str>, delta: Option<&str>) {
        let Some(outbox) = &self.outbox else { return };
        let relayed = Relayed {
            instance: self.instance.clone(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            topic_id: topic_id.to_string(),
            message_id: message_id.to_string(),
            owner: owner.map(str::to_string),
            delta: delta.map(str::to_string),
        };
        if outbox.try_send(relayed).is_err() {
            tracing::warn!(
                topic_id,
                message_id,
                "delta relay queue full; a delta reaches this instance's subscribers only"
            );
        }
    }
}

/// `text` cut into pieces of at most `max` bytes, at character boundaries (one piece when it is
/// empty or short).
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut == 0 {
            // `max` is below one character's width: that character alone.
            cut = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (head, tail) = rest.split_at(cut);
        out.push(head);
        rest = tail;
    }
    out.push(rest);
    out
}

/// Send what queued, in order, a batch per statement.
async fn send(pool: PgPool, mut queued: mpsc::Receiver<Relayed>) {
    while let Some(first) = queued.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match queued.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        // PostgreSQL refuses a notification over 8,000 bytes, and with it the whole statement:
        // one that cannot go is left out (ids are checked and deltas cut, so none should be).
        let payloads: Vec<String> = batch
            .iter()
            .filter_map(|r| serde_json::to_string(r).ok())
            .filter(|p| {
                let fits = p.len() < NOTIFY_BYTES;
                if !fits {
                    tracing::warn!(bytes = p.len(), "a delta too large to relay is left out");
                }
                fits
            })
            .collect();
        let sent = sqlx::query("SELECT pg_notify($1, p) FROM UNNEST($2::text[]) AS p")
            .bind(CHANNEL)
            .bind(&payloads)
            .execute(&pool)
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, deltas = payloads.len(), "relaying deltas to the other instances failed");
        }
    }
}

/// Feed the other instances' deltas into `hub`.
async fn receive(pool: PgPool, hub: DeltaHub, instance: String) {
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!(error = %e, "delta relay: LISTEN connection failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(CHANNEL).await {
            tracing::debug!(error = %e, "delta relay: LISTEN failed; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        loop {
            match listener.recv().await {
                Ok(n) => deliver(&hub, &instance, n.payload()),
                Err(e) => {
                    tracing::debug!(error = %e, "delta relay: LISTEN connection lost; reconnecting");
                    break;
                }
            }
        }
    }
}

/// One notification into the hub (unless it is this instance's own).
fn deliver(hub: &DeltaHub, instance: &str, payload: &str) {
    let Ok(r) = serde_json::from_str::<Relayed>(payload) else {
        tracing::debug!(payload, "delta relay: a notification that is not a delta");
        return;
    };
    if r.instance == instance {
        return;
    }
    match (r.owner, r.delta) {
        (Some(owner), Some(delta)) => {
            // The same limits as a local delta, but the per-user one: the sending instance
            // applied it (its hub holds this user's partials from every instance too). A
            // refused one is the sender's business.
            if let Err(e) = hub.publish(&owner, &r.topic_id, &r.message_id, &delta, usize::MAX) {
                tracing::debug!(error = %e, "delta relay: a relayed delta was refused here");
            }
        }
        (Some(owner), None) => hub.finish(&owner, &r.topic_id, &r.message_id),
        (None, _) => tracing::debug!(payload, "delta relay: a delta that names no owner"),
    }
}
