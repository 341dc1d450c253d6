#!/usr/bin/env bash
# One server instance against two on the same PostgreSQL database, under the same mixed load of
# agentlog-load (BENCHMARKS.md, "A fleet"; docs/instances.md, "Running a fleet").
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   psql postgres://postgres@127.0.0.1:55432/postgres -c "CREATE DATABASE fleet"
#   bash scripts/fleet-load.sh postgres://postgres@127.0.0.1:55432/fleet
#
# Phases, each SECS seconds of the mixed load from CLIENTS clients (no subscribers), one after
# the other on the same database:
#   one-1   every request to instance A
#   two     requests to A and B in turn (agentlog-load --also-url: one client pool, two instances)
#   one-2   every request to A again (the machine's drift shows as a difference from one-1)
# B runs through all three phases (its reactors, tailer and projection runner follow the log in
# one-1 and one-2 too), so the phases differ only in where the requests go. Per phase: the load's
# report, and the CPU seconds (user + system) each server process used, in $OUT/cpu.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

DATABASE="${1:?usage: $0 POSTGRES_URL}"
SECS="${SECS:-60}"
CLIENTS="${CLIENTS:-16}"
PORT_A="${PORT_A:-18100}"
PORT_B="${PORT_B:-18101}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
OUT="${OUT:-$(mktemp -d)}"

say() { printf '[fleet-load] %s\n' "$*" >&2; }
mkdir -p "$OUT/a" "$OUT/b"

token="$("$BIN/agentlog" token create --user fleet-admin --admin --name fleet-load --database "$DATABASE" | tail -n 1)"
"$BIN/agentlog" serve --database "$DATABASE" --bind "127.0.0.1:$PORT_A" --data-dir "$OUT/a" 2>"$OUT/a/server.log" &
a=$!
"$BIN/agentlog" serve --database "$DATABASE" --bind "127.0.0.1:$PORT_B" --data-dir "$OUT/b" 2>"$OUT/b/server.log" &
b=$!
trap 'kill "$a" "$b" 2>/dev/null || true' EXIT
. scripts/ready.sh
for port in "$PORT_A" "$PORT_B"; do
    wait_ready "http://127.0.0.1:$port" "$a $b" "$OUT/a/server.log $OUT/b/server.log"
done
say "instances $a (:$PORT_A) and $b (:$PORT_B) ready; output in $OUT"

# utime + stime of a process, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz="$(getconf CLK_TCK)"
cpu_since() { awk -v now="$(ticks "$1")" -v then="$2" -v hz="$hz" 'BEGIN { printf "%.1f", (now - then) / hz }'; }
printf 'phase\tacked_per_s\tcpu_a_s\tcpu_b_s\n' >"$OUT/cpu.tsv"

phase() {
    local name="$1"; shift
    say "phase $name: $*"
    local a0 b0 code=0
    a0="$(ticks "$a")"; b0="$(ticks "$b")"
    "$BIN/agentlog-load" --url "http://127.0.0.1:$PORT_A" --token "$token" --clients "$CLIENTS" \
        --subscribers 0 --duration "$SECS" "$@" >"$OUT/$name.txt" || code=$?
    cat "$OUT/$name.txt"
    [ "$code" -eq 0 ] || say "phase $name: agentlog-load exited $code"
    local rate
    # From the report's first line, "…, 45.4 s: N mutations sent, M acknowledged (…/s), …".
    rate="$(sed -nE '1s/.*, ([0-9.]+) s: .* ([0-9]+) acknowledged.*/\2 \1/p' "$OUT/$name.txt" | awk '{printf "%.2f", $1 / $2}')"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rate" \
        "$(cpu_since "$a" "$a0")" "$(cpu_since "$b" "$b0")" >>"$OUT/cpu.tsv"
    sleep 5
}

sleep 5
phase one-1 --seed 1
phase two --seed 2 --also-url "http://127.0.0.1:$PORT_B"
phase one-2 --seed 3

echo "--- acknowledged mutations/s and server CPU seconds per phase"
column -t "$OUT/cpu.tsv"
awk -F'\t' 'NR > 1 { r[$1] = $2 } END { if (r["one-1"] + r["one-2"] > 0)
    printf "two instances / one: %.2f (against the mean of one-1 and one-2)\n", r["two"] / ((r["one-1"] + r["one-2"]) / 2) }' "$OUT/cpu.tsv"
