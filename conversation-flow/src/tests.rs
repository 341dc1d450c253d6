//! Behaviours upstream covers with unit tests rather than fixtures, re-stated from the spec
//! (`shared/reference/lobehub-spec.md` §1) as given-these-messages, expect-this-output cases.

use serde_json::{Map, Value};

/// A test input in the parser's value type.
fn input(v: Value) -> crate::Value {
    crate::Value::from(v)
}

use super::{ContextNode, Diagnostic, ParseResult, parse, parse_document};

/// A parse result as plain JSON values, for indexing in assertions.
struct Parsed {
    context_tree: Vec<ContextNode>,
    flat_list: Vec<Value>,
    message_map: Map<String, Value>,
    diagnostics: Vec<Diagnostic>,
}

impl From<ParseResult<'_>> for Parsed {
    fn from(r: ParseResult<'_>) -> Parsed {
        let message_map = match r.message_map().to_value() {
            Value::Object(m) => m,
            other => panic!("messageMap is not an object: {other}"),
        };
        let flat_list = r.flat_list().to_values();
        Parsed { flat_list, message_map, context_tree: r.context_tree, diagnostics: r.diagnostics }
    }
}

fn run(messages: Value) -> Parsed {
    let messages = input(messages);
    parse(messages.as_array().expect("array"), None).into()
}

fn flat_ids(r: &Parsed) -> Vec<&str> {
    r.flat_list.iter().map(|m| m["id"].as_str().unwrap_or("")).collect()
}

fn tree_ids(r: &Parsed) -> Vec<&str> {
    r.context_tree
        .iter()
        .map(|n| match n {
            ContextNode::Message(m) => m.id.as_str(),
            ContextNode::AssistantGroup(g) => g.id.as_str(),
            ContextNode::Compare(c) => c.id.as_str(),
            ContextNode::Branch(b) => b.id.as_str(),
            ContextNode::AgentCouncil(c) => c.id.as_str(),
            ContextNode::Tasks(t) => t.id.as_str(),
            ContextNode::SignalCallbacks(s) => s.id.as_str(),
        })
        .collect()
}

fn tool(id: &str) -> Value {
    serde_json::json!({"id": id, "apiName": "run", "arguments": "{}", "identifier": "t", "type": "default"})
}

fn signal(seq: u64, kind: &str) -> Value {
    serde_json::json!({"signal": {"sequence": seq, "sourceToolCallId": "call-mon", "sourceToolName": "Monitor", "type": kind}})
}

/// Signal callbacks: toolless `tool-stdout` turns under a tool result form one block per
/// source tool, ordered by sequence, inside the group (flat) and at the group's end (tree).
#[test]
fn signal_callbacks_fold_into_the_group() {
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "go", "createdAt": 0},
        {"id": "a0", "role": "assistant", "agentId": "a", "content": "starting", "parentId": "u1",
         "tools": [tool("call-mon")], "createdAt": 1},
        {"id": "t1", "role": "tool", "content": "started", "parentId": "a0", "tool_call_id": "call-mon", "createdAt": 2},
        {"id": "cb-2", "role": "assistant", "agentId": "a", "content": "second", "parentId": "t1",
         "metadata": signal(2, "tool-stdout"), "model": "m", "createdAt": 3},
        {"id": "cb-1", "role": "assistant", "agentId": "a", "content": "first", "parentId": "t1",
         "metadata": signal(1, "tool-stdout"), "model": "m", "createdAt": 4},
        {"id": "done", "role": "assistant", "agentId": "a", "content": "summary", "parentId": "t1",
         "metadata": signal(0, "task-completion"), "createdAt": 5},
    ]));
    assert_eq!(flat_ids(&r), ["u1", "a0"]);
    let group = &r.flat_list[1];
    assert_eq!(group["role"], "assistantGroup");
    assert_eq!(
        group["signalCallbacks"],
        serde_json::json!([{
            "callbacks": [
                {"content": "first", "id": "cb-1", "model": "m", "sequence": 1},
                {"content": "second", "id": "cb-2", "model": "m", "sequence": 2},
            ],
            "sourceToolCallId": "call-mon",
            "sourceToolMessageId": "t1",
            "sourceToolName": "Monitor",
        }])
    );
    assert_eq!(group["taskCompletions"], serde_json::json!([{"content": "summary", "id": "done"}]));
    let tree = serde_json::to_value(&r.context_tree).unwrap();
    assert_eq!(
        tree[1],
        serde_json::json!({"id": "a0", "type": "assistantGroup", "children": [
            {"id": "a0", "type": "message", "tools": ["t1"]},
            {"id": "signalCallbacks-t1", "type": "signalCallbacks",
             "callbacks": [{"id": "cb-1", "type": "message"}, {"id": "cb-2", "type": "message"}],
             "sourceToolCallId": "call-mon", "sourceToolMessageId": "t1", "sourceToolName": "Monitor"},
            {"id": "done", "type": "message"},
        ]})
    );
}

