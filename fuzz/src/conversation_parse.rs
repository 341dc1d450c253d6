//! The `conversation_parse` fuzz target's entry point, shared with the regression test that
//! feeds it every input in `fuzz/regressions/conversation_parse/`
//! (`conversation-flow/tests/fuzz_regressions.rs`, run by `cargo test`).
//!
//! Arbitrary bytes as a JSON message document into the conversation-flow parser: it must
//! never panic, hang or overflow the stack, and its output must always serialise.

use agentlog_conversation_flow as conversation;

/// Parse `data` as the target does (panics when what must hold does not).
pub fn check(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<conversation::Value>(data) else {
        return;
    };
    if let Ok(result) = conversation::parse_document(&doc) {
        let mut out = Vec::new();
        result.write_json(&mut out).expect("writing to memory cannot fail");
    }
}
