//! Token usage and performance: reading the legacy metadata shapes and aggregating a group.

use serde_json::{Map, Value};

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

/// Legacy flat usage keys on `metadata`.
const FLAT_USAGE_KEYS: [&str; 18] = [
    "acceptedPredictionTokens",
    "cost",
    "inputAudioTokens",
    "inputCacheMissTokens",
    "inputCachedTokens",
    "inputCitationTokens",
    "inputImageTokens",
    "inputTextTokens",
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

/// Token fields summed across a group's steps (cost is summed separately).
const TOKEN_KEYS: [&str; 17] = [
    "acceptedPredictionTokens",
    "inputAudioTokens",
    "inputCacheMissTokens",
    "inputCachedTokens",
    "inputCitationTokens",
    "inputImageTokens",
    "inputTextTokens",
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

/// `splitMetadata(metadata)`: usage = `{...metadata.usage}` with legacy flat keys filling the
/// gaps; performance = `{...metadata.performance}` likewise. Empty → `None`.
pub(crate) fn split_metadata(metadata: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let Some(meta) = metadata.filter(|m| truthy(Some(m))) else {
        return (None, None);
    };
    let obj = meta.as_object();
    let nested = |key: &str| match obj.and_then(|o| o.get(key)) {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let fill = |target: &mut Map<String, Value>, keys: &[&str]| {
        if let Some(o) = obj {
            for &k in keys {
                if let Some(v) = o.get(k)
                    && !target.contains_key(k)
                {
                    target.insert(k.to_owned(), v.clone());
                }
            }
        }
    };
    let mut usage = nested("usage");
    fill(&mut usage, &FLAT_USAGE_KEYS);
    let mut performance = nested("performance");
    fill(&mut performance, &FLAT_PERFORMANCE_KEYS);
    let wrap = |m: Map<String, Value>| (!m.is_empty()).then_some(Value::Object(m));
    (wrap(usage), wrap(performance))
}

/// `aggregateMetadata` over group blocks: token fields and cost summed, first `ttft`, mean
/// `tps`, `duration` and `latency` summed (with JS `+`).
pub(crate) fn aggregate<'b>(blocks: impl Iterator<Item = &'b Map<String, Value>>) -> (Option<Value>, Option<Value>) {
    let mut usage: Vec<(&'static str, f64)> = Vec::new();
    let mut has_usage = false;
    let mut ttft: Option<Value> = None;
    let mut duration: Option<JsSum> = None;
    let mut latency: Option<JsSum> = None;
    let mut tps_sum = 0.0;
    let mut tps_count = 0u32;
    let mut has_perf = false;

    for block in blocks {
        if let Some(u) = block.get("usage").filter(|u| truthy(Some(u))) {
            for key in TOKEN_KEYS.iter().copied().chain(std::iter::once("cost")) {
                if let Some(Value::Number(n)) = u.get(key) {
                    let v = n.as_f64().unwrap_or(f64::NAN);
                    match usage.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, acc)) => *acc = if *acc == 0.0 || acc.is_nan() { 0.0 } else { *acc } + v,
                        None => usage.push((key, v)),
                    }
                    has_usage = true;
                }
            }
        }
        if let Some(p) = block.get("performance").filter(|p| truthy(Some(p))) {
            if let Some(t) = p.get("ttft")
                && ttft.is_none()
            {
                ttft = Some(t.clone());
                has_perf = true;
            }
            if let Some(Value::Number(n)) = p.get("tps") {
                tps_sum += n.as_f64().unwrap_or(f64::NAN);
                tps_count += 1;
                has_perf = true;
            }
            if let Some(d) = p.get("duration") {
                duration = Some(JsSum::add_or_zero(duration.as_ref(), d));
                has_perf = true;
            }
            if let Some(l) = p.get("latency") {
                latency = Some(JsSum::add_or_zero(latency.as_ref(), l));
                has_perf = true;
            }
        }
    }

    let usage =
        has_usage.then(|| Value::Object(usage.into_iter().map(|(k, v)| (k.to_owned(), js_number(v))).collect()));
    let performance = has_perf.then(|| {
        let mut m = Map::new();
        if let Some(t) = ttft {
            m.insert("ttft".to_owned(), t);
        }
        if let Some(d) = duration {
            m.insert("duration".to_owned(), d.into_value());
        }
        if let Some(l) = latency {
            m.insert("latency".to_owned(), l.into_value());
        }
        if tps_count > 0 {
            m.insert("tps".to_owned(), js_number(tps_sum / f64::from(tps_count)));
        }
        Value::Object(m)
    });
    (usage, performance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn split_reads_flat_legacy_keys() {
        let meta = json!({"cost": 0.001, "duration": 1000, "totalTokens": 30, "tps": 20, "collapsed": true});
        let (u, p) = split_metadata(Some(&meta));
        assert_eq!(u, Some(json!({"cost": 0.001, "totalTokens": 30})));
        assert_eq!(p, Some(json!({"duration": 1000, "tps": 20})));
    }

    #[test]
    fn split_prefers_nested_and_fills_gaps_from_flat() {
        let meta = json!({"usage": {"totalTokens": 5}, "totalTokens": 9, "cost": 1});
        let (u, p) = split_metadata(Some(&meta));
        assert_eq!(u, Some(json!({"totalTokens": 5, "cost": 1})));
        assert_eq!(p, None);
        assert_eq!(split_metadata(Some(&json!({}))), (None, None));
        assert_eq!(split_metadata(None), (None, None));
    }

    #[test]
    fn aggregate_sums_averages_and_takes_first_ttft() {
        let blocks = [
            json!({"usage": {"cost": 0.001, "totalTokens": 30}, "performance": {"duration": 1000, "tps": 20, "ttft": 100}}),
            json!({"usage": {"cost": 0.002, "totalTokens": 40}, "performance": {"duration": 2000, "tps": 30, "ttft": 200}}),
        ];
        let (u, p) = aggregate(blocks.iter().filter_map(Value::as_object));
        assert_eq!(u, Some(json!({"cost": 0.003, "totalTokens": 70})));
        assert_eq!(p, Some(json!({"ttft": 100, "duration": 3000, "tps": 25})));
        assert_eq!(aggregate(std::iter::empty()), (None, None));
    }
}