/// A signal tag on an assistant that itself calls tools is ignored: it stays on the chain.
#[test]
fn signal_on_a_tool_using_assistant_is_ignored() {
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "go", "createdAt": 0},
        {"id": "a0", "role": "assistant", "content": "", "parentId": "u1", "tools": [tool("c1")], "createdAt": 1},
        {"id": "t1", "role": "tool", "content": "r", "parentId": "a0", "tool_call_id": "c1", "createdAt": 2},
        {"id": "a1", "role": "assistant", "content": "", "parentId": "t1", "tools": [tool("c2")],
         "metadata": signal(1, "tool-stdout"), "createdAt": 3},
        {"id": "t2", "role": "tool", "content": "r2", "parentId": "a1", "tool_call_id": "c2", "createdAt": 4},
    ]));
    let children: Vec<&str> =
        r.flat_list[1]["children"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
    assert_eq!(children, ["a0", "a1"]);
    assert!(r.flat_list[1].get("signalCallbacks").is_none());
}

/// `scope: 'sub_agent'` rewrites `agentId` before anything else, so a sub-agent's reply does
/// not merge into the caller's group, and the rewritten copy is what is returned.
#[test]
fn sub_agent_scope_rewrites_agent_id() {
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "go", "createdAt": 0},
        {"id": "a0", "role": "assistant", "agentId": "main", "content": "", "parentId": "u1",
         "tools": [tool("c1")], "createdAt": 1},
        {"id": "t1", "role": "tool", "content": "r", "parentId": "a0", "tool_call_id": "c1", "createdAt": 2},
        {"id": "s1", "role": "assistant", "agentId": "main", "content": "sub answer", "parentId": "t1",
         "metadata": {"scope": "sub_agent", "subAgentId": "helper"}, "createdAt": 3},
    ]));
    assert_eq!(flat_ids(&r), ["u1", "a0", "s1"]);
    assert_eq!(r.flat_list[2]["agentId"], "helper");
    assert_eq!(r.message_map["s1"]["agentId"], "helper");
    // Group-orchestration scopes are not rewritten.
    let r = run(serde_json::json!([
        {"id": "x", "role": "assistant", "agentId": "m", "metadata": {"scope": "group", "subAgentId": "h"}, "createdAt": 0},
    ]));
    assert_eq!(r.message_map["x"]["agentId"], "m");
}

