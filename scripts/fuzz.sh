#!/usr/bin/env bash
# Build a fuzz target with libFuzzer's coverage instrumentation and run it for a bounded time
# (fuzz/README.md). No cargo-fuzz and no nightly toolchain needed: the instrumentation is
# stable rustc codegen flags (the ones `cargo fuzz build -s none` passes), and libfuzzer-sys
# needs only RUSTC_BOOTSTRAP for its `#![feature]`s.
#
#   bash scripts/fuzz.sh conversation_parse 60     # the parser target, 60 s of fuzzing
#   bash scripts/fuzz.sh graphql_request 300       # the server target (its build is long)
#   bash scripts/fuzz.sh all 300                   # both, one after the other (nightly)
#
# A crash stops the run with status 1 and leaves the input in fuzz/artifacts/<target>/ or
# fuzz/server/artifacts/<target>/; copy it into the target's regressions/ directory so that
# `cargo test` keeps checking it. The corpus grows in fuzz[/server]/corpus/<target>/ (not
# committed); the regression inputs seed every run.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${1:?usage: $0 conversation_parse|graphql_request|all SECONDS}"
SECS="${2:-60}"
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"

if [ "$TARGET" = all ]; then
    bash "$0" conversation_parse "$SECS"
    exec bash "$0" graphql_request "$SECS"
fi
case "$TARGET" in
    conversation_parse) dir=fuzz ;;
    graphql_request) dir=fuzz/server ;;
    *) echo "unknown target $TARGET" >&2; exit 2 ;;
esac
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/$dir/target}"

# `--target` keeps the flags off build scripts and proc macros (which must not be instrumented).
start=$(date +%s)
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
    cargo build --release --locked --manifest-path "$dir/Cargo.toml" --target "$TRIPLE" --bin "$TARGET"
built=$(date +%s)
echo "[fuzz] $TARGET built in $((built - start)) s" >&2

mkdir -p "$dir/corpus/$TARGET" "$dir/artifacts/$TARGET"
code=0
"$CARGO_TARGET_DIR/$TRIPLE/release/$TARGET" "$dir/corpus/$TARGET" "$dir/regressions/$TARGET" \
    -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/$TARGET/" 2>"$CARGO_TARGET_DIR/$TARGET.log" || code=$?
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$CARGO_TARGET_DIR/$TARGET.log" >&2 || true
echo "[fuzz] $TARGET fuzzed $(( $(date +%s) - built )) s, exit $code; log: $CARGO_TARGET_DIR/$TARGET.log" >&2
if [ "$code" -ne 0 ]; then
    tail -n 40 "$CARGO_TARGET_DIR/$TARGET.log" >&2
    ls -l "$dir/artifacts/$TARGET" >&2
    exit 1
fi
