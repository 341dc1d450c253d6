//! Token usage and performance: reading the legacy metadata shapes and aggregating a group.

use crate::value::{Map, Value};
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::js::{JsSum, js_number, truthy};

/// Metadata keys that are usage/performance (kept on tool-using assistants in `messageMap`,
/// stripped from the merged group metadata).
pub(crate) const USAGE_PERFORMANCE_KEYS: [&str; 25] = [
    "acceptedPredictionTokens",
    "cost",
    "duration",
    "inputAudioTokens",
    "inputCacheMissTokens",
    "inputCachedTokens",
    "inputCitationTokens",
    "inputImageTokens",
    "inputTextTokens",
    "inputVideoTokens",
    "inputToolTokens",
    "inputWriteCacheTokens",
    "latency",
    "outputAudioTokens",
    "outputImageTokens",
    "outputReasoningTokens",
    "outputTextTokens",
    "performance",
    "rejectedPredictionTokens",
    "totalInputTokens",
    "totalOutputTokens",
    "totalTokens",
    "tps",
    "ttft",
    "usage",
];

/// Legacy flat usage keys on `metadata`, in upstream's order (`splitMetadata` appends them in it).
const FLAT_USAGE_KEYS: [&str; 19] = [
    "acceptedPredictionTokens",
    "cost",
    "inputAudioTokens",
    "inputCacheMissTokens",
    "inputCachedTokens",
    "inputCitationTokens",
    "inputImageTokens",
    "inputTextTokens",
    "inputVideoTokens",
    "inputToolTokens",
    "inputWriteCacheTokens",
    "outputAudioTokens",
    "outputImageTokens",
    "outputReasoningTokens",
    "outputTextTokens",
    "rejectedPredictionTokens",
    "totalInputTokens",
    "totalOutputTokens",
    "totalTokens",
];

/// Token fields summed across a group's steps, in upstream's order (cost is summed after them).
const TOKEN_KEYS: [&str; 18] = [
    "acceptedPredictionTokens",
    "inputAudioTokens",
    "inputCacheMissTokens",
    "inputCachedTokens",
    "inputCitationTokens",
    "inputImageTokens",
    "inputTextTokens",
    "inputVideoTokens",
    "inputToolTokens",
    "inputWriteCacheTokens",
    "outputAudioTokens",
    "outputImageTokens",
    "outputReasoningTokens",
    "outputTextTokens",
    "rejectedPredictionTokens",
    "totalInputTokens",
    "totalOutputTokens",
    "totalTokens",
];

const FLAT_PERFORMANCE_KEYS: [&str; 4] = ["duration", "latency", "tps", "ttft"];

/// Is `key` a usage/performance metadata key?
pub(crate) fn is_usage_key(key: &str) -> bool {
    USAGE_PERFORMANCE_KEYS.contains(&key)
}

/// A step's usage or performance as upstream computes it, read in place from the message.
#[derive(Debug, Clone, Copy)]
pub(crate) enum UsageView<'r> {
    /// The message's own truthy top-level `usage` / `performance`.
    Whole(&'r Value),
    /// `splitMetadata`: `{...metadata[key]}` with the legacy flat `metadata` keys filling gaps.
    Split { nested: Option<&'r Map<String, Value>>, meta: &'r Map<String, Value>, flat: &'static [&'static str] },
}

impl<'r> UsageView<'r> {
    /// A field of the object (`None` for a non-object top-level value).
    pub(crate) fn get(&self, key: &str) -> Option<&'r Value> {
        match *self {
            UsageView::Whole(v) => v.get(key),
            UsageView::Split { nested, meta, flat } => {
                nested.and_then(|n| n.get(key)).or_else(|| if flat.contains(&key) { meta.get(key) } else { None })
            }
        }
    }
}