/// An internal `agentDispatch` envelope is hidden; the reply under it still renders.
#[test]
fn internal_dispatch_envelope_is_hidden() {
    let r = run(serde_json::json!([
        {"id": "user-parent", "role": "user", "agentId": "p", "content": "@T do it", "createdAt": 0},
        {"id": "assistant-parent", "role": "assistant", "agentId": "p", "content": "", "parentId": "user-parent",
         "tools": [tool("call-agent-1")], "createdAt": 1},
        {"id": "tool-call-agent", "role": "tool", "content": "called", "parentId": "assistant-parent",
         "tool_call_id": "call-agent-1", "createdAt": 2},
        {"id": "envelope", "role": "user", "agentId": "t", "content": "@T do it", "parentId": "assistant-parent",
         "metadata": {"agentDispatch": {"kind": "callAgent", "visibility": "internal"}}, "createdAt": 3},
        {"id": "assistant-target", "role": "assistant", "agentId": "t", "content": "Target result",
         "parentId": "envelope", "createdAt": 4},
    ]));
    assert_eq!(flat_ids(&r), ["user-parent", "assistant-parent", "assistant-target"]);
    // An unmarked cross-agent user turn stays visible.
    let r = run(serde_json::json!([
        {"id": "ap", "role": "assistant", "agentId": "p", "content": "answer", "createdAt": 0},
        {"id": "ux", "role": "user", "agentId": "t", "content": "real turn", "parentId": "ap", "createdAt": 1},
    ]));
    assert_eq!(flat_ids(&r), ["ap", "ux"]);
}

