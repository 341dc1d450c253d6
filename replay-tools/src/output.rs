//! Printing: aligned text tables by default, JSON with `--json`, and progress bars on stderr
//! (hidden with `--json` and when stderr is not a terminal, so pipes and logs stay clean).

use std::io::{self, IsTerminal, Write};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::Value;

/// Longest cell a table prints before cutting it with `…`.
const MAX_CELL: usize = 72;

/// A text table: a header row and rows of cells, printed with aligned columns.
#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<I, S>(headers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { headers: headers.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Add a row (missing cells print empty, extra cells are dropped).
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(|c| cut(&c.into(), MAX_CELL)).collect());
    }

    /// The table as text, one line per row, columns padded to their widest cell.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().take(n).enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let empty = String::new();
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            let mut line = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = row.get(i).unwrap_or(&empty);
                if i + 1 == n {
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `s` cut to `max` characters, ending in `…` when cut; newlines shown as spaces.
pub fn cut(s: &str, max: usize) -> String {
    let flat: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut short: String = flat.chars().take(max.saturating_sub(1)).collect();
        short.push('…');
        short
    }
}

/// Print text to stdout as is.
pub fn print_text(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).context("writing stdout")?;
    out.flush().context("writing stdout")
}

/// Print `value` as pretty JSON on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value).context("encoding JSON output")?;
    text.push('\n');
    print_text(&text)
}

/// A one-line summary of a payload: its scalar fields as `key=value`, nested ones elided.
pub fn summarize(payload: &Value) -> String {
    let Value::Object(map) = payload else { return cut(&payload.to_string(), 60) };
    let mut parts = Vec::new();
    for (k, v) in map {
        let shown = match v {
            Value::Null => continue,
            Value::String(s) => cut(s, 28),
            Value::Bool(_) | Value::Number(_) => v.to_string(),
            Value::Array(items) if items.is_empty() => continue,
            Value::Array(items) => format!("[{}]", items.len()),
            Value::Object(_) => "{…}".to_string(),
        };
        parts.push(format!("{k}={shown}"));
    }
    parts.join(" ")
}

/// A progress bar on stderr for `len` units of `what`; hidden when `json` is set or stderr is
/// not a terminal.
pub fn progress(len: u64, what: &str, json: bool) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if json || !io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_and_cut() {
        let mut t = Table::new(["A", "LONGER"]);
        t.row(["xyz", "1"]);
        t.row(["a\nb", "2"]);
        assert_eq!(t.render(), "A    LONGER\nxyz  1\na b  2\n");
        assert_eq!(cut("abcdef", 4), "abc…");
    }

    #[test]
    fn summaries_show_scalars() {
        let s = summarize(&json!({"a": 1, "b": "x", "c": {"d": 1}, "e": [1, 2], "f": null}));
        assert_eq!(s, "a=1 b=x c={…} e=[2]");
    }
}
