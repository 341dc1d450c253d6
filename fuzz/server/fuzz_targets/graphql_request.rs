//! Arbitrary bytes as an HTTP request to the server's GraphQL endpoint; what must hold is in
//! `../src/graphql_request.rs`, which the regression test runs too.
#![no_main]

#[path = "../src/graphql_request.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::check(data));