/// A taskCallback that lost the branch race to a tool result is recovered at its own time;
/// its descendants are not.
#[test]
fn hidden_task_callback_is_recovered() {
    let r = run(serde_json::json!([
        {"id": "a1", "role": "assistant", "content": "", "tools": [{"apiName": "createTasks", "id": "call-1", "identifier": "lobe-task", "type": "builtin"}], "createdAt": 1},
        {"id": "cb1", "role": "taskCallback", "content": "## task completed", "parentId": "a1",
         "metadata": {"taskCallback": {"identifier": "T-1"}}, "createdAt": 2},
        {"id": "cb-child", "role": "assistant", "content": "inactive", "parentId": "cb1", "createdAt": 3},
        {"id": "tool1", "role": "tool", "content": "Started task", "parentId": "a1", "tool_call_id": "call-1", "createdAt": 4},
        {"id": "a2", "role": "assistant", "content": "I will wait for it.", "parentId": "tool1", "createdAt": 5},
    ]));
    // Inserted before the first row strictly newer than it: after the group (createdAt 1).
    assert_eq!(flat_ids(&r), ["a1", "cb1"]);
    assert_eq!(r.flat_list[1]["metadata"]["taskCallback"]["identifier"], "T-1");
    let group_steps: Vec<&str> =
        r.flat_list[0]["children"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
    assert_eq!(group_steps, ["a1", "a2"]);
    // A visible callback (leaf, or mid-chain) is not duplicated.
    let r = run(serde_json::json!([
        {"id": "a1", "role": "assistant", "content": "dispatched", "createdAt": 1},
        {"id": "cb1", "role": "taskCallback", "content": "done", "parentId": "a1", "createdAt": 2},
        {"id": "a2", "role": "assistant", "content": "next?", "parentId": "cb1", "createdAt": 3},
    ]));
    assert_eq!(flat_ids(&r), ["a1", "cb1", "a2"]);
}

/// `messageGroups` with `mode: 'compare'`: one compare row over every message of the group,
/// continuing under the active column; in the tree one compare node per visited member, with
/// the shared counter in its id (upstream quirk: the tree looks for the active column among the
/// member's own children).
#[test]
fn message_groups_compare_path() {
    let messages = serde_json::json!([
        {"id": "c1", "role": "assistant", "content": "one", "groupId": "grp", "createdAt": 1, "updatedAt": 1},
        {"id": "c2", "role": "assistant", "content": "two", "groupId": "grp",
         "metadata": {"activeColumn": true}, "createdAt": 2, "updatedAt": 5},
        {"id": "u2", "role": "user", "content": "more", "parentId": "c2", "createdAt": 3},
    ]);
    let doc = serde_json::json!({"messages": messages, "messageGroups": [{"id": "grp", "mode": "compare", "parentMessageId": "u1"}]});
    let r: Parsed = parse_document(&input(doc)).unwrap().into();
    assert_eq!(flat_ids(&r), ["grp", "u2"]);
    let row = &r.flat_list[0];
    assert_eq!(row["role"], "compare");
    assert_eq!(row["activeColumnId"], "c2");
    assert_eq!(row["extra"], serde_json::json!({"groupMode": "compare", "parentMessageId": "u1"}));
    assert_eq!(row["createdAt"], 1);
    assert_eq!(row["updatedAt"], 5);
    assert_eq!(row["columns"].as_array().unwrap().len(), 2);
    let tree = serde_json::to_value(&r.context_tree).unwrap();
    assert_eq!(tree[0]["id"], "compare-grp-0");
    assert_eq!(tree[0]["messageId"], "u1");
    assert_eq!(tree[0]["activeColumnId"], "c2");
    assert_eq!(tree[1]["id"], "compare-grp-1");
    assert_eq!(tree.as_array().unwrap().len(), 2);
    // Without messageGroups the groupId is inert.
    let messages = input(messages);
    let plain: Parsed = parse(messages.as_array().unwrap(), None).into();
    assert_eq!(flat_ids(&plain), ["c1", "c2", "u2"]);
}

fn council_base(members_parent: &str) -> Value {
    serde_json::json!([
        {"id": "u1", "role": "user", "content": "discuss", "createdAt": 0},
        {"id": "sup", "role": "assistant", "agentId": "supervisor", "content": "", "parentId": "u1",
         "metadata": {"isSupervisor": true}, "tools": [tool("bc")], "createdAt": 1},
        {"id": "bt", "role": "tool", "content": "broadcast", "parentId": "sup", "tool_call_id": "bc",
         "metadata": {"agentCouncil": true}, "createdAt": 2},
        {"id": "anchor-0", "role": "tool", "content": "", "parentId": "bt", "tool_call_id": "bc::m0", "createdAt": 3},
        {"id": "anchor-1", "role": "tool", "content": "", "parentId": "bt", "tool_call_id": "bc::m1", "createdAt": 3},
        {"id": "m1", "role": "assistant", "agentId": "backend", "content": "b", "parentId": members_parent, "createdAt": 4},
        {"id": "m2", "role": "assistant", "agentId": "devops", "content": "d", "parentId": members_parent, "createdAt": 5},
        {"id": "sum", "role": "assistant", "agentId": "supervisor", "content": "summary", "parentId": "m2",
         "metadata": {"isSupervisor": true}, "createdAt": 6},
    ])
}

/// New-shape council: members parented to the supervisor (siblings of the council tool) form
/// one in-bubble `council` block; barrier anchors never surface; the supervisor's summary under
/// a member follows the group.
#[test]
fn council_with_members_under_the_supervisor() {
    for parent in ["sup", "bt"] {
        let r = run(council_base(parent));
        assert_eq!(flat_ids(&r), ["u1", "sup", "sum"], "members under {parent}");
        assert_eq!(r.flat_list[1]["role"], "supervisor");
        let blocks = r.flat_list[1]["children"].as_array().unwrap();
        let council = blocks.iter().find(|b| b.get("council").is_some()).expect("a council block");
        assert_eq!(council["id"], "council-sup");
        let member_ids: Vec<&str> =
            council["council"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(member_ids, ["m1", "m2"]);
        assert_eq!(r.flat_list[2]["role"], "supervisor");
        assert!(r.flat_list.iter().all(|m| m["role"] != "agentCouncil"));
    }
}

/// Usage hoisting: `metadata.usage` becomes the top-level `usage` of a row lacking one; an
/// existing top-level usage is kept; a group sums its steps' nested usage.
#[test]
fn usage_is_hoisted_and_aggregated() {
    let usage = serde_json::json!({"inputCachedTokens": 16204, "totalInputTokens": 30174, "totalOutputTokens": 265, "totalTokens": 30439});
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "hi", "createdAt": 1},
        {"id": "a1", "role": "assistant", "content": "hello", "parentId": "u1", "metadata": {"usage": usage}, "createdAt": 2},
    ]));
    assert_eq!(r.flat_list[1]["usage"], usage);

    let top = serde_json::json!({"totalTokens": 999});
    let r = run(serde_json::json!([
        {"id": "a1", "role": "assistant", "content": "hi", "usage": top, "metadata": {"usage": {"totalTokens": 1}}, "createdAt": 1},
    ]));
    assert_eq!(r.flat_list[0]["usage"], top);

    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "q", "createdAt": 1},
        {"id": "a1", "role": "assistant", "content": "", "parentId": "u1", "tools": [tool("call-1")],
         "metadata": {"usage": {"inputCachedTokens": 100, "totalInputTokens": 200, "totalOutputTokens": 50, "totalTokens": 250}}, "createdAt": 2},
        {"id": "t1", "role": "tool", "content": "ok", "parentId": "a1", "tool_call_id": "call-1", "createdAt": 3},
        {"id": "a2", "role": "assistant", "content": "done", "parentId": "t1",
         "metadata": {"usage": {"inputCachedTokens": 300, "totalInputTokens": 400, "totalOutputTokens": 80, "totalTokens": 480}}, "createdAt": 4},
    ]));
    assert_eq!(
        r.flat_list[1]["usage"],
        serde_json::json!({"inputCachedTokens": 400, "totalInputTokens": 600, "totalOutputTokens": 130, "totalTokens": 730})
    );
    // messageMap keeps only usage keys on tool-using assistants.
    assert_eq!(r.message_map["a1"]["metadata"].as_object().unwrap().keys().collect::<Vec<_>>(), ["usage"]);
}

