//! Write the parser's output for inputs, for byte-for-byte comparison of two parser versions
//! (build this example on both, run each into its own directory, `diff -r` the two):
//!
//! ```text
//! cargo run --release -p agentlog-conversation-flow --example conversation_dump -- \
//!   OUT_DIR [--random N] FILE...
//! ```
//!
//! For each input FILE (an array of messages or `{messages, messageGroups}`) and each of N
//! generated random message graphs (deterministic: the same N gives the same graphs), it writes
//! `OUT_DIR/<name>.out`: the `write_json` bytes, the `serde_json` serialisation of the result
//! and the diagnostics, one per line. Random graphs cover every field that reaches the output
//! or a decision: cycles, missing and self parents, duplicate ids, threads, tools with and
//! without `result_msg_id`, signals, councils, compare (metadata and `messageGroups`), tasks,
//! supervisors, `sub_agent` scope, usage/performance metadata, string timestamps.

use std::path::{Path, PathBuf};

use agentlog_conversation_flow as conversation;
use serde_json::{Map, Value, json};

/// xorshift64*: a small deterministic generator (no dependency, same stream everywhere).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn chance(&mut self, in_16: u64) -> bool {
        self.below(16) < in_16
    }
}

fn random_message(rng: &mut Rng, n: u64, i: u64) -> Value {
    const ROLES: [&str; 8] =
        ["user", "assistant", "assistant", "tool", "task", "taskCallback", "compressedGroup", "system"];
    let role = ROLES[rng.below(ROLES.len() as u64) as usize];
    // Ids mostly unique, sometimes repeated (duplicates), sometimes sharing a long prefix.
    let id = if rng.chance(1) {
        format!("m{}", rng.below(n))
    } else if rng.chance(2) {
        format!("msg_same_prefix_{i}")
    } else {
        format!("m{i}")
    };
    let created: Value = match rng.below(12) {
        0 => json!(format!("2026-01-01T00:00:{:02}.000Z", rng.below(60))),
        1 => Value::Null,
        2 => json!("not a date"),
        _ => json!(rng.below(8)),
    };
    let mut m =
        json!({"id": id, "role": role, "content": format!("c{i}"), "createdAt": created, "updatedAt": rng.below(9)});
    if rng.chance(13) {
        let p = rng.below(n + 3);
        let parent = if p < n {
            format!("m{p}")
        } else if p == n {
            format!("msg_same_prefix_{}", rng.below(n))
        } else {
            format!("nowhere{p}")
        };
        m["parentId"] = json!(parent);
    } else if rng.chance(1) {
        m["parentId"] = [json!(""), json!(0), json!(false)][rng.below(3) as usize].clone();
    }
    if rng.chance(2) {
        m["threadId"] = json!(format!("th{}", rng.below(3)));
    }
    if rng.chance(8) {
        m["agentId"] = json!(format!("agent{}", rng.below(3)));
    }
    if role == "assistant" && rng.chance(7) {
        let calls = (0..1 + rng.below(3))
            .map(|_| {
                let t = rng.below(n);
                let mut call = json!({"id": format!("call{}", rng.below(4)), "apiName": "x", "identifier": "p", "arguments": "{}"});
                if rng.chance(5) {
                    call["result_msg_id"] = json!(format!("m{t}"));
                }
                call
            })
            .collect();
        m["tools"] = Value::Array(calls);
    }
    if role == "tool" {
        m["tool_call_id"] = json!(format!("call{}", rng.below(4)));
        if rng.chance(4) {
            m["pluginState"] = json!({"s": i});
        }
    }
    if role == "compressedGroup" {
        if rng.chance(8) {
            m["lastMessageId"] = json!(format!("m{}", rng.below(n)));
        } else {
            m["compressedMessages"] = json!([{"id": format!("m{}", rng.below(n))}]);
        }
    }
    if rng.chance(3) {
        m["usage"] = json!({"totalTokens": rng.below(100)});
    }
    if rng.chance(2) {
        m["error"] = json!({"type": "x"});
    }
    let mut meta = Map::new();
    let flags = rng.next();
    let mut flag = |bit: u32, key: &str, v: Value| {
        if flags & (1 << bit) != 0 && flags & (1 << (bit + 20)) != 0 {
            meta.insert(key.into(), v);
        }
    };
    flag(0, "agentCouncil", json!(true));
    flag(1, "compare", json!(true));
    flag(2, "activeColumn", json!(true));
    flag(3, "isSupervisor", json!(true));
    flag(4, "orchestrationRole", json!("supervisor"));
    flag(5, "scope", json!("sub_agent"));
    flag(6, "subAgentId", json!(format!("sub{}", i % 2)));
    flag(7, "agentDispatch", json!({"visibility": "internal"}));
    flag(8, "totalTokens", json!(i));
    flag(9, "cost", json!(0.001 * i as f64));
    flag(10, "usage", json!({"totalInputTokens": i}));
    flag(11, "tps", json!(3.5));
    flag(12, "collapsed", json!(true));
    flag(13, "performance", json!({"ttft": i}));
    if flags & (1 << 14) != 0 {
        let kind = ["tool-stdout", "task-completion", "tool-callback"][(i % 3) as usize];
        meta.insert(
            "signal".into(),
            json!({"type": kind, "sequence": rng.below(4), "sourceToolCallId": "call1", "sourceToolName": "x"}),
        );
    }
    if flags & (1 << 15) != 0 {
        meta.insert("activeBranchIndex".into(), json!(rng.below(4)));
    }
    if !meta.is_empty() {
        m["metadata"] = Value::Object(meta);
    }
    if rng.chance(2) {
        m["groupId"] = json!(format!("g{}", rng.below(2)));
    }
    m
}

