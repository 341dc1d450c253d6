//! Differential fixtures (`data/differential/README.md`): upstream `parse()` outputs on
//! generated LobeHub-shaped graphs and on the classes of difference found by comparing with
//! it — duplicate ids, derived usage/performance numbers, numbers JavaScript prints specially.

use std::path::PathBuf;

use agentlog_conversation_flow as conversation;
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/differential")
}

fn read(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Where two texts first differ, with some context from each.
fn first_difference(want: &str, got: &str) -> String {
    let at = want.bytes().zip(got.bytes()).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let from = at.saturating_sub(80);
    let snip = |s: &str| s.get(from..(at + 80).min(s.len())).unwrap_or("").to_owned();
    format!("at byte {at}:\n  upstream: {}\n  ours:     {}", snip(want), snip(got))
}

#[test]
fn outputs_are_byte_identical_to_upstream_on_every_differential_fixture() {
    let mut names: Vec<String> = std::fs::read_dir(dir().join("inputs"))
        .expect("inputs dir")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 19, "fixtures missing: {names:?}");
    for name in &names {
        let text = std::fs::read_to_string(dir().join("inputs").join(name)).expect("input");
        let input = conversation::value::from_str(&text).expect("input is JSON");
        let want = std::fs::read_to_string(dir().join("outputs").join(name)).expect("output");
        let result = conversation::parse_document(&input).expect("input is a document");
        let mut bytes = Vec::new();
        result.write_json(&mut bytes).expect("writing to memory");
        let got = String::from_utf8(bytes).expect("utf-8");
        assert!(got == want, "{name}: output differs from upstream {}", first_difference(&want, &got));
    }
}

#[test]
fn a_duplicated_message_is_a_branch_with_active_index_zero() {
    let input: conversation::Value = serde_json::from_value(read(&dir().join("inputs/dup-exact.json"))).expect("JSON");
    let result = conversation::parse_document(&input).expect("array");
    let tree = serde_json::to_value(&result.context_tree).expect("tree");
    assert_eq!(tree[1]["type"], "branch");
    assert_eq!(tree[1]["activeBranchIndex"], 0);
    assert_eq!(tree[1]["branches"].as_array().map(Vec::len), Some(2));
}
