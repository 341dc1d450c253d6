//! Generated conversation inputs shared by the parse bench and the callgrind example.

use agentlog_conversation_flow::Value;
use serde_json::json;

/// A linear user/assistant chain, each message the parent of the next.
pub fn deep_chain(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let mut m = json!({"id": format!("m{i}"), "role": role, "content": format!("turn {i}"),
                               "createdAt": 1_700_000_000_000u64 + i as u64, "updatedAt": 1_700_000_000_000u64 + i as u64});
            if i > 0 {
                m["parentId"] = json!(format!("m{}", i - 1));
            }
            Value::from(m)
        })
        .collect()
}

/// `roots` short conversations side by side (a wide topic), each with a tool chain and a
/// regenerated answer.
pub fn wide(roots: usize) -> Vec<Value> {
    let mut out = Vec::with_capacity(roots * 6);
    for r in 0..roots {
        let t = 1_700_000_000_000u64 + (r as u64) * 10;
        out.push(Value::from(
            json!({"id": format!("u{r}"), "role": "user", "content": "q", "createdAt": t, "updatedAt": t}),
        ));
        out.push(Value::from(
            json!({"id": format!("a{r}"), "role": "assistant", "content": "", "parentId": format!("u{r}"),
            "tools": [{"id": format!("c{r}"), "apiName": "x", "identifier": "p", "arguments": "{}", "type": "default"}],
            "metadata": {"totalTokens": 10, "cost": 0.001}, "createdAt": t + 1, "updatedAt": t + 1}),
        ));
        out.push(Value::from(
            json!({"id": format!("t{r}"), "role": "tool", "content": "r", "parentId": format!("a{r}"),
            "tool_call_id": format!("c{r}"), "createdAt": t + 2, "updatedAt": t + 2}),
        ));
        out.push(Value::from(
            json!({"id": format!("f{r}"), "role": "assistant", "content": "done", "parentId": format!("t{r}"),
            "createdAt": t + 3, "updatedAt": t + 3}),
        ));
        out.push(Value::from(
            json!({"id": format!("g{r}"), "role": "assistant", "content": "again", "parentId": format!("u{r}"),
            "createdAt": t + 4, "updatedAt": t + 4}),
        ));
        out.push(Value::from(
            json!({"id": format!("v{r}"), "role": "user", "content": "next", "parentId": format!("f{r}"),
            "createdAt": t + 5, "updatedAt": t + 5}),
        ));
    }
    out
}
