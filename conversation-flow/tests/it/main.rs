//! The parser's integration tests, in one binary: upstream's fixtures and robustness on
//! hostile graphs.

mod fixtures;
mod robustness;
