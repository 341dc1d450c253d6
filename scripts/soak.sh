#!/usr/bin/env bash
# Soak: the server alone in its process under the mixed load of agentlog-load with subscribers,
# for MINUTES minutes, sampled once a minute: the server's resident memory, its open file
# descriptors, the database's size per event, and that minute's p50 / p99 per mutation
# (RELIABILITY.md, "Soak"). A script to run by hand, not a CI test.
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   bash scripts/soak.sh sqlite:/tmp/soak.db                  # a fresh SQLite file
#   bash scripts/soak.sh postgres://postgres@127.0.0.1:55432/soak   # an empty PostgreSQL database
#
# Each minute is one agentlog-load run of 60 s (so each minute has its own percentiles); the
# table goes to $OUT/soak.tsv: minute, rss_kib, fds, events, db_bytes, bytes_per_event, acked,
# p50_ms, p99_ms (the p50 and p99 of the slowest mutation type that minute).
set -euo pipefail
cd "$(dirname "$0")/.."

DATABASE="${1:?usage: $0 DATABASE_URL}"
MINUTES="${MINUTES:-30}"
CLIENTS="${CLIENTS:-4}"
SUBSCRIBERS="${SUBSCRIBERS:-50}"
PORT="${PORT:-18090}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
OUT="${OUT:-$(mktemp -d)}"

say() { printf '[soak] %s\n' "$*" >&2; }
mkdir -p "$OUT"
token="$("$BIN/agentlog" token create --user soak-admin --admin --name soak --database "$DATABASE" | tail -n 1)"
"$BIN/agentlog" serve --database "$DATABASE" --bind "127.0.0.1:$PORT" --data-dir "$OUT" 2>"$OUT/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
    curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { tail -n 20 "$OUT/server.log" >&2; exit 1; }
    sleep 1
done
say "server $server ready on :$PORT; output in $OUT"

db_bytes() {
    case "$DATABASE" in
        postgres*) psql "$DATABASE" -Atc "SELECT pg_database_size(current_database())" ;;
        *) local f="${DATABASE#sqlite:}"; f="${f#//}"; du -cb "$f" "$f-wal" 2>/dev/null | tail -n 1 | cut -f1 ;;
    esac
}
head_position() {
    curl -fs "http://127.0.0.1:$PORT/graphql" -H "authorization: Bearer $token" -H 'content-type: application/json' \
        -d '{"query":"{ headPosition }"}' | sed -E 's/.*"headPosition":([0-9]+).*/\1/'
}

printf 'minute\trss_kib\tfds\tevents\tdb_bytes\tbytes_per_event\tacked\tp50_ms\tp99_ms\n' >"$OUT/soak.tsv"
for minute in $(seq 1 "$MINUTES"); do
    code=0
    "$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$token" --clients "$CLIENTS" \
        --subscribers "$SUBSCRIBERS" --subscribe-from-head --duration 60 --json --seed "$minute" \
        >"$OUT/minute-$minute.json" || code=$?
    [ "$code" -eq 0 ] || say "minute $minute: agentlog-load exited $code"
    rss="$(awk '/^VmRSS/ {print $2}' "/proc/$server/status")"
    fds="$(ls "/proc/$server/fd" | wc -l)"
    events="$(head_position)"
    bytes="$(db_bytes)"
    python3 - "$OUT/minute-$minute.json" "$minute" "$rss" "$fds" "$events" "$bytes" >>"$OUT/soak.tsv" <<'PY'
import json, sys
path, minute, rss, fds, events, size = sys.argv[1:]
report = json.load(open(path))
ops = report.get("operations", {}).values()
p50 = max((o.get("p50Ms", o.get("p50_ms", 0)) for o in ops), default=0)
ops = report.get("operations", {}).values()
p99 = max((o.get("p99Ms", o.get("p99_ms", 0)) for o in ops), default=0)
acked = report.get("acknowledged", 0)
per_event = int(size) / max(int(events), 1)
print(f"{minute}\t{rss}\t{fds}\t{events}\t{size}\t{per_event:.0f}\t{acked}\t{p50:.1f}\t{p99:.1f}")
PY
    tail -n 1 "$OUT/soak.tsv" >&2
done
say "done: $OUT/soak.tsv"
column -t "$OUT/soak.tsv"