/// ISO-string `createdAt` orders like numbers (upstream's later `toTime`).
#[test]
fn string_timestamps_order_chronologically() {
    let iso = |s: u32| format!("2026-10-10T12:00:{s:02}.000Z");
    let r = run(serde_json::json!([
        {"id": "root", "role": "user", "content": "go", "createdAt": iso(0)},
        {"id": "a1", "role": "assistant", "content": "fan out", "parentId": "root",
         "tools": [tool("tool-1"), tool("tool-2")], "createdAt": iso(5)},
        {"id": "tool-1", "role": "tool", "parentId": "a1", "tool_call_id": "tool-1", "content": "", "createdAt": iso(6)},
        {"id": "tool-2", "role": "tool", "parentId": "a1", "tool_call_id": "tool-2", "content": "", "createdAt": iso(7)},
        {"id": "cont-new", "role": "assistant", "agentId": "agent-a", "content": "new", "parentId": "tool-1", "createdAt": iso(15)},
        {"id": "cont-old", "role": "assistant", "agentId": "agent-b", "content": "old", "parentId": "tool-2", "createdAt": iso(10)},
    ]));
    let ids = flat_ids(&r);
    let pos = |id: &str| ids.iter().position(|x| *x == id).unwrap();
    assert!(pos("cont-old") < pos("cont-new"), "{ids:?}");
}

/// A toolless narration answering the user folds into the tool chain it leads to, as do
/// toolless progress steps between tool steps.
#[test]
fn toolless_head_and_prose_steps_fold_into_one_group() {
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "check", "createdAt": 0},
        {"id": "a-head", "role": "assistant", "content": "let me look", "parentId": "u1", "createdAt": 1},
        {"id": "a-tool", "role": "assistant", "content": "reading", "parentId": "a-head", "tools": [tool("t1")], "createdAt": 2},
        {"id": "t1", "role": "tool", "content": "data", "parentId": "a-tool", "tool_call_id": "t1", "createdAt": 3},
        {"id": "a-prose", "role": "assistant", "content": "hmm", "parentId": "a-tool", "createdAt": 4},
        {"id": "a-tool2", "role": "assistant", "content": "", "parentId": "a-prose", "tools": [tool("t2")], "createdAt": 5},
        {"id": "t2", "role": "tool", "content": "more", "parentId": "a-tool2", "tool_call_id": "t2", "createdAt": 6},
        {"id": "a-final", "role": "assistant", "content": "green", "parentId": "t2", "createdAt": 7},
    ]));
    assert_eq!(flat_ids(&r), ["u1", "a-head"]);
    let steps: Vec<&str> =
        r.flat_list[1]["children"].as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
    assert_eq!(steps, ["a-head", "a-tool", "a-prose", "a-tool2", "a-final"]);
    assert_eq!(tree_ids(&r), ["u1", "a-head"]);
}

