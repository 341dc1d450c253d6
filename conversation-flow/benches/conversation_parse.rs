//! Conversation-flow parse timing: median of repeated in-process runs on the shared bench
//! inputs (`AGENTLOG_BENCH_DIR`, default `benches/data` of this crate),
//! a generated 100,000-deep chain, and a 10× width scaling check.
//!
//! Run: `cargo bench -p agentlog-conversation-flow --bench conversation_parse`

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentlog_conversation_flow as conversation;
use conversation::Value;
use serde_json::json;

#[path = "support/conversation_inputs.rs"]
mod conversation_inputs;
use conversation_inputs::{deep_chain, wide};

/// CPU time this thread has run, from `/proc/thread-self/schedstat` (nanoseconds), when the
/// kernel exposes it. On a shared machine wall time mostly measures the other tenants.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Median wall time and median CPU time of `runs` calls of `f` (after one warm-up call).
fn median_both(runs: usize, f: &mut impl FnMut()) -> (Duration, Option<Duration>) {
    f();
    let mut walls = Vec::with_capacity(runs);
    let mut cpus = Vec::with_capacity(runs);
    for _ in 0..runs {
        let c0 = thread_cpu();
        let start = Instant::now();
        f();
        walls.push(start.elapsed());
        if let (Some(a), Some(b)) = (c0, thread_cpu()) {
            cpus.push(b.saturating_sub(a));
        }
    }
    walls.sort();
    cpus.sort();
    let cpu = (cpus.len() == runs).then(|| cpus[runs / 2]);
    (walls[runs / 2], cpu)
}

fn cpu_ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "n/a".to_owned(), |d| format!("{:.3} ms", ms(d)))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn bench_dir() -> PathBuf {
    match std::env::var_os("AGENTLOG_BENCH_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/data"),
    }
}

fn main() {
    let dir = bench_dir();
    println!("conversation parse, median of repeated in-process runs (parse call only)");
    for name in ["parse-100", "parse-1000", "parse-10000"] {
        let path = dir.join(format!("{name}.json"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!("{name}: skipped ({} not found; set AGENTLOG_BENCH_DIR)", path.display());
            continue;
        };
        let Ok(Value::Array(messages)) = serde_json::from_str::<Value>(&text) else {
            println!("{name}: skipped (not a JSON array)");
            continue;
        };
        let runs = if messages.len() >= 10_000 { 31 } else { 101 };
        let (parse, parse_cpu) = median_both(runs, &mut || {
            std::hint::black_box(conversation::parse(&messages, None));
        });
        // The floor any owned output pays: two deep copies of every message (messageMap and
        // the flat list) and their drop.
        let (_, copy_cpu) = median_both(runs, &mut || {
            let a: Vec<Value> = messages.clone();
            let b: Vec<Value> = messages.clone();
            std::hint::black_box((a, b));
        });
        println!("{name}: baseline (clone every message twice + drop): cpu {}", cpu_ms(copy_cpu));
        let (with_json, with_json_cpu) = median_both(runs, &mut || {
            let r = conversation::parse(&messages, None);
            let mut buf = Vec::with_capacity(text.len() * 2);
            r.write_json(&mut buf).expect("write to memory");
            std::hint::black_box(buf);
        });
        println!(
            "{name}: {} messages: parse wall {:.3} ms, cpu {}; parse + write JSON wall {:.3} ms, cpu {} ({runs} runs)",
            messages.len(),
            ms(parse),
            cpu_ms(parse_cpu),
            ms(with_json),
            cpu_ms(with_json_cpu)
        );
        if name == "parse-10000" {
            // The conversations read model's CPU share of one appended message: its tree cache
            // folds the new row into the cached input (shared, `Arc`) and parses the topic
            // again into a result that shares that input (`parse_shared`); the row read is not
            // included.
            let mut appended = messages.clone();
            let last_id = messages.last().and_then(|m| m.get("id")).cloned().unwrap_or(Value::Null);
            appended.push(Value::from(json!({"id": "appended", "role": "user", "content": "one more",
                                 "parentId": serde_json::to_value(&last_id).unwrap_or_default(),
                                 "createdAt": 1_900_000_000_000u64})));
            let appended = Arc::new(appended);
            let (app, app_cpu) = median_both(runs, &mut || {
                std::hint::black_box(conversation::parse_shared(Arc::clone(&appended), None));
            });
            println!(
                "read model, one message appended to a {}-message topic (parse_shared): wall {:.3} ms, cpu {}",
                messages.len(),
                ms(app),
                cpu_ms(app_cpu)
            );
        }
    }

    let chain = deep_chain(100_000);
    let (d, d_cpu) = median_both(11, &mut || {
        std::hint::black_box(conversation::parse(&chain, None));
    });
    println!("deep chain: 100000 messages, depth 100000: parse wall {:.3} ms, cpu {} (11 runs)", ms(d), cpu_ms(d_cpu));

    let small = wide(10_000 / 6 + 1);
    let large = wide(100_000 / 6 + 1);
    let (ds, ds_cpu) = median_both(11, &mut || {
        std::hint::black_box(conversation::parse(&small, None));
    });
    let (dl, dl_cpu) = median_both(11, &mut || {
        std::hint::black_box(conversation::parse(&large, None));
    });
    let ratio = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", ms(b) / ms(a)),
        _ => "n/a".to_owned(),
    };
    println!(
        "scaling: wide {} messages wall {:.3} ms cpu {}, wide {} messages wall {:.3} ms cpu {}; 10x input ratio wall {:.2}, cpu {}",
        small.len(),
        ms(ds),
        cpu_ms(ds_cpu),
        large.len(),
        ms(dl),
        cpu_ms(dl_cpu),
        ms(dl) / ms(ds),
        ratio(ds_cpu, dl_cpu)
    );
    let chain10k = deep_chain(10_000);
    let (dc, dc_cpu) = median_both(11, &mut || {
        std::hint::black_box(conversation::parse(&chain10k, None));
    });
    println!(
        "scaling: chain 10000 wall {:.3} ms cpu {}, chain 100000 wall {:.3} ms cpu {}; 10x input ratio wall {:.2}, cpu {}",
        ms(dc),
        cpu_ms(dc_cpu),
        ms(d),
        cpu_ms(d_cpu),
        ms(d) / ms(dc),
        ratio(dc_cpu, d_cpu)
    );
}
