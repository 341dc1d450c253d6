#!/usr/bin/env bash
# What one server's mutations cost, counted by the kernel rather than timed (BENCHMARKS.md,
# "Mutation latency at size"): page faults, munmap and mmap calls and CPU time per acknowledged
# mutation, from `perf stat` on the server through a fixed-rate mixed load.
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   bash scripts/server-counts.sh sqlite:/path/to/copy-of-1m.db
#
# The server starts on the database (use a fresh copy: the load writes to it; its reactors at
# its head, as scripts/latency-at-size.sh says, or the settle is spent reacting to the whole
# log), settles SETTLE seconds (a 1M log fires the cron slots it missed), then CLIENTS clients send RATE mutations a
# second in all for SECS seconds while `perf stat -e EVENTS -p` counts. Tracepoints need
# `perf_event_paranoid` ≤ 1 or root; EVENTS=task-clock counts CPU time only. BIN: the directory
# with `agentlog` and `agentlog-load`. OUT: where the token, logs and counts go (made if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

DATABASE="${1:?usage: $0 DATABASE_URL}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
SETTLE="${SETTLE:-60}"
SECS="${SECS:-60}"
CLIENTS="${CLIENTS:-16}"
RATE="${RATE:-160}"
PORT="${PORT:-18130}"
EVENTS="${EVENTS:-page-faults,syscalls:sys_enter_munmap,syscalls:sys_enter_mmap,task-clock}"
OUT="${OUT:-$(mktemp -d)}"

say() { printf '[server-counts] %s\n' "$*" >&2; }
mkdir -p "$OUT"
sync
"$BIN/agentlog" token create --user counts-admin --admin --name server-counts --database "$DATABASE" | tail -n 1 >"$OUT/token"
"$BIN/agentlog" serve --database "$DATABASE" --bind "127.0.0.1:$PORT" --data-dir "$OUT" 2>"$OUT/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
. scripts/ready.sh
wait_ready "http://127.0.0.1:$PORT" "$server" "$OUT/server.log" 900
say "server ready on :$PORT; settling $SETTLE s; output in $OUT"
sleep "$SETTLE"

perf stat -e "$EVENTS" -p "$server" -o "$OUT/perf.txt" &
perf=$!
"$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$(cat "$OUT/token")" --clients "$CLIENTS" \
    --subscribers 0 --duration "$SECS" --seed "$CLIENTS" --rate "$RATE" --json >"$OUT/load.json"
kill -INT "$perf"
wait "$perf" || true

python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
load = json.load(open(f"{out}/load.json"))
acked, every = load["acknowledged"], load["allMutations"]
text = open(f"{out}/perf.txt").read()
print(f"acknowledged {acked}; all mutations p50 {every['p50Ms']:.2f} ms, p99 {every['p99Ms']:.2f} ms")
for line in text.splitlines():
    m = re.match(r"\s*([\d,.]+)\s+(msec\s+)?(\S+)", line)
    if not m or m.group(3) == "seconds":
        continue
    value = float(m.group(1).replace(",", ""))
    unit = " ms" if m.group(2) else ""
    print(f"{m.group(3):<32} {value / acked:>10.3f}{unit} per mutation")
PY
