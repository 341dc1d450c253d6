//! Every input in `fuzz/regressions/conversation_parse/` through the `conversation_parse` fuzz
//! target's own entry point, so what it ever failed on (and the hostile shapes kept beside
//! those) stays checked by `cargo test` without a fuzzing toolchain (fuzz/README.md,
//! "Regression inputs").

use std::path::PathBuf;

use crate::fuzz_conversation_parse::check;

#[test]
fn conversation_parse_regressions() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/conversation_parse");
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
