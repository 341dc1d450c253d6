//! Arbitrary bytes as a JSON message document into the conversation-flow parser; what must
//! hold is in `../src/conversation_parse.rs`, which the regression test runs too.
#![no_main]

#[path = "../src/conversation_parse.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::check(data));
