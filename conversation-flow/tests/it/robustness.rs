//! The parser is total: deep chains, deep branch nesting and random message graphs (cycles,
//! self-parents, missing parents, duplicate ids, dangling threads, random roles and metadata)
//! parse without panicking or hanging, and every input id is accounted for.

use std::collections::HashSet;

use agentlog_conversation_flow::{self as conversation, Diagnostic, ParseResult};
use proptest::prelude::*;
use serde_json::{Value, json};

/// `messages` in the parser's value type.
fn input(messages: &[Value]) -> Vec<conversation::Value> {
    messages.iter().cloned().map(conversation::Value::from).collect()
}

fn chain(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let mut m = json!({"id": format!("m{i}"), "role": role, "content": "x", "createdAt": i});
            if i > 0 {
                m["parentId"] = json!(format!("m{}", i - 1));
            }
            m
        })
        .collect()
}

#[test]
fn a_100000_deep_chain_parses() {
    let messages = chain(100_000);
    let input = input(&messages);
    let r = conversation::parse(&input, None);
    assert_eq!(r.flat_list().len(), 100_000);
    assert_eq!(r.context_tree.len(), 100_000);
    assert_eq!(r.flat_list().get(99_999).and_then(|row| row.id()), Some("m99999"));
    let mut out = Vec::new();
    r.write_json(&mut out).expect("writes");
    assert!(out.len() > 1_000_000);
}

#[test]
fn a_100000_deep_tool_chain_is_one_group() {
    let mut messages = vec![json!({"id": "u", "role": "user", "content": "go", "createdAt": 0})];
    let mut parent = "u".to_owned();
    for i in 0..50_000 {
        let a = format!("a{i}");
        let t = format!("t{i}");
        messages.push(json!({"id": a, "role": "assistant", "content": "", "parentId": parent,
            "tools": [{"id": format!("c{i}"), "apiName": "x", "identifier": "p", "arguments": "{}", "type": "default"}],
            "createdAt": 2 * i + 1}));
        messages.push(json!({"id": t, "role": "tool", "content": "r", "parentId": a,
            "tool_call_id": format!("c{i}"), "createdAt": 2 * i + 2}));
        parent = t;
    }
    let input = input(&messages);
    let r = conversation::parse(&input, None);
    assert_eq!(r.flat_list().len(), 2);
    let group = r.flat_list().get(1).map(|row| row.to_value()).expect("a group row");
    assert_eq!(group["children"].as_array().map(Vec::len), Some(50_000));
}

/// Every level has two answers, the first continuing: branches nest 20,000 deep.
#[test]
fn deeply_nested_branches_parse_write_and_drop() {
    let mut messages = Vec::new();
    let mut parent: Option<String> = None;
    for i in 0..20_000 {
        let u = format!("u{i}");
        let mut m = json!({"id": u, "role": "user", "content": "q", "createdAt": 3 * i});
        if let Some(p) = &parent {
            m["parentId"] = json!(p);
        }
        messages.push(m);
        messages.push(
            json!({"id": format!("a{i}"), "role": "assistant", "content": "1", "parentId": u, "createdAt": 3 * i + 1}),
        );
        messages.push(
            json!({"id": format!("b{i}"), "role": "assistant", "content": "2", "parentId": u, "createdAt": 3 * i + 2}),
        );
        parent = Some(format!("a{i}"));
    }
    let input = input(&messages);
    let r = conversation::parse(&input, None);
    assert_eq!(r.flat_list().len(), 40_000);
    let mut out = Vec::new();
    r.write_json(&mut out).expect("writes");
    assert!(out.ends_with(b"}"));
    drop(r);
}

/// Ids that appear anywhere in the output rows (at any depth).
fn ids_in(v: &Value, into: &mut HashSet<String>) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(id)) = m.get("id") {
                    into.insert(id.clone());
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
}

