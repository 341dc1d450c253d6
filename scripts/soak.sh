#!/usr/bin/env bash
# Soak: the server alone in its process under the mixed load of agentlog-load with subscribers,
# for MINUTES minutes, sampled once a minute: the server's resident memory, its open file
# descriptors, the database's size per event, and that minute's p50 / p99 per mutation
# (RELIABILITY.md, "Soak"). A script to run by hand, not a CI test.
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   bash scripts/soak.sh sqlite:/tmp/soak.db                  # a fresh SQLite file
#   psql postgres://postgres@127.0.0.1:55432/postgres -c "CREATE DATABASE soak"
#   bash scripts/soak.sh postgres://postgres@127.0.0.1:55432/soak   # an empty PostgreSQL database
#
# Each minute is one agentlog-load run of 60 s (so each minute has its own percentiles); the
# table goes to $OUT/soak.tsv: minute, rss_kib (VmRSS), anon_kib (RssAnon: the server's own
# memory; the rest is mostly the mapped SQLite file's pages, page cache the kernel may
# reclaim), fds, events, db_bytes, bytes_per_event, acked,
# errors (answers with an error code, all codes; the mixed load meets CONFLICT and busy answers
# by design), internal (INTERNAL answers: must be 0), p50_ms, p99_ms (the p50 and p99 of the
# slowest mutation type that minute). Subscribers reconnect each minute, so a leak per
# websocket shows as fds or memory that climb.
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
. scripts/ready.sh
wait_ready "http://127.0.0.1:$PORT" "$server" "$OUT/server.log"
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

printf 'minute\trss_kib\tanon_kib\tfds\tevents\tdb_bytes\tbytes_per_event\tacked\terrors\tinternal\tp50_ms\tp99_ms\n' >"$OUT/soak.tsv"
for minute in $(seq 1 "$MINUTES"); do
    code=0
    started=$(date +%s)
    "$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$token" --clients "$CLIENTS" \
        --subscribers "$SUBSCRIBERS" --subscribe-from-head --duration 60 --json --seed "$minute" \
        >"$OUT/minute-$minute.json" 2>>"$OUT/load.log" || code=$?
    [ "$code" -eq 0 ] || say "minute $minute: agentlog-load exited $code"
    # A load that gave up early (the server refusing everything) still takes its minute.
    left=$((60 - ($(date +%s) - started)))
    [ "$left" -le 0 ] || sleep "$left"
    kill -0 "$server" 2>/dev/null || { say "the server exited"; tail -n 20 "$OUT/server.log" >&2; exit 1; }
    read -r rss anon < <(awk '/^(VmRSS|RssAnon):/ {v[$1] = $2} END {print v["VmRSS:"], v["RssAnon:"]}' "/proc/$server/status")
    fds="$(ls "/proc/$server/fd" | wc -l)"
    events="$(head_position || echo 0)"
    bytes="$(db_bytes || echo 0)"
    python3 - "$OUT/minute-$minute.json" "$minute" "$rss" "$anon" "$fds" "$events" "$bytes" >>"$OUT/soak.tsv" <<'PY'
import json, sys
path, minute, rss, anon, fds, events, size = sys.argv[1:]
try:
    report = json.load(open(path))
except (OSError, ValueError):
    report = {}
ops = list(report.get("operations", {}).values())
# The slowest mutation type's percentiles: one figure per minute that a regression anywhere moves.
p50 = max((o["p50Ms"] for o in ops), default=0)
p99 = max((o["p99Ms"] for o in ops), default=0)
errors = {}
for o in ops:
    for code, n in o.get("errors", {}).items():
        errors[code] = errors.get(code, 0) + n
events = int(events) if events.isdigit() else 0
size = int(size) if size.isdigit() else 0
per_event = size / max(events, 1)
print(f"{minute}\t{rss}\t{anon}\t{fds}\t{events}\t{size}\t{per_event:.0f}\t{report.get('acknowledged', 0)}"
      f"\t{sum(errors.values())}\t{errors.get('INTERNAL', 0)}\t{p50:.1f}\t{p99:.1f}")
PY
    tail -n 1 "$OUT/soak.tsv" >&2
done
grep -h '"duplicates": [1-9]' "$OUT"/minute-*.json >/dev/null && say "a subscriber saw an event twice (see minute-*.json)"
printf 'peak rss (VmHWM): %s\n' "$(awk '/^VmHWM/ {print $2 " kB"}' "/proc/$server/status")" >>"$OUT/summary.txt"
say "done: $OUT/soak.tsv"
column -t "$OUT/soak.tsv"
cat "$OUT/summary.txt"
