//! Arbitrary bytes as a JSON message document into the conversation-flow parser: it must
//! never panic, hang or overflow the stack, and its output must always serialise.
#![no_main]

use agentlog_conversation_flow as conversation;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<conversation::Value>(data) else {
        return;
    };
    if let Ok(result) = conversation::parse_document(&doc) {
        let mut out = Vec::new();
        result.write_json(&mut out).expect("writing to memory cannot fail");
    }
});