fn check_invariants(messages: &[Value], r: &ParseResult) {
    let reported: HashSet<&str> = r.diagnostics.iter().filter_map(Diagnostic::message_id).collect();
    let cycle_members: HashSet<&str> = r
        .diagnostics
        .iter()
        .flat_map(|d| match d {
            Diagnostic::ParentCycle { ids, .. } => ids.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        })
        .collect();
    let ids: HashSet<&str> = messages.iter().filter_map(|m| m["id"].as_str()).collect();
    // Children of a compressed group's hidden last message are re-parented, not orphaned.
    let hidden_last: HashSet<&str> = messages
        .iter()
        .filter(|m| m["role"] == "compressedGroup")
        .filter_map(|m| m["lastMessageId"].as_str())
        .collect();
    let mut shown = HashSet::new();
    for row in r.flat_list().to_values() {
        ids_in(&row, &mut shown);
    }
    for m in messages {
        let Some(id) = m["id"].as_str() else { continue };
        // Every message is kept in messageMap (duplicates: the last copy, reported).
        assert!(r.message_map().contains_key(id), "{id} missing from messageMap");
        let parent = m.get("parentId").and_then(Value::as_str);
        if parent == Some(id) {
            assert!(reported.contains(id), "self-parent {id} not reported");
        } else if let Some(p) = parent
            && !ids.contains(p)
            && !hidden_last.contains(p)
        {
            assert!(reported.contains(id), "missing parent of {id} not reported");
        }
    }
    // Cycle members are reachable after the cut, so they are no longer invisible by accident.
    for id in cycle_members {
        assert!(r.message_map().contains_key(id));
    }
    let _ = shown;
    let mut out = Vec::new();
    r.write_json(&mut out).expect("writes");
    let _: Value = serde_json::from_slice(&out).expect("valid JSON");
}

fn arb_message(n: usize) -> impl Strategy<Value = Value> {
    let roles =
        prop::sample::select(vec!["user", "assistant", "tool", "task", "taskCallback", "compressedGroup", "system"]);
    (
        0..n,
        roles,
        prop::option::of(0..n + 3),
        prop::option::of(0..3usize),
        prop::option::of(0..3usize),
        0..6u64,
        prop::collection::vec((0..n, any::<bool>()), 0..3),
        0..16u8,
        prop::option::of(0..4i64),
    )
        .prop_map(move |(id, role, parent, thread, agent, created, tools, flags, abi)| {
            let mut m = json!({
                "id": format!("m{id}"),
                "role": role,
                "content": format!("c{id}"),
                "createdAt": created,
                "updatedAt": created,
            });
            if let Some(p) = parent {
                // Indices past n point nowhere.
                m["parentId"] = json!(format!("m{p}"));
            }
            if let Some(t) = thread {
                m["threadId"] = json!(format!("th{t}"));
            }
            if let Some(a) = agent {
                m["agentId"] = json!(format!("agent{a}"));
            }
            if !tools.is_empty() {
                m["tools"] = Value::Array(
                    tools
                        .iter()
                        .map(|(t, explicit)| {
                            let mut call = json!({"id": format!("call{t}")});
                            if *explicit {
                                call["result_msg_id"] = json!(format!("m{t}"));
                            }
                            call
                        })
                        .collect(),
                );
            }
            if role == "tool" {
                m["tool_call_id"] = json!(format!("call{}", id % 3));
            }
            if role == "compressedGroup" {
                m["lastMessageId"] = json!(format!("m{}", (id + 1) % n.max(1)));
            }
            let mut meta = serde_json::Map::new();
            if flags & 1 != 0 {
                meta.insert("agentCouncil".into(), json!(true));
            }
            if flags & 2 != 0 {
                meta.insert("compare".into(), json!(true));
                meta.insert("activeColumn".into(), json!(true));
            }
            if flags & 4 != 0 {
                meta.insert("isSupervisor".into(), json!(true));
            }
            if flags & 8 != 0 {
                let kind = ["tool-stdout", "task-completion", "tool-callback"][id % 3];
                meta.insert("signal".into(), json!({"type": kind, "sequence": id}));
            }
            if let Some(i) = abi {
                meta.insert("activeBranchIndex".into(), json!(i));
            }
            if !meta.is_empty() {
                m["metadata"] = Value::Object(meta);
            }
            if id % 5 == 0 {
                m["groupId"] = json!("g0");
            }
            m
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_graphs_parse_totally(messages in (1usize..40).prop_flat_map(|n| prop::collection::vec(arb_message(n), 0..n * 2))) {
        let input = input(&messages);
    let r = conversation::parse(&input, None);
        check_invariants(&messages, &r);
        let groups = [conversation::Value::from(json!({"id": "g0", "mode": "compare"}))];
        let r = conversation::parse(&input, Some(&groups));
        check_invariants(&messages, &r);
    }
}