impl Serialize for UsageView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            UsageView::Whole(v) => v.serialize(s),
            UsageView::Split { nested, meta, flat } => {
                let mut entries: Vec<(&str, &Value)> = Vec::new();
                if let Some(n) = nested {
                    entries.extend(n.iter().map(|(k, v)| (k.as_str(), v)));
                }
                for &k in flat {
                    if let Some(v) = meta.get(k)
                        && !nested.is_some_and(|n| n.contains_key(k))
                    {
                        entries.push((k, v));
                    }
                }
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// One half of `splitMetadata(metadata)`; `None` when it would be empty.
fn split<'r>(metadata: Option<&'r Value>, key: &str, flat: &'static [&'static str]) -> Option<UsageView<'r>> {
    let meta = metadata.filter(|m| truthy(Some(m)))?.as_object()?;
    let nested = match meta.get(key) {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    let non_empty = nested.is_some_and(|n| !n.is_empty()) || flat.iter().any(|k| meta.contains_key(k));
    non_empty.then_some(UsageView::Split { nested, meta, flat })
}

/// `splitMetadata(metadata)`: usage = `{...metadata.usage}` with legacy flat keys filling the
/// gaps; performance = `{...metadata.performance}` likewise. Empty → `None`.
pub(crate) fn split_metadata(metadata: Option<&Value>) -> (Option<UsageView<'_>>, Option<UsageView<'_>>) {
    (split(metadata, "usage", &FLAT_USAGE_KEYS), split(metadata, "performance", &FLAT_PERFORMANCE_KEYS))
}

/// A step's usage and performance: a truthy top-level field wins entirely, else metadata.
pub(crate) fn step_usage(msg: &Map<String, Value>) -> (Option<UsageView<'_>>, Option<UsageView<'_>>) {
    let (meta_usage, meta_perf) = split_metadata(msg.get("metadata"));
    let usage = msg.get("usage").filter(|u| truthy(Some(u))).map(UsageView::Whole).or(meta_usage);
    let perf = msg.get("performance").filter(|p| truthy(Some(p))).map(UsageView::Whole).or(meta_perf);
    (usage, perf)
}

/// `aggregateMetadata` over a group's blocks, ready to serialise.
#[derive(Debug, Default)]
pub(crate) struct Aggregate<'r> {
    usage: Vec<(&'static str, f64)>,
    has_usage: bool,
    ttft: Option<&'r Value>,
    duration: Option<JsSum>,
    latency: Option<JsSum>,
    tps_sum: f64,
    tps_count: u32,
    has_perf: bool,
    /// `ttft`, `duration` and `latency` in the order they were first set (`tps` goes last).
    perf_order: Vec<&'static str>,
}

/// The aggregated `usage` object.
pub(crate) struct AggregateUsage<'a>(&'a [(&'static str, f64)]);

/// The aggregated `performance` object.
pub(crate) struct AggregatePerformance<'a, 'r>(&'a Aggregate<'r>);

impl<'r> Aggregate<'r> {
    /// `aggregateMetadata` over the blocks' (usage, performance): token fields and cost
    /// summed, first `ttft`, mean `tps`, `duration` and `latency` summed (with JS `+`).
    pub(crate) fn of(blocks: impl Iterator<Item = (Option<UsageView<'r>>, Option<UsageView<'r>>)>) -> Aggregate<'r> {
        let mut a = Aggregate::default();
        for (usage, perf) in blocks {
            if let Some(u) = usage {
                for key in TOKEN_KEYS.iter().copied().chain(std::iter::once("cost")) {
                    if let Some(Value::Number(n)) = u.get(key) {
                        let v = n.as_f64().unwrap_or(f64::NAN);
                        match a.usage.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, acc)) => *acc = if *acc == 0.0 || acc.is_nan() { 0.0 } else { *acc } + v,
                            None => a.usage.push((key, v)),
                        }
                        a.has_usage = true;
                    }
                }
            }
            if let Some(p) = perf {
                if let Some(t) = p.get("ttft")
                    && a.ttft.is_none()
                {
                    a.ttft = Some(t);
                    a.perf_order.push("ttft");
                    a.has_perf = true;
                }
                if let Some(Value::Number(n)) = p.get("tps") {
                    a.tps_sum += n.as_f64().unwrap_or(f64::NAN);
                    a.tps_count += 1;
                    a.has_perf = true;
                }
                if let Some(d) = p.get("duration") {
                    if a.duration.is_none() {
                        a.perf_order.push("duration");
                    }
                    a.duration = Some(JsSum::add_or_zero(a.duration.as_ref(), d));
                    a.has_perf = true;
                }
                if let Some(l) = p.get("latency") {
                    if a.latency.is_none() {
                        a.perf_order.push("latency");
                    }
                    a.latency = Some(JsSum::add_or_zero(a.latency.as_ref(), l));
                    a.has_perf = true;
                }
            }
        }
        a
    }

    /// The summed usage, if any step had a numeric usage field.
    pub(crate) fn usage(&self) -> Option<AggregateUsage<'_>> {
        self.has_usage.then_some(AggregateUsage(&self.usage))
    }

    /// The combined performance, if any step had one of its fields.
    pub(crate) fn performance(&self) -> Option<AggregatePerformance<'_, 'r>> {
        self.has_perf.then_some(AggregatePerformance(self))
    }
}

