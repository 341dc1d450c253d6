//! A mergeable duration histogram with bounded relative error: the sketch behind the analytics
//! percentiles.
//!
//! Values (milliseconds) below 128 get a bucket each, so they are exact. From 128 on, each
//! power of two `[2^e, 2^(e+1))` is cut into 64 equal buckets, so a bucket's width is at most
//! 1/64 of its lower bound; reporting the bucket's midpoint puts every estimate within
//! **±1/128 (0.78 %)** of a value that really falls in that bucket. The bucket of a value is
//! pure integer arithmetic (`leading_zeros` and a shift): the same value lands in the same
//! bucket on every machine, which keeps rebuilds byte-identical.
//!
//! A histogram is a sparse map bucket → count, stored as compact text: `bucket:count` pairs
//! in bucket order, comma-separated (`131:4,200:1`; empty when nothing was counted), which reads
//! back without a JSON parser. Merging is adding counts, so rows of any granularity, agent, model … can be combined and
//! queried together. A quantile is the nearest-rank one: the bucket holding the
//! `ceil(q·n)`-th smallest value, reported as its midpoint (clamped to the exact min and max the
//! rollup also keeps).
//!
//! ```
//! use agentlog_projections::analytics::DurationHistogram;
//! let mut h = DurationHistogram::default();
//! for ms in 1..=1000 { h.record(ms); }
//! let p50 = h.quantile(0.5).unwrap();
//! assert!((p50 as f64 - 500.0).abs() <= 500.0 / 128.0 + 1.0);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Values below this get a bucket each (exact).
const EXACT_BELOW: u64 = 128;
/// Buckets per power of two above [`EXACT_BELOW`].
const SUB_BUCKETS: u64 = 64;
/// log2 of [`SUB_BUCKETS`].
const SUB_BITS: u32 = 6;

/// Durations (ms) counted in log-linear buckets; see the module docs for the error bound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DurationHistogram {
    buckets: BTreeMap<u32, u64>,
}

/// The bucket of a value.
pub fn bucket_of(value: u64) -> u32 {
    if value < EXACT_BELOW {
        return value as u32;
    }
    let exponent = 63 - value.leading_zeros(); // ≥ 7
    let shift = exponent - SUB_BITS; // ≥ 1
    let mantissa = value >> shift; // in [64, 128)
    (u64::from(shift) * SUB_BUCKETS + mantissa) as u32
}

/// The smallest and largest value of a bucket.
pub fn bucket_bounds(bucket: u32) -> (u64, u64) {
    let b = u64::from(bucket);
    if b < EXACT_BELOW {
        return (b, b);
    }
    let shift = b / SUB_BUCKETS - 1;
    let mantissa = b - shift * SUB_BUCKETS;
    let low = mantissa << shift;
    (low, low + ((1u64 << shift) - 1))
}

impl DurationHistogram {
    /// Count one value.
    pub fn record(&mut self, value_ms: u64) {
        *self.buckets.entry(bucket_of(value_ms)).or_insert(0) += 1;
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &DurationHistogram) {
        for (bucket, count) in &other.buckets {
            *self.buckets.entry(*bucket).or_insert(0) += count;
        }
    }

    /// The stored text: `bucket:count` pairs in bucket order, comma-separated.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(self.buckets.len() * 8);
        for (i, (bucket, count)) in self.buckets.iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            // Writing into a String cannot fail.
            let _ = write!(out, "{comma}{bucket}:{count}");
        }
        out
    }

    /// Read [`to_text`](Self::to_text)'s form; `None` when it is not that form.
    pub fn from_text(text: &str) -> Option<Self> {
        let mut h = Self::default();
        h.merge_text(text)?;
        Some(h)
    }

    /// Add the counts of a stored text (as [`merge`](Self::merge) with
    /// [`from_text`](Self::from_text)'s histogram, without building it); `None` when the text is
    /// not that form (nothing is added then).
    pub fn merge_text(&mut self, text: &str) -> Option<()> {
        let mut pairs = Vec::new();
        for pair in text.split(',').filter(|p| !p.is_empty()) {
            let (bucket, count) = pair.split_once(':')?;
            pairs.push((bucket.parse::<u32>().ok()?, count.parse::<u64>().ok()?));
        }
        for (bucket, count) in pairs {
            *self.buckets.entry(bucket).or_insert(0) += count;
        }
        Some(())
    }

    /// How many values were counted.
    pub fn count(&self) -> u64 {
        self.buckets.values().sum()
    }

    /// The nearest-rank `q`-quantile (0 < q ≤ 1) as its bucket's midpoint; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (bucket, count) in &self.buckets {
            seen += count;
            if seen >= rank {
                let (low, high) = bucket_bounds(*bucket);
                return Some(low + (high - low) / 2);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_hold_their_values() {
        let mut previous_high = None;
        for bucket in 0..2_000u32 {
            let (low, high) = bucket_bounds(bucket);
            if let Some(p) = previous_high {
                assert_eq!(low, p + 1, "bucket {bucket}");
            }
            assert_eq!(bucket_of(low), bucket);
            assert_eq!(bucket_of(high), bucket);
            previous_high = Some(high);
        }
    }

    #[test]
    fn the_relative_error_is_bounded() {
        for value in (1..5_000_000u64).step_by(997) {
            let (low, high) = bucket_bounds(bucket_of(value));
            let mid = low + (high - low) / 2;
            let error = (mid as f64 - value as f64).abs() / value as f64;
            assert!(error <= 1.0 / 128.0, "value {value}: mid {mid}, error {error}");
        }
        assert_eq!(bucket_bounds(bucket_of(u64::MAX)).1, u64::MAX);
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let mut a = DurationHistogram::default();
        let mut b = DurationHistogram::default();
        let mut all = DurationHistogram::default();
        for v in 0..3_000u64 {
            if v % 3 == 0 {
                a.record(v * 7)
            } else {
                b.record(v * 7)
            }
            all.record(v * 7);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(all.count(), 3_000);
        let p99 = all.quantile(0.99).unwrap() as f64;
        assert!((p99 - 2_970.0 * 7.0).abs() / (2_970.0 * 7.0) <= 1.0 / 128.0 + 0.001, "{p99}");
        assert_eq!(DurationHistogram::default().quantile(0.5), None);
    }

    #[test]
    fn the_text_is_sparse_pairs_in_bucket_order() {
        let mut h = DurationHistogram::default();
        h.record(1_000);
        h.record(5);
        h.record(5);
        assert_eq!(h.to_text(), "5:2,317:1");
        assert_eq!(DurationHistogram::from_text("5:2,317:1"), Some(h.clone()));
        assert_eq!(DurationHistogram::from_text(""), Some(DurationHistogram::default()));
        assert_eq!(DurationHistogram::default().to_text(), "");
        let mut merged = h.clone();
        assert_eq!(merged.merge_text("5:1,9:3"), Some(()));
        assert_eq!(merged.to_text(), "5:3,9:3,317:1");
        for bad in ["5", "5:x", "-1:2", "5:2;6:1", "{\"5\":2}"] {
            assert_eq!(DurationHistogram::from_text(bad), None, "{bad}");
            assert_eq!(h.clone().merge_text(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_json_is_a_sparse_map() {
        let mut h = DurationHistogram::default();
        h.record(5);
        h.record(5);
        h.record(1_000);
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(text, r#"{"5":2,"317":1}"#);
        assert_eq!(serde_json::from_str::<DurationHistogram>(&text).unwrap(), h);
    }
}