/// Continuations under sibling tool results interleave by creation time.
#[test]
fn sibling_tool_continuations_interleave_by_time() {
    let r = run(serde_json::json!([
        {"id": "u0", "role": "user", "content": "root", "createdAt": 0},
        {"id": "a0", "role": "assistant", "content": "", "parentId": "u0",
         "tools": [{"id": "tc-a", "result_msg_id": "tool-a"}, {"id": "tc-b", "result_msg_id": "tool-b"}], "createdAt": 1},
        {"id": "tool-a", "role": "tool", "content": "", "parentId": "a0", "tool_call_id": "tc-a", "createdAt": 2},
        {"id": "tool-b", "role": "tool", "content": "", "parentId": "a0", "tool_call_id": "tc-b", "createdAt": 3},
        {"id": "a-first", "role": "user", "content": "1", "parentId": "tool-a", "createdAt": 4},
        {"id": "b-middle", "role": "user", "content": "2", "parentId": "tool-b", "createdAt": 5},
        {"id": "a-last", "role": "user", "content": "3", "parentId": "tool-a", "createdAt": 6},
    ]));
    assert_eq!(flat_ids(&r), ["u0", "a0", "a-first", "b-middle", "a-last"]);
}

/// An explicit `activeBranchIndex` equal to the branch count hides every continuation.
#[test]
fn optimistic_branch_index_hides_continuations() {
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "q", "metadata": {"activeBranchIndex": 2}, "createdAt": 0},
        {"id": "b1", "role": "assistant", "content": "1", "parentId": "u1", "createdAt": 1},
        {"id": "b2", "role": "assistant", "content": "2", "parentId": "u1", "createdAt": 2},
    ]));
    assert_eq!(flat_ids(&r), ["u1"]);
    let tree = serde_json::to_value(&r.context_tree).unwrap();
    assert_eq!(tree[1]["activeBranchIndex"], 2);
}

/// Malformed graphs come back with diagnostics, never a hang or a silent drop.
#[test]
fn malformed_graphs_are_repaired_and_reported() {
    let r = run(serde_json::json!([
        {"id": "a", "role": "user", "content": "", "parentId": "b", "createdAt": 0},
        {"id": "b", "role": "assistant", "content": "", "parentId": "a", "createdAt": 1},
        {"id": "s", "role": "user", "content": "", "parentId": "s", "createdAt": 2},
        {"id": "o", "role": "user", "content": "", "parentId": "nowhere", "createdAt": 3},
        {"id": "d", "role": "user", "content": "first", "createdAt": 4},
        {"id": "d", "role": "user", "content": "second", "createdAt": 5},
        {"id": "t", "role": "user", "content": "", "threadId": "th", "parentId": "gone", "createdAt": 6},
        42,
    ]));
    let d = &r.diagnostics;
    assert!(d.contains(&Diagnostic::ParentCycle { ids: vec!["b".into(), "a".into()], broken_at: "a".into() }));
    assert!(d.contains(&Diagnostic::SelfParent { id: "s".into() }));
    assert!(d.contains(&Diagnostic::MissingParent { id: "o".into(), parent_id: input(serde_json::json!("nowhere")) }));
    assert!(d.contains(&Diagnostic::DuplicateId { id: "d".into(), dropped_index: 4, kept_index: 5 }));
    assert!(d.contains(&Diagnostic::OrphanThread { thread_id: "th".into(), root_ids: vec!["t".into()] }));
    assert!(d.iter().any(|x| matches!(x, Diagnostic::InvalidMessage { index: 7, .. })));
    assert_eq!(r.message_map["d"]["content"], "second");
    // The cut cycle and the self-parent are roots now, so they render.
    let ids = flat_ids(&r);
    for id in ["a", "b", "s", "o", "d", "t"] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
}

