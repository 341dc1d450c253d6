#!/usr/bin/env bash
# The write path's ceiling, closed loop (BENCHMARKS.md, "Write throughput ceiling"): agentlog's
# reportStep (one step per request) and reportBatch against agentlog-baseline, the smallest
# axum + async-graphql + sqlx endpoint doing one durable insert per request, at 1, 8 and 64
# clients with no think time, on SQLite and (given a PostgreSQL server) PostgreSQL.
#
#   cargo build --release -p agentlog-api -p agentlog-load -p agentlog-baseline
#   bash scripts/write-ceiling.sh                                          # SQLite only
#   bash scripts/write-ceiling.sh postgres://postgres@127.0.0.1:55432/postgres   # and PostgreSQL
#
# Every run gets a fresh database and a fresh server process, SECS seconds of load, no
# subscribers. A row per run in $OUT/runs.tsv: mutations/s and events/s (the log's head before
# and after: every event the run caused, reactors' included), the p50 and p99 of the run's main
# mutation. Then the ratios, each from the same invocation.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_SERVER="${1:-}"
SECS="${SECS:-20}"
CLIENTS="${CLIENTS:-1 8 64}"
BATCH_CLIENTS="${BATCH_CLIENTS:-16}"
BATCH="${BATCH:-50}"
PORT="${PORT:-18200}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"

say() { printf '[write-ceiling] %s\n' "$*" >&2; }
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null || true' EXIT

# A fresh database URL for run $1 on backend $2.
fresh() {
    if [ "$2" = sqlite ]; then
        echo "sqlite:$OUT/$1.db"
    else
        local name="wc_${1//-/_}_$$"
        psql -q "$PG_SERVER" -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name" >/dev/null
        echo "${PG_SERVER%/*}/$name"
    fi
}

. scripts/ready.sh

stop_server() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""; }

# run NAME BACKEND SYSTEM CLIENTS [agentlog-load args…]
run() {
    local name="$1" backend="$2" system="$3" clients="$4"; shift 4
    local db token=unused
    db="$(fresh "$name" "$backend")"
    if [ "$system" = baseline ]; then
        "$BIN/agentlog-baseline" --database "$db" --listen "127.0.0.1:$PORT" 2>"$OUT/server.log" &
    else
        token="$("$BIN/agentlog" token create --user wc-admin --admin --name write-ceiling --database "$db" | tail -n 1)"
        "$BIN/agentlog" serve --database "$db" --bind "127.0.0.1:$PORT" --data-dir "$OUT/$name.data" 2>"$OUT/server.log" &
    fi
    server=$!
    wait_ready "http://127.0.0.1:$PORT" "$server" "$OUT/server.log" 300
    say "$name: $clients clients, $*"
    "$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$token" --clients "$clients" \
        --subscribers 0 --duration "$SECS" --json "$@" >"$OUT/$name.json"
    stop_server
    python3 - "$OUT/$name.json" "$name" "$backend" "$system" "$clients" >>"$OUT/runs.tsv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
secs = r["elapsed"]
main = max(r["operations"].items(), key=lambda kv: kv[1]["acknowledged"])
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], main[0],
                 f'{r["acknowledged"] / secs:.0f}', f'{r["appended"] / secs:.0f}',
                 f'{main[1]["p50Ms"]:.1f}', f'{main[1]["p99Ms"]:.1f}']))
PY
}

printf 'run\tbackend\tsystem\tclients\tmutation\tmutations_per_s\tevents_per_s\tp50_ms\tp99_ms\n' >"$OUT/runs.tsv"
backends="sqlite"
[ -n "$PG_SERVER" ] && backends="sqlite postgres"
for backend in $backends; do
    for n in $CLIENTS; do
        run "$backend-baseline-$n" "$backend" baseline "$n" --scenario baseline
        run "$backend-step-$n" "$backend" agentlog "$n" --scenario write
    done
    run "$backend-batch-$BATCH_CLIENTS" "$backend" agentlog "$BATCH_CLIENTS" --scenario write --batch "$BATCH"
done

echo "--- each run (output in $OUT)"
column -t "$OUT/runs.tsv"
echo "--- ratios"
python3 - "$OUT/runs.tsv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {(r["backend"], r["system"], r["clients"], r["mutation"]): r for r in rows}
for backend in sorted({r["backend"] for r in rows}):
    base = {r["clients"]: float(r["events_per_s"]) for r in rows if r["backend"] == backend and r["system"] == "baseline"}
    step = {r["clients"]: r for r in rows if r["backend"] == backend and r["mutation"] == "reportStep"}
    for clients, r in sorted(step.items(), key=lambda kv: int(kv[0])):
        if base.get(clients):
            print(f"{backend}: reportStep/baseline mutations/s at {clients} clients: {float(r['mutations_per_s']) / base[clients]:.2f}")
    raw = base.get("1")
    for r in rows:
        if r["backend"] == backend and r["system"] == "agentlog" and raw:
            print(f"{backend}: {r['run']} events/s / baseline at 1 client (one commit per event): {float(r['events_per_s']) / raw:.2f}")
PY
