//! Prometheus histograms in the text exposition format: one series per label set, fixed
//! buckets, kept by their owner under its own lock.

use std::collections::BTreeMap;

/// One histogram's figures.
#[derive(Debug, Clone, Default)]
pub(crate) struct Histogram {
    /// Observations at or below each bucket bound (not cumulative; summed when rendered).
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// Count `value` in the first bucket whose bound is at least it (and in the sum).
    pub(crate) fn observe(&mut self, bounds: &[f64], value: f64) {
        if self.counts.len() != bounds.len() {
            self.counts = vec![0; bounds.len()];
        }
        if let Some(i) = bounds.iter().position(|b| value <= *b) {
            self.counts[i] += 1;
        }
        self.sum += value;
        self.count += 1;
    }
}

/// A series' labels, in the order they are printed.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// Append one histogram, every series of it, to `out`.
pub(crate) fn render_histogram(
    out: &mut String,
    name: &str,
    help: &str,
    bounds: &[f64],
    series: &BTreeMap<Labels, Histogram>,
) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} histogram\n"));
    for (labels, h) in series {
        let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        let text = text.join(",");
        let mut cumulative = 0;
        for (bound, n) in bounds.iter().zip(h.counts.iter().chain(std::iter::repeat(&0))) {
            cumulative += n;
            out.push_str(&format!("{name}_bucket{{{text},le=\"{bound}\"}} {cumulative}\n"));
        }
        out.push_str(&format!("{name}_bucket{{{text},le=\"+Inf\"}} {}\n", h.count));
        out.push_str(&format!("{name}_sum{{{text}}} {}\n", h.sum));
        out.push_str(&format!("{name}_count{{{text}}} {}\n", h.count));
    }
}

/// A label value as the text format writes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
