#!/usr/bin/env bash
# The server alone in its process, under agentlog-load, with and without 1,000 subscribers:
# writer latency per mutation type, and the server's own resident memory (RELIABILITY.md,
# "1,000 subscribers"; BENCHMARKS.md, "Server alone").
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   bash scripts/subscriber-load.sh sqlite:/path/to/a/large.db      # e.g. the server bench's database
#
# Phases, each SECS seconds of the mixed load from CLIENTS clients:
#   alone    no subscribers
#   fan-out  SUBSCRIBERS websocket subscribers from the head (SLOW of them pausing 200 ms per message),
#            in an agentlog-load process of their own (SPLIT=0: in the writers' process), and
#            one probe subscriber in the writers' process (SPLIT=1)
#   alone    again (the machine's drift shows as a difference between the two)
# The server's resident memory is sampled every second into $OUT/rss.tsv: VmRSS, and its two
# parts, RssAnon (the server's own memory) and RssFile (pages of the mapped SQLite file, which
# the kernel's page cache holds and may reclaim; they grow with the part of the file read);
# VmHWM (peak) at the end; its CPU time and the load average after each phase. With
# subscribers, agentlog-load reports the append → delivery latency of the live events
# (`recordedAt` to arrival), normal and slow subscribers apart (slow ones fall behind on
# purpose, so theirs grows with the run).
# The server takes its settings from the environment too: AGENTLOG_WEBSOCKET_NICE=0 runs its
# websocket threads as the process (by default 5 steps nicer; RELIABILITY.md, "1,000
# subscribers"). SUBSCRIBERS_NICE=19 runs the thousand subscribers' process at that niceness
# (SPLIT=1): on two cores it stands in for clients on other machines, taking the CPU the server
# and the writers leave.
set -euo pipefail
cd "$(dirname "$0")/.."

DATABASE="${1:?usage: $0 DATABASE_URL}"
SECS="${SECS:-60}"
CLIENTS="${CLIENTS:-4}"
SUBSCRIBERS="${SUBSCRIBERS:-1000}"
SLOW="${SLOW:-100}"
PORT="${PORT:-18080}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
OUT="${OUT:-$(mktemp -d)}"

say() { printf '[subscriber-load] %s\n' "$*" >&2; }
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
mkdir -p "$OUT"

token="$("$BIN/agentlog" token create --user load-admin --admin --name subscriber-load --database "$DATABASE" | tail -n 1)"
# Every subscriber is the one load user: lift the per-user caps to the server-wide one.
"$BIN/agentlog" serve --database "$DATABASE" --bind "127.0.0.1:$PORT" --data-dir "$OUT" \
    --max-connections-per-user "$((SUBSCRIBERS + 10))" --max-subscriptions-per-user "$((SUBSCRIBERS + 10))" \
    2>"$OUT/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; kill "$sampler" 2>/dev/null || true' EXIT
. scripts/ready.sh
wait_ready "http://127.0.0.1:$PORT" "$server" "$OUT/server.log"
say "server $server ready on :$PORT; output in $OUT"

# VmRSS, RssAnon and RssFile in KiB, tab-separated.
rss() { awk '/^(VmRSS|RssAnon|RssFile):/ {v[$1] = $2} END {printf "%s\t%s\t%s", v["VmRSS:"], v["RssAnon:"], v["RssFile:"]}' "/proc/$server/status"; }
( while kill -0 "$server" 2>/dev/null; do
      printf '%s\t%s\t%s\n' "$(date +%s)" "$(cat "$OUT/phase" 2>/dev/null || echo idle)" "$(rss)"
      sleep 1
  done ) >"$OUT/rss.tsv" &
sampler=$!

# The server's CPU time so far (user + system), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }

phase() {
    local name="$1"; shift
    echo "$name" >"$OUT/phase"
    say "phase $name: $*"
    # Exit 1 (a subscriber that did not catch up, a duplicate) is reported, not fatal here.
    local code=0 before after
    before="$(cpu_ticks)"
    "$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$token" --clients "$CLIENTS" \
        --duration "$SECS" "$@" >"$OUT/$name.txt" || code=$?
    after="$(cpu_ticks)"
    cat "$OUT/$name.txt"
    echo "server CPU in phase $name: $(awk -v a="$after" -v b="$before" -v t="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (a - b) / t }') s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
    [ "$code" -eq 0 ] || say "phase $name: agentlog-load exited $code"
    echo idle >"$OUT/phase"
    sleep 5
}

echo idle >"$OUT/phase"
sleep 5
phase alone-1 --subscribers 0
# Slow subscribers read one message per 200 ms: ~10 events/s arrive, so they fall behind
# during the run and need minutes afterwards to read the rest.
if [ "${SPLIT:-1}" = 1 ]; then
    # The subscribers in a client process of their own (`--clients 0`), as they would be on
    # other machines: the writers' latency is then the server's, not that of a client runtime
    # also reading a thousand sockets. They subscribe first; the writers start a few seconds later.
    nice -n "${SUBSCRIBERS_NICE:-0}" "$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$token" --clients 0 --duration "$((SECS + 5))" \
        --subscribers "$SUBSCRIBERS" --slow-subscribers "$SLOW" --subscribe-from-head --seed 2 \
        --drain-secs "${DRAIN_SECS:-300}" >"$OUT/subscribers.txt" 2>&1 &
    subscribers=$!
    sleep 3
    # One more subscriber, a probe, in the writers' process (mostly idle): its delivery latency
    # is the server's, without the thousand subscribers' own client waiting for a core.
    phase fan-out --subscribers 1 --subscribe-from-head --seed 2 --drain-secs 5
    echo "(the one subscriber above is the probe, in the writers' process)"
    wait "$subscribers" || say "the subscribers' agentlog-load exited $?"
    echo "--- the subscribers (their own process)"
    cat "$OUT/subscribers.txt"
else
    phase fan-out --subscribers "$SUBSCRIBERS" --slow-subscribers "$SLOW" --subscribe-from-head --seed 2 \
        --drain-secs "${DRAIN_SECS:-300}"
fi
phase alone-2 --subscribers 0 --seed 3

echo "--- server resident memory (MiB): idle before, max per phase (VmRSS, and its anonymous and file parts), peak (VmHWM)"
awk -F'\t' '{ for (i = 3; i <= 5; i++) if (!(($2, i) in max) || $i > max[$2, i]) max[$2, i] = $i
              seen[$2] = 1; if (NR == 1) { r = $3; a = $4; f = $5 } }
            END { printf "idle at start: VmRSS %.0f, RssAnon %.0f, RssFile %.0f\n", r / 1024, a / 1024, f / 1024
                  for (p in seen) printf "%s max: VmRSS %.0f, RssAnon %.0f, RssFile %.0f\n", p, max[p, 3] / 1024, max[p, 4] / 1024, max[p, 5] / 1024 }' "$OUT/rss.tsv"
awk '/^VmHWM/ {printf "peak (VmHWM) %.0f\n", $2 / 1024}' "/proc/$server/status"
