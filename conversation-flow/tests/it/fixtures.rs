//! Conformance: upstream LobeHub's conversation-flow golden fixtures (pinned set with the
//! `extra-a4cc9bbe` overlay, see `data/lobehub-conversation-flow/README.md`), one test per pair,
//! compared as JSON values (object key order irrelevant, array order significant).

use std::path::PathBuf;

use agentlog_conversation_flow::{self as conversation, ParseResult};
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/lobehub-conversation-flow")
}

/// The overlay file when it exists, else the pinned one.
fn fixture(rel: &str) -> Value {
    let dir = data_dir();
    let overlay = dir.join("extra-a4cc9bbe/fixtures").join(rel);
    let path = if overlay.exists() { overlay } else { dir.join("fixtures").join(rel) };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

fn parse_fixture(rel: &str) -> ParseResult<'static> {
    let input = fixture(&format!("inputs/{rel}"));
    let messages: Vec<conversation::Value> =
        input.as_array().expect("fixture input is an array").iter().cloned().map(conversation::Value::from).collect();
    conversation::parse(&messages, None).into_owned()
}

/// Numbers equal up to float parsing: serde_json's default float reader is not correctly
/// rounded for 17-digit decimals (upstream writes sums like `0.0018839999999999998`), so a
/// golden value may be read one ulp off the double upstream computed.
fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    if a == b {
        return true;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= f64::EPSILON * 4.0 * x.abs().max(y.abs()),
        _ => false,
    }
}

/// The first place two JSON values differ, as a path.
fn first_difference(path: &str, got: &Value, want: &Value) -> Option<String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                match g.get(k) {
                    None => return Some(format!("{path}.{k}: missing, want {wv}")),
                    Some(gv) => {
                        if let Some(d) = first_difference(&format!("{path}.{k}"), gv, wv) {
                            return Some(d);
                        }
                    }
                }
            }
            g.keys().find(|k| !w.contains_key(*k)).map(|k| format!("{path}.{k}: unexpected key, got {}", g[k]))
        }
        (Value::Array(g), Value::Array(w)) => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), gv, wv) {
                    return Some(d);
                }
            }
            (g.len() != w.len()).then(|| format!("{path}: length {} , want {}", g.len(), w.len()))
        }
        (Value::Number(g), Value::Number(w)) => (!same_number(g, w)).then(|| format!("{path}: got {got}, want {want}")),
        _ => (got != want).then(|| format!("{path}: got {got}, want {want}")),
    }
}

fn assert_pair(rel: &str) {
    let result = parse_fixture(rel);
    let got = serde_json::to_value(&result).expect("serialises");
    let want = fixture(&format!("outputs/{rel}"));
    if let Some(diff) = first_difference("$", &got, &want) {
        panic!("{rel}: output differs from upstream at {diff}");
    }
    // The iterative writer must produce the same document as serde.
    let mut buf = Vec::new();
    result.write_json(&mut buf).expect("writes");
    let written: Value = serde_json::from_slice(&buf).expect("valid JSON");
    if let Some(diff) = first_difference("$", &written, &got) {
        panic!("{rel}: write_json differs from serde output at {diff}");
    }
}

macro_rules! pairs {
    ($($name:ident => $rel:literal,)*) => {
        $(
            #[test]
            fn $name() {
                assert_pair($rel);
            }
        )*

        /// Every pair is listed above (27 with the overlay).
        #[test]
        fn all_pairs_listed() {
            let listed = [$($rel),*];
            assert_eq!(listed.len(), 27);
        }
    };
}

