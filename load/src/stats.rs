//! What each mutation type did: acknowledgements with their latencies, refusals by error code,
//! retries. Each client keeps its own and they are merged at the end (no lock on the hot path).

use std::{collections::BTreeMap, time::Duration};

/// Error code counted for a request that got no GraphQL answer (refused or reset connection,
/// timeout, a body that is not JSON).
pub const TRANSPORT: &str = "TRANSPORT";

/// One mutation type's figures.
#[derive(Debug, Clone, Default)]
pub struct OpStats {
    /// Latencies of the acknowledged calls, in microseconds.
    pub latencies_us: Vec<u64>,
    /// Answers that were errors, by `extensions.code` (or [`TRANSPORT`]).
    pub errors: BTreeMap<String, u64>,
    /// Attempts sent again after an error.
    pub retries: u64,
}

/// Figures by mutation type.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Mutation name → its figures.
    pub ops: BTreeMap<&'static str, OpStats>,
}

impl Stats {
    /// An acknowledged call of `op` that took `took`.
    pub fn ack(&mut self, op: &'static str, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.ops.entry(op).or_default().latencies_us.push(us);
    }

    /// A call of `op` answered with error `code`.
    pub fn error(&mut self, op: &'static str, code: &str) {
        *self.ops.entry(op).or_default().errors.entry(code.to_string()).or_default() += 1;
    }

    /// A call of `op` sent again.
    pub fn retry(&mut self, op: &'static str) {
        self.ops.entry(op).or_default().retries += 1;
    }

    /// Add another client's figures.
    pub fn merge(&mut self, other: Stats) {
        for (op, s) in other.ops {
            let mine = self.ops.entry(op).or_default();
            mine.latencies_us.extend(s.latencies_us);
            mine.retries += s.retries;
            for (code, n) in s.errors {
                *mine.errors.entry(code).or_default() += n;
            }
        }
    }
}

/// The nearest-rank `p`-th percentile (0–100) of sorted values (0 when empty).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[5], 99.0), 5);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn merging_adds_up() {
        let mut a = Stats::default();
        a.ack("x", Duration::from_millis(1));
        a.error("x", "CONFLICT");
        let mut b = Stats::default();
        b.ack("x", Duration::from_millis(2));
        b.error("x", "CONFLICT");
        b.retry("y");
        a.merge(b);
        assert_eq!(a.ops["x"].latencies_us.len(), 2);
        assert_eq!(a.ops["x"].errors["CONFLICT"], 2);
        assert_eq!(a.ops["y"].retries, 1);
    }
}
