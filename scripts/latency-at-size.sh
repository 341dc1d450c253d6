#!/usr/bin/env bash
# Mutation latency on an empty log against a large one, the same clients in one run
# (BENCHMARKS.md, "Mutation latency at size").
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   bash scripts/latency-at-size.sh sqlite:/tmp/empty.db sqlite:/path/to/copy-of-1m.db
#
# Two servers run side by side, one on each database; phases alternate between them so the
# machine's drift falls on both: for each CLIENTS_LIST entry, SECS seconds of the mixed load
# against the small log, then against the large one (no subscribers). The large log should be
# a copy whose read models are built (`agentlog-replay rebuild`) and whose reactors are at its
# head (a server that ran on it, or a generated log: `generate` sets its reactions floor at the
# head, and `copy` carries it to an empty target).
# The phases start once both servers' heads stand still (the large one first fires the cron
# slots it missed).
# RATE_PER_CLIENT (mutations per second per client) puts every phase on the same fixed schedule
# (`agentlog-load --rate`), so both servers get the same work; unset, each client sends as fast
# as it is answered and the faster server gets more. Pick a rate both servers keep up with
# (the report's acknowledged count is then the same on both sides).
# The first line of each table is every acknowledged mutation together; a type with a few
# hundred calls has a p99 that is its second or third slowest call.
# BUDGET=1 sets a global budget over all time on both logs before the phases (see below).
# Per phase: agentlog-load's report ($OUT/<phase>.json), the server's CPU seconds and its
# /metrics before and after ($OUT/<phase>.metrics.{0,1}: the server's own request durations,
# to tell its time from the clients'); at the end, p50 and p99 per mutation type, large / small.
set -euo pipefail
cd "$(dirname "$0")/.."

SMALL="${1:?usage: $0 SMALL_DATABASE_URL LARGE_DATABASE_URL}"
LARGE="${2:?usage: $0 SMALL_DATABASE_URL LARGE_DATABASE_URL}"
SECS="${SECS:-30}"
CLIENTS_LIST="${CLIENTS_LIST:-4 16}"
RATE_PER_CLIENT="${RATE_PER_CLIENT:-}"
PORT_S="${PORT_S:-18110}"
PORT_L="${PORT_L:-18111}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
OUT="${OUT:-$(mktemp -d)}"

say() { printf '[latency-at-size] %s\n' "$*" >&2; }
mkdir -p "$OUT/small" "$OUT/large"
# Write back what other work left dirty (a fresh copy of the large log, a build) before the
# servers start: on ext4 a commit's fsync waits for the journal, and the journal for other
# files' dirty data, so a phase that overlaps the kernel's write-back (up to 30 s after the
# writes) shows stalls of hundreds of milliseconds that are not the server's.
sync

start() { # name database port
    "$BIN/agentlog" token create --user size-admin --admin --name latency-at-size --database "$2" | tail -n 1 >"$OUT/$1/token"
    "$BIN/agentlog" serve --database "$2" --bind "127.0.0.1:$3" --data-dir "$OUT/$1" 2>"$OUT/$1/server.log" &
    echo $! >"$OUT/$1/pid"
}
start small "$SMALL" "$PORT_S"
start large "$LARGE" "$PORT_L"
trap 'kill "$(cat "$OUT/small/pid")" "$(cat "$OUT/large/pid")" 2>/dev/null || true' EXIT
. scripts/ready.sh
for side in small:$PORT_S large:$PORT_L; do
    name="${side%%:*}"; port="${side##*:}"
    wait_ready "http://127.0.0.1:$port" "$(cat "$OUT/$name/pid")" "$OUT/$name/server.log" 900
done
say "servers ready (small :$PORT_S, large :$PORT_L); output in $OUT"

head() { # port token
    curl -fs "http://127.0.0.1:$1/graphql" -H 'content-type: application/json' -H "authorization: Bearer $2" \
        -d '{"query":"{ headPosition }"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["headPosition"])'
}
# A server opening a log catches up on what its clock passes missed while nothing ran (each
# enabled cron job fires its latest missed slot once, with the runs and signals that follow):
# measure only once both heads have stood still for 10 s, as a server that ran all along would.
for side in small:$PORT_S large:$PORT_L; do
    name="${side%%:*}"; port="${side##*:}"; token="$(cat "$OUT/$name/token")"
    last=-1; still=0
    for _ in $(seq 1 600); do
        now="$(head "$port" "$token")"
        if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0; last="$now"; fi
        [ "$still" -ge 5 ] && break
        sleep 2
    done
    say "$name: head $last, still for $((still * 2)) s"