/// Bad document shapes are typed errors.
#[test]
fn document_shapes() {
    assert!(parse_document(&input(serde_json::json!([]))).is_ok());
    assert!(parse_document(&input(serde_json::json!({"messages": []}))).is_ok());
    assert!(parse_document(&input(serde_json::json!({"messages": [], "messageGroups": 3}))).is_err());
    assert!(parse_document(&input(serde_json::json!({"nope": 1}))).is_err());
    assert!(parse_document(&input(serde_json::json!("x"))).is_err());
}

/// Thread messages, as at the pinned upstream (spec §1.2 phase 2 and 3b, §1.10): the id tree
/// drops every message with a `threadId`, so the context tree never shows one; the flat list is
/// built from `childrenMap`, which keeps them, so a thread reply under a main-line message is a
/// branch candidate there (never the active one through the latest-user rule, which skips
/// thread messages) and, as the only child, renders on the path. Later upstream
/// (`mainFlowOnly`, §7) drops them from mixed input; that is not ported.
#[test]
fn thread_messages_stay_out_of_the_tree_but_not_the_flat_list() {
    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "", "createdAt": 1},
        {"id": "a1", "role": "assistant", "content": "", "parentId": "u1", "createdAt": 2},
        {"id": "u2", "role": "user", "content": "", "parentId": "a1", "createdAt": 3},
        {"id": "tm", "role": "user", "content": "", "parentId": "a1", "threadId": "th-1", "createdAt": 4},
    ]));
    assert_eq!(tree_ids(&r), ["u1", "a1", "u2"]);
    assert_eq!(flat_ids(&r), ["u1", "a1", "u2"]);
    assert_eq!(r.flat_list[2]["branch"], serde_json::json!({"activeBranchIndex": 0, "count": 2}));
    assert!(r.message_map.contains_key("tm"));

    let r = run(serde_json::json!([
        {"id": "u1", "role": "user", "content": "", "createdAt": 1},
        {"id": "a1", "role": "assistant", "content": "", "parentId": "u1", "createdAt": 2},
        {"id": "tm", "role": "user", "content": "", "parentId": "a1", "threadId": "th-1", "createdAt": 3},
    ]));
    assert_eq!(tree_ids(&r), ["u1", "a1"]);
    assert_eq!(flat_ids(&r), ["u1", "a1", "tm"]);
}

/// messageMap is written as `JSON.stringify` writes upstream's object: array-index ids first in
/// numeric order, every other id where it first occurs (a repeated id keeps its first place and
/// its last message). Expected order from Node for the same input.
#[test]
fn message_map_is_in_upstream_key_order() {
    let ids = ["conversation-message-2", "10", "b", "conversation-message-2", "9", "a", "01"];
    let messages: Vec<crate::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| input(serde_json::json!({"id": id, "role": "user", "content": i.to_string(), "createdAt": i})))
        .collect();
    let r = parse(&messages, None);
    let got: Vec<&str> = r.message_map().iter().map(|(id, _)| id).collect();
    assert_eq!(got, ["9", "10", "conversation-message-2", "b", "a", "01"]);
    let last = r.message_map().get("conversation-message-2").map(|e| e.to_value()["content"].clone());
    assert_eq!(last, Some(serde_json::json!("3")));
    assert!(!r.message_map().contains_key("conversation-message"));
}