impl Serialize for AggregateUsage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for &(k, v) in self.0 {
            m.serialize_entry(k, &js_number(v))?;
        }
        m.end()
    }
}

impl Serialize for AggregatePerformance<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut m = s.serialize_map(None)?;
        for &k in &a.perf_order {
            match k {
                "ttft" => m.serialize_entry(k, &a.ttft)?,
                "duration" => m.serialize_entry(k, &a.duration.as_ref().map(JsSum::to_value))?,
                _ => m.serialize_entry(k, &a.latency.as_ref().map(JsSum::to_value))?,
            }
        }
        if a.tps_count > 0 {
            m.serialize_entry("tps", &js_number(a.tps_sum / f64::from(a.tps_count)))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(v: Option<impl Serialize>) -> Value {
        Value::from(serde_json::to_value(v.expect("present")).expect("serialises"))
    }

    #[test]
    fn split_reads_flat_legacy_keys() {
        let meta = json!({"cost": 0.001, "duration": 1000, "totalTokens": 30, "tps": 20, "collapsed": true});
        let (u, p) = split_metadata(Some(&meta));
        assert_eq!(json(u), json!({"cost": 0.001, "totalTokens": 30}));
        assert_eq!(json(p), json!({"duration": 1000, "tps": 20}));
    }

    #[test]
    fn split_prefers_nested_and_fills_gaps_from_flat() {
        let meta = json!({"usage": {"totalTokens": 5}, "totalTokens": 9, "cost": 1});
        let (u, p) = split_metadata(Some(&meta));
        assert_eq!(json(u), json!({"totalTokens": 5, "cost": 1}));
        assert!(p.is_none());
        let empty = json!({});
        assert!(matches!(split_metadata(Some(&empty)), (None, None)));
        assert!(matches!(split_metadata(None), (None, None)));
    }

    #[test]
    fn aggregate_sums_averages_and_takes_first_ttft() {
        let blocks = [
            json!({"usage": {"cost": 0.001, "totalTokens": 30}, "performance": {"duration": 1000, "tps": 20, "ttft": 100}}),
            json!({"usage": {"cost": 0.002, "totalTokens": 40}, "performance": {"duration": 2000, "tps": 30, "ttft": 200}}),
        ];
        let a = Aggregate::of(blocks.iter().filter_map(Value::as_object).map(step_usage));
        assert_eq!(json(a.usage()), json!({"cost": 0.003, "totalTokens": 70}));
        assert_eq!(json(a.performance()), json!({"ttft": 100, "duration": 3000, "tps": 25}));
        let none = Aggregate::of(std::iter::empty());
        assert!(none.usage().is_none() && none.performance().is_none());
    }
}