done

# BUDGET=1: a global budget over all time (far from its limit) on both logs, so every run's start and
# every step reads its standing, as they do wherever an operator set one.
if [ -n "${BUDGET:-}" ]; then
    for side in small:$PORT_S large:$PORT_L; do
        name="${side%%:*}"; port="${side##*:}"
        curl -fs "http://127.0.0.1:$port/graphql" -H 'content-type: application/json' \
            -H "authorization: Bearer $(cat "$OUT/$name/token")" \
            -d '{"query":"mutation { setBudget(input: {id: \"fleet\", scope: GLOBAL, period: TOTAL, limitTokens: 2000000000}) { position } }"}' >/dev/null
        say "$name: a global total budget set"
    done
fi

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz="$(getconf CLK_TCK)"

phase() { # side port clients
    local pid t0 code=0
    pid="$(cat "$OUT/$1/pid")"
    t0="$(ticks "$pid")"
    curl -fs -H "authorization: Bearer $(cat "$OUT/$1/token")" "http://127.0.0.1:$2/metrics" >"$OUT/$1-$3.metrics.0" || true
    local rate=()
    [ -z "$RATE_PER_CLIENT" ] || rate=(--rate "$(awk -v c="$3" -v r="$RATE_PER_CLIENT" 'BEGIN { print c * r }')")
    say "phase $1-$3: $3 clients for $SECS s ${rate[*]}"
    "$BIN/agentlog-load" --url "http://127.0.0.1:$2" --token "$(cat "$OUT/$1/token")" --clients "$3" \
        --subscribers 0 --duration "$SECS" --seed "$3" "${rate[@]}" --json >"$OUT/$1-$3.json" || code=$?
    [ "$code" -eq 0 ] || say "phase $1-$3: agentlog-load exited $code"
    curl -fs -H "authorization: Bearer $(cat "$OUT/$1/token")" "http://127.0.0.1:$2/metrics" >"$OUT/$1-$3.metrics.1" || true
    awk -v now="$(ticks "$pid")" -v then="$t0" -v hz="$hz" 'BEGIN { printf "%.1f", (now - then) / hz }' >"$OUT/$1-$3.cpu"
    sleep 3
}

sleep 5
for clients in $CLIENTS_LIST; do
    phase small "$PORT_S" "$clients"
    phase large "$PORT_L" "$clients"
done

python3 - "$OUT" $CLIENTS_LIST <<'EOF'
import json, sys
out, lists = sys.argv[1], sys.argv[2:]
for c in lists:
    s = json.load(open(f"{out}/small-{c}.json"))
    l = json.load(open(f"{out}/large-{c}.json"))
    cs, cl = (open(f"{out}/{x}-{c}.cpu").read().strip() for x in ("small", "large"))
    print(f"--- {c} clients: small log {s['acknowledged']} acked ({cs} s server CPU), "
          f"head {s['headPosition']}; large log {l['acknowledged']} acked ({cl} s server CPU), head {l['headPosition']}")
    print(f"{'mutation':<22} {'acked s/l':>11} {'p50 small':>10} {'p50 large':>10} {'ratio':>6} {'p99 small':>10} {'p99 large':>10} {'ratio':>6}")
    a, b = s["allMutations"], l["allMutations"]
    print(f"{'(all mutations)':<22} {a['count']:>5}/{b['count']:<5} {a['p50Ms']:>10.1f} {b['p50Ms']:>10.1f} {b['p50Ms'] / max(a['p50Ms'], 1e-9):>6.2f} "
          f"{a['p99Ms']:>10.1f} {b['p99Ms']:>10.1f} {b['p99Ms'] / max(a['p99Ms'], 1e-9):>6.2f}")
    for op, a in sorted(s["operations"].items()):
        b = l["operations"].get(op)
        if not b or not a["acknowledged"] or not b["acknowledged"]:
            continue
        r50 = b["p50Ms"] / max(a["p50Ms"], 1e-9)
        r99 = b["p99Ms"] / max(a["p99Ms"], 1e-9)
        print(f"{op:<22} {a['acknowledged']:>5}/{b['acknowledged']:<5} {a['p50Ms']:>10.1f} {b['p50Ms']:>10.1f} {r50:>6.2f} "
              f"{a['p99Ms']:>10.1f} {b['p99Ms']:>10.1f} {r99:>6.2f}")
EOF
