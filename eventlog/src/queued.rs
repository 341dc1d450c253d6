//! Appends queued in the log and not yet answered.

use tokio::sync::oneshot;

use crate::{append::AppendResult, error::EventLogError};

/// Appends handed to the log by [`EventStore::queue_in_order`](crate::EventStore::queue_in_order)
/// and not yet answered: the log commits them in the order queued whether or not anyone waits.
#[derive(Debug)]
pub struct QueuedAppends {
    answers: Vec<Queued>,
}

#[derive(Debug)]
enum Queued {
    Answered(Result<Vec<AppendResult>, EventLogError>),
    Waiting(oneshot::Receiver<Result<Vec<AppendResult>, EventLogError>>),
}

impl QueuedAppends {
    /// Appends already answered (a store without a queue answers as it goes).
    pub fn answered(answers: Vec<Result<Vec<AppendResult>, EventLogError>>) -> Self {
        Self { answers: answers.into_iter().map(Queued::Answered).collect() }
    }

    pub(crate) fn with_capacity(n: usize) -> Self {
        Self { answers: Vec::with_capacity(n) }
    }

    pub(crate) fn push_answered(&mut self, answer: Result<Vec<AppendResult>, EventLogError>) {
        self.answers.push(Queued::Answered(answer));
    }

    pub(crate) fn push_waiting(&mut self, answer: oneshot::Receiver<Result<Vec<AppendResult>, EventLogError>>) {
        self.answers.push(Queued::Waiting(answer));
    }

    /// Wait for every answer, in the order queued.
    pub async fn answers(self) -> Vec<Result<Vec<AppendResult>, EventLogError>> {
        let mut out = Vec::with_capacity(self.answers.len());
        for queued in self.answers {
            out.push(match queued {
                Queued::Answered(answer) => answer,
                Queued::Waiting(answer) => answer.await.unwrap_or(Err(EventLogError::Closed)),
            });
        }
        out
    }
}
