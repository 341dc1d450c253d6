//! The group-commit writer: one task per store takes appends from many callers over a channel
//! and commits everything that queued up while the previous commit was in flight as one
//! transaction. Each append is still judged alone (expected version, idempotency) and fails
//! alone. Durable commits cost about a millisecond each, so this is what lets concurrent
//! single-event appends go faster than one commit per event.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};

use crate::{
    append::AppendResult,
    backend::{Backend, BatchAnswers, now_micros},
    error::EventLogError,
    validate::PreparedAppend,
};

/// One queued append and where to send its answer.
pub(crate) struct WriteRequest {
    pub append: Arc<PreparedAppend>,
    pub reply: oneshot::Sender<Result<Vec<AppendResult>, EventLogError>>,
}

impl WriteRequest {
    fn event_count(&self) -> usize {
        self.append.iter().map(|p| p.events.len()).sum()
    }
}

/// Run the writer until every sender is gone and the queue is drained.
pub(crate) async fn run_writer<B: Backend>(
    backend: Arc<B>,
    mut queue: mpsc::Receiver<WriteRequest>,
    committed: watch::Sender<i64>,
    max_batch_events: usize,
) {
    let mut writer: Option<B::Writer> = None;
    while let Some(first) = queue.recv().await {
        let mut events = first.event_count();
        let mut requests = vec![first];
        while events < max_batch_events {
            match queue.try_recv() {
                Ok(r) => {
                    events += r.event_count();
                    requests.push(r);
                }
                Err(_) => break,
            }
        }
        let batch: Vec<Arc<PreparedAppend>> = requests.iter().map(|r| Arc::clone(&r.append)).collect();
        let answers = match commit_reconnecting(&*backend, &mut writer, &batch).await {
            Ok(answers) => answers,
            Err(EventLogError::Unavailable { reason }) => {
                tracing::warn!(error = %reason, "event log writer cannot connect");
                for r in requests {
                    let _ = r.reply.send(Err(EventLogError::Unavailable { reason: reason.clone() }));
                }
                continue;
            }
            Err(e) if requests.len() == 1 => vec![Err(e)],
            Err(e) => {
                // Something in the batch broke the whole transaction: judge each append alone so
                // one bad append cannot fail its neighbours.
                tracing::debug!(error = %e, size = requests.len(), "batch failed; retrying appends one by one");
                let mut answers = Vec::with_capacity(requests.len());
                for append in &batch {
                    answers.push(
                        match commit_reconnecting(&*backend, &mut writer, std::slice::from_ref(append)).await {
                            Ok(mut one) => one.pop().unwrap_or(Err(EventLogError::Closed)),
                            Err(e) => Err(e),
                        },
                    );
                }
                answers
            }
        };
        let mut head = 0;
        for (request, answer) in requests.into_iter().zip(answers) {
            if let Ok(results) = &answer {
                head = head.max(results.iter().map(AppendResult::last_position).max().unwrap_or(0));
            }
            let _ = request.reply.send(answer);
        }
        if head > 0 {
            committed.send_if_modified(|h| {
                let moved = head > *h;
                *h = (*h).max(head);
                moved
            });
        }
    }
}

/// Commit `batch` on the writer's connection, opening one if there is none. A connection that
/// was lost while idle (the database restarted) fails its first use: the batch is then tried
/// once more on a fresh connection. That is always safe — a transaction cut off by a lost
/// connection is rolled back by the server, and if the loss hit the commit itself the events
/// are in the log and appending the same event ids again answers them as duplicates.
/// `Unavailable` when no connection can be opened.
async fn commit_reconnecting<B: Backend>(
    backend: &B,
    writer: &mut Option<B::Writer>,
    batch: &[Arc<PreparedAppend>],
) -> Result<BatchAnswers, EventLogError> {
    let mut reused = writer.is_some();
    loop {
        let conn = match writer {
            Some(c) => c,
            None => match backend.open_writer().await {
                Ok(c) => writer.insert(c),
                Err(e) => return Err(EventLogError::Unavailable { reason: e.to_string() }),
            },
        };
        match backend.commit_batch(conn, batch, now_micros()).await {
            Ok(answers) => return Ok(answers),
            Err(e) => {
                *writer = None;
                if reused && e.is_unavailable() {
                    tracing::info!(error = %e, "event log writer lost its connection; reconnecting");
                    reused = false;
                    continue;
                }
                return Err(e);
            }
        }
    }
}
