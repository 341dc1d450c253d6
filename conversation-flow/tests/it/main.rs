//! The parser's integration tests, in one binary: upstream's fixtures and robustness on
//! hostile graphs.

mod differential;
mod fixtures;
mod fuzz_regressions;
mod robustness;

// The fuzz target's entry point, for its regression inputs (`fuzz_regressions`).
#[path = "../../../fuzz/src/conversation_parse.rs"]
mod fuzz_conversation_parse;
