//! Parse one conversation file a few times, for instruction-count profiling of the parser:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='conversation_parse_once::run' \
//!   target/release/examples/conversation_parse_once conversation-flow/benches/data/parse-1000.json 1
//! ```
//!
//! Arguments: a JSON file (array of messages or `{messages, messageGroups}`) or `chain:N` /
//! `wide:N` (the bench's generated inputs), the number of parses (default 1), and `--json` to
//! also write the result (parse + `write_json`).

use agentlog_conversation_flow as conversation;
use conversation::Value;

#[path = "../benches/support/conversation_inputs.rs"]
mod conversation_inputs;
use conversation_inputs::{deep_chain, wide};

/// One parse and the drop of its result (the unit the bench times), as one symbol for
/// callgrind's `--toggle-collect`.
#[inline(never)]
fn run(doc: &Value, with_json: bool) -> Result<(usize, Vec<u8>), conversation::InputError> {
    let result = conversation::parse_document(doc)?;
    let mut buf = Vec::new();
    if with_json {
        let _ = result.write_json(&mut buf);
    }
    Ok((result.flat_list().len(), buf))
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
