//! Every input in `fuzz/server/regressions/graphql_request/` through the `graphql_request` fuzz
//! target's own entry point: the inputs it ever failed on, and hostile ones found elsewhere,
//! stay checked by `cargo test` without a fuzzing toolchain (fuzz/README.md, "Regression
//! inputs").

use std::path::PathBuf;

use crate::fuzz_graphql_request::check;

#[test]
fn graphql_request_regressions() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/server/regressions/graphql_request");
    let mut inputs: Vec<PathBuf> =
        std::fs::read_dir(&dir).expect("the regression inputs").map(|e| e.expect("an entry").path()).collect();
    inputs.sort();
    assert!(inputs.len() >= 4, "regression inputs in {}: {inputs:?}", dir.display());
    for input in &inputs {
        let data = std::fs::read(input).expect("an input");
        eprintln!("{} ({} bytes)", input.display(), data.len());
        check(&data);
    }
}
