//! The real `agentlog-replay conversation-parse` binary on a fixture, on the object form, and
//! on bad input.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn run(stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentlog-replay"))
        .arg("conversation-parse")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentlog-replay");
    child.stdin.take().expect("stdin").write_all(stdin).expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conversation-flow/tests/data/lobehub-conversation-flow/fixtures")
}

#[test]
fn parses_a_fixture_like_upstream() {
    let input = std::fs::read(fixture_dir().join("inputs/branch/nested.json")).expect("fixture");
    let out = run(&input);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let got: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let want: Value =
        serde_json::from_slice(&std::fs::read(fixture_dir().join("outputs/branch/nested.json")).expect("golden"))
            .expect("golden JSON");
    assert_eq!(got, want);
    assert!(out.stderr.is_empty());
}

#[test]
fn accepts_the_object_form_and_warns_about_diagnostics() {
    let doc = json!({
        "messages": [
            {"id": "u1", "role": "user", "content": "q", "createdAt": 1, "parentId": "gone"},
            {"id": "c1", "role": "assistant", "content": "a", "parentId": "u1", "groupId": "g", "createdAt": 2},
        ],
        "messageGroups": [{"id": "g", "mode": "compare"}],
    });
    let out = run(doc.to_string().as_bytes());
    assert!(out.status.success());
    let got: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(got["flatList"][1]["role"], "compare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("warning") && stderr.contains("missingParent"), "{stderr}");
}

#[test]
fn bad_json_exits_2_with_a_clear_error() {
    let out = run(b"[{\"id\": ");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not valid JSON"), "{stderr}");
}

#[test]
fn a_json_document_of_the_wrong_shape_exits_2() {
    let out = run(b"{\"msgs\": []}");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("messages"));
}
