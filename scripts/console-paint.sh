#!/usr/bin/env bash
# First meaningful paint of each console page with a large log (BENCHMARKS.md, "Console"):
# builds release binaries, generates a log of EVENTS events into DIR (once; reused after),
# serves it and loads every page in Chromium (console/test/paint.mjs), printing a table.
#   scripts/console-paint.sh [EVENTS (1000000)] [DIR (/tmp/agentlog-paint)]
# Needs Node, `npm ci --prefix console` and Chromium, as the browser test does.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
dir=${2:-/tmp/agentlog-paint}
target=${CARGO_TARGET_DIR:-target}
addr=127.0.0.1:18090
cargo build --release -p agentlog-replay -p agentlog-api --bins
mkdir -p "$dir"
if [ ! -f "$dir/log.db" ]; then
    "$target/release/agentlog-replay" --database "sqlite:$dir/log.db" generate --events "$events"
fi
"$target/release/agentlog" serve --database "sqlite:$dir/log.db" --bind "$addr" --data-dir "$dir" &
pid=$!
trap 'kill $pid' EXIT
. scripts/ready.sh
wait_ready "http://$addr" "$pid" "" 900
node console/test/paint.mjs "http://$addr" "$(cat "$dir/agentlog-admin-token")" "${ROUNDS:-5}"
