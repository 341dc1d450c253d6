//! Parse one conversation file a few times, for instruction-count profiling of the parser:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='conversation_parse_once::run' \
//!   target/release/examples/conversation_parse_once ../shared/bench/conversation/parse-1000.json 1
//! ```
//!
//! Arguments: a JSON file (array of messages or `{messages, messageGroups}`) or `chain:N` /
//! `wide:N` (the bench's generated inputs), the number of parses (default 1), and `--json` to
//! also write the result (parse + `write_json`).

use agentlog_projections::conversation;
use serde_json::{Value, json};

/// A linear user/assistant chain (as the bench's `deep_chain`).
fn deep_chain(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let t = 1_700_000_000_000u64 + i as u64;
            let mut m = json!({"id": format!("m{i}"), "role": role, "content": format!("turn {i}"),
                               "createdAt": t, "updatedAt": t});
            if i > 0 {
                m["parentId"] = json!(format!("m{}", i - 1));
            }
            m
        })
        .collect()
}

/// Short conversations side by side (as the bench's `wide`).
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

/// One parse and the drop of its result (the unit the bench times), as one symbol for
/// callgrind's `--toggle-collect`.
#[inline(never)]
fn run(doc: &Value, with_json: bool) -> Result<(usize, Vec<u8>), conversation::InputError> {
    let result = conversation::parse_document(doc)?;
    let mut buf = Vec::new();
    if with_json {
        let _ = result.write_json(&mut buf);
    }
    Ok((result.flat_list.len(), buf))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: conversation_parse_once FILE [RUNS] [--json]")?;
    let runs: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let with_json = args.iter().any(|a| a == "--json");
    let doc: Value = if let Some(n) = path.strip_prefix("chain:") {
        Value::Array(deep_chain(n.parse()?))
    } else if let Some(n) = path.strip_prefix("wide:") {
        Value::Array(wide(n.parse::<usize>()? / 6 + 1))
    } else {
        serde_json::from_str(&std::fs::read_to_string(path)?)?
    };
    let mut rows = 0;
    let mut bytes = 0;
    for _ in 0..runs {
        let result = run(&doc, with_json)?;
        rows = result.0;
        bytes = result.1.len();
        std::hint::black_box(&result);
    }
    println!("{runs} parse(s), {rows} flat-list rows, {bytes} bytes of JSON");
    Ok(())
}