pairs! {
    linear_conversation => "linear-conversation.json",
    assistant_chain_with_followup => "assistant-chain-with-followup.json",
    assistant_group_assistant_with_tools => "assistantGroup/assistant-with-tools.json",
    assistant_group_tools_with_branches => "assistantGroup/tools-with-branches.json",
    branch_conversation => "branch/conversation.json",
    branch_active_index_1 => "branch/active-index-1.json",
    branch_assistant_branch => "branch/assistant-branch.json",
    branch_assistant_user_branch => "branch/assistant-user-branch.json",
    branch_nested => "branch/nested.json",
    branch_multi_assistant_group => "branch/multi-assistant-group.json",
    branch_assistant_group_branches => "branch/assistant-group-branches.json",
    compare_simple => "compare/simple.json",
    compare_with_tools => "compare/with-tools.json",
    agent_council_simple => "agentCouncil/simple.json",
    agent_council_with_supervisor_reply => "agentCouncil/with-supervisor-reply.json",
    agent_group_speak_different_agent => "agentGroup/speak-different-agent.json",
    agent_group_supervisor_content_only => "agentGroup/supervisor-content-only.json",
    agent_group_supervisor_after_multi_tasks => "agentGroup/supervisor-after-multi-tasks.json",
    tasks_simple => "tasks/simple.json",
    tasks_with_summary => "tasks/with-summary.json",
    tasks_multi_tasks_with_summary => "tasks/multi-tasks-with-summary.json",
    tasks_single_task_with_tool_chain => "tasks/single-task-with-tool-chain.json",
    tasks_with_assistant_group => "tasks/with-assistant-group.json",
    compression_simple_compression => "compression/simple-compression.json",
    compression_multiple_compressions => "compression/multiple-compressions.json",
    compression_parallel_group => "compression/parallel-group.json",
    compression_mixed_groups => "compression/mixed-groups.json",
}

fn rows(result: &ParseResult<'_>) -> Vec<Value> {
    result.flat_list().to_values()
}

fn roles(result: &ParseResult<'_>) -> Vec<String> {
    rows(result).iter().map(|m| m["role"].as_str().unwrap_or("").to_owned()).collect()
}

fn ids(result: &ParseResult<'_>) -> Vec<String> {
    rows(result).iter().map(|m| m["id"].as_str().unwrap_or("").to_owned()).collect()
}

/// Every message has a parent outside the input (a thread view): the flat list is the four
/// thread messages in order, the context tree is empty (all are thread messages).
#[test]
fn edge_orphan_thread_root() {
    let input = fixture("inputs/edgeCases/orphan-thread-root.json");
    let result = parse_fixture("edgeCases/orphan-thread-root.json");
    let input_ids: Vec<&str> = input.as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(input_ids.len(), 4);
    assert_eq!(ids(&result), input_ids);
    assert!(result.context_tree.is_empty());
}

/// A toolless task-completion turn under a tool result folds into the group's
/// `taskCompletions`: flat list = [user, assistantGroup].
#[test]
fn edge_task_completion_signal() {
    let result = parse_fixture("edgeCases/task-completion-signal.json");
    assert_eq!(roles(&result), ["user", "assistantGroup"]);
    let group = &rows(&result)[1];
    let completions = group["taskCompletions"].as_array().expect("taskCompletions");
    assert_eq!(completions.len(), 1);
}

/// Two tasks plus a tool-using assistant sibling under the same tool.
#[test]
fn edge_tasks_with_assistant_group_sibling() {
    let result = parse_fixture("edgeCases/tasks-with-assistant-group-sibling.json");
    assert_eq!(roles(&result), ["user", "assistantGroup", "tasks", "assistantGroup"]);
}

/// A supervisor summary parented to a task renders as a `supervisor` row with empty content
/// and one child block.
#[test]
fn edge_task_child_supervisor_summary() {
    let result = parse_fixture("edgeCases/task-child-supervisor-summary.json");
    let rows = rows(&result);
    let summary = rows.iter().rev().find(|m| m["role"] == "supervisor").expect("a supervisor row");
    assert_eq!(summary["content"], "");
    assert_eq!(summary["children"].as_array().map(Vec::len), Some(1));
}

/// `activeBranchIndex` equal to the number of children (a branch being created): the flat
/// list stops at the assistant, and no row carries a branch marker.
#[test]
fn edge_optimistic_assistant_branch() {
    let input = fixture("inputs/edgeCases/optimistic-assistant-branch.json");
    let result = parse_fixture("edgeCases/optimistic-assistant-branch.json");
    let owner = input
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metadata"]["activeBranchIndex"].is_number())
        .expect("a message with activeBranchIndex");
    let rows = rows(&result);
    assert_eq!(rows.last().map(|m| &m["id"]), Some(&owner["id"]), "the flat list stops at the branch owner");
    assert!(rows.iter().all(|m| m.get("branch").is_none()));
}
