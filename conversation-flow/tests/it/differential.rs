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

/// Every number token outside strings in compact JSON.
fn number_tokens(json: &str) -> Vec<&str> {
    let b = json.as_bytes();
    let (mut i, mut out, mut in_str) = (0, Vec::new(), false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                i += 1;
            }
            out.push(&json[start..i]);
            continue;
        }
        i += 1;
    }
    out
}

/// `String(x)` in JavaScript for the numbers these fixtures contain, computed independently of
/// the crate: shortest round-trip digits placed by ECMAScript's Number::toString rules.
fn js_string(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let sci = format!("{:e}", x.abs());
    let (m, e) = sci.split_once('e').unwrap();
    let digits: String = m.chars().filter(char::is_ascii_digit).collect();
    let (k, n) = (digits.len() as i32, e.parse::<i32>().unwrap() + 1);
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let rest = if k > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        format!("{}{rest}e{}{}", &digits[..1], if n > 0 { "+" } else { "-" }, (n - 1).abs())
    };
    format!("{sign}{body}")
}

#[test]
fn outputs_match_upstream_on_every_differential_fixture() {
    let mut names: Vec<String> = std::fs::read_dir(dir().join("inputs"))
        .expect("inputs dir")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 19, "fixtures missing: {names:?}");
    for name in &names {
        let input = read(&dir().join("inputs").join(name));
        let want = read(&dir().join("outputs").join(name));
        let result = conversation::parse(input.as_array().expect("input is an array"), None);
        let mut bytes = Vec::new();
        result.write_json(&mut bytes).expect("writing to memory");
        let text = String::from_utf8(bytes).expect("utf-8");
        let got: Value = serde_json::from_str(&text).expect("our output is JSON");
        assert!(got == want, "{name}: output differs from upstream");
        for token in number_tokens(&text) {
            let x: f64 = token.parse().expect("a number token");
            assert_eq!(token, js_string(x), "{name}: a number not written as JavaScript writes it");
        }
    }
}

#[test]
fn a_duplicated_message_is_a_branch_with_active_index_zero() {
    let input = read(&dir().join("inputs/dup-exact.json"));
    let result = conversation::parse(input.as_array().expect("array"), None);
    let tree = serde_json::to_value(&result.context_tree).expect("tree");
    assert_eq!(tree[1]["type"], "branch");
    assert_eq!(tree[1]["activeBranchIndex"], 0);
    assert_eq!(tree[1]["branches"].as_array().map(Vec::len), Some(2));
}