fn random_document(seed: u64) -> conversation::Value {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let n = 1 + rng.below(60);
    let messages: Vec<Value> = (0..n + rng.below(n)).map(|i| random_message(&mut rng, n, i)).collect();
    let groups = json!([{"id": "g0", "mode": "compare"}, {"id": "g1", "mode": "other", "parentMessageId": "m1"}, 7]);
    let doc = if seed.is_multiple_of(2) {
        json!({"messages": messages, "messageGroups": groups})
    } else {
        Value::Array(messages)
    };
    conversation::Value::from(doc)
}

fn dump(out: &Path, name: &str, doc: &conversation::Value) -> Result<(), Box<dyn std::error::Error>> {
    let mut bytes = Vec::new();
    match conversation::parse_document(doc) {
        Ok(result) => {
            result.write_json(&mut bytes)?;
            bytes.push(b'\n');
            bytes.extend(serde_json::to_vec(&result)?);
            bytes.push(b'\n');
            bytes.extend(format!("{:?}\n", result.diagnostics).into_bytes());
        }
        Err(e) => bytes.extend(format!("error: {e}\n").into_bytes()),
    }
    std::fs::write(out.join(format!("{name}.out")), bytes)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().ok_or("usage: conversation_dump OUT_DIR [--random N] FILE...")?);
    std::fs::create_dir_all(&out)?;
    let mut files = Vec::new();
    let mut random = 0u64;
    while let Some(a) = args.next() {
        if a == "--random" {
            random = args.next().and_then(|n| n.parse().ok()).ok_or("--random needs a count")?;
        } else {
            files.push(PathBuf::from(a));
        }
    }
    for f in &files {
        let doc: conversation::Value = serde_json::from_str(&std::fs::read_to_string(f)?)?;
        let name = f.to_string_lossy().replace('/', "_");
        dump(&out, &name, &doc)?;
    }
    for seed in 0..random {
        dump(&out, &format!("random-{seed}"), &random_document(seed))?;
    }
    println!("{} file(s), {random} random graph(s) written to {}", files.len(), out.display());
    Ok(())
}
