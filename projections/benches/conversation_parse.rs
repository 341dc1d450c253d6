//! Conversation-flow parse timing: median of repeated in-process runs on the shared bench
//! inputs (`AGENTLOG_BENCH_DIR`, default `../shared/bench/conversation` from the workspace),
//! a generated 100,000-deep chain, and a 10× width scaling check.
//!
//! Run: `cargo bench -p agentlog-projections --bench conversation_parse`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentlog_projections::conversation;
use serde_json::{Value, json};

/// Median wall time of `runs` calls of `f` (after one warm-up call).
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A linear user/assistant chain, each message the parent of the next.
fn deep_chain(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let mut m = json!({"id": format!("m{i}"), "role": role, "content": format!("turn {i}"),
                               "createdAt": 1_700_000_000_000u64 + i as u64, "updatedAt": 1_700_000_000_000u64 + i as u64});
            if i > 0 {
                m["parentId"] = json!(format!("m{}", i - 1));
            }
            m
        })
        .collect()
}

/// `roots` short conversations side by side (a wide topic), each with a tool chain and a
/// regenerated answer.
fn wide(roots: usize) -> Vec<Value> {
    let mut out = Vec::with_capacity(roots * 6);
    for r in 0..roots {
        let t = 1_700_000_000_000u64 + (r as u64) * 10;
        out.push(json!({"id": format!("u{r}"), "role": "user", "content": "q", "createdAt": t, "updatedAt": t}));
        out.push(json!({"id": format!("a{r}"), "role": "assistant", "content": "", "parentId": format!("u{r}"),
            "tools": [{"id": format!("c{r}"), "apiName": "x", "identifier": "p", "arguments": "{}", "type": "default"}],
            "metadata": {"totalTokens": 10, "cost": 0.001}, "createdAt": t + 1, "updatedAt": t + 1}));
        out.push(json!({"id": format!("t{r}"), "role": "tool", "content": "r", "parentId": format!("a{r}"),
            "tool_call_id": format!("c{r}"), "createdAt": t + 2, "updatedAt": t + 2}));
        out.push(json!({"id": format!("f{r}"), "role": "assistant", "content": "done", "parentId": format!("t{r}"),
            "createdAt": t + 3, "updatedAt": t + 3}));
        out.push(json!({"id": format!("g{r}"), "role": "assistant", "content": "again", "parentId": format!("u{r}"),
            "createdAt": t + 4, "updatedAt": t + 4}));
        out.push(json!({"id": format!("v{r}"), "role": "user", "content": "next", "parentId": format!("f{r}"),
            "createdAt": t + 5, "updatedAt": t + 5}));
    }
    out
}

fn bench_dir() -> PathBuf {
    match std::env::var_os("AGENTLOG_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/conversation"),
    }
}

fn main() {
    let dir = bench_dir();
    println!("conversation parse, median of repeated in-process runs (parse call only)");
    for name in ["parse-100", "parse-1000", "parse-10000"] {
        let path = dir.join(format!("{name}.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!(
                "{name}: skipped ({} not found; set AGENTLOG_BENCH_DIR)",
                path.display()
            );
            continue;
        };
        let Ok(Value::Array(messages)) = serde_json::from_str::<Value>(&text) else {
            println!("{name}: skipped (not a JSON array)");
            continue;
        };
        let runs = if messages.len() >= 10_000 { 31 } else { 101 };
        let parse = median(runs, || {
            std::hint::black_box(conversation::parse(&messages, None));
        });
        let with_json = median(runs, || {
            let r = conversation::parse(&messages, None);
            let mut buf = Vec::with_capacity(text.len() * 2);
            r.write_json(&mut buf).expect("write to memory");
            std::hint::black_box(buf);
        });
        println!(
            "{name}: {} messages: parse {:.3} ms; parse + write JSON {:.3} ms ({runs} runs)",
            messages.len(),
            ms(parse),
            ms(with_json)
        );
    }

    let chain = deep_chain(100_000);
    let d = median(11, || {
        std::hint::black_box(conversation::parse(&chain, None));
    });
    println!(
        "deep chain: 100000 messages, depth 100000: parse {:.3} ms (11 runs)",
        ms(d)
    );

    let small = wide(10_000 / 6 + 1);
    let large = wide(100_000 / 6 + 1);
    let ds = median(11, || {
        std::hint::black_box(conversation::parse(&small, None));
    });
    let dl = median(11, || {
        std::hint::black_box(conversation::parse(&large, None));
    });
    println!(
        "scaling: wide {} messages {:.3} ms, wide {} messages {:.3} ms, ratio {:.2} for 10x input",
        small.len(),
        ms(ds),
        large.len(),
        ms(dl),
        ms(dl) / ms(ds)
    );
    let chain10k = deep_chain(10_000);
    let dc = median(11, || {
        std::hint::black_box(conversation::parse(&chain10k, None));
    });
    println!(
        "scaling: chain 10000 {:.3} ms, chain 100000 {:.3} ms, ratio {:.2} for 10x input",
        ms(dc),
        ms(d),
        ms(d) / ms(dc)
    );
}
