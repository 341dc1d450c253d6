//! The parser's integration tests, in one binary: upstream's fixtures and robustness on
//! hostile graphs.

mod differential;
mod fixtures;
mod robustness;
