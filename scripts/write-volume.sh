#!/usr/bin/env bash
# What the server makes the disk write per acknowledged mutation, on a SQLite log (BENCHMARKS.md,
# "Mutation latency at size"): one release server on FILE, settled, then SECS seconds of the mixed
# load from CLIENTS clients on a fixed schedule (10 mutations/s each); the block device's
# sectors and write requests (/sys/class/block/<device>/stat) and the server's WAL checkpoints
# (`/metrics`) are read before and after the load.
#
#   cargo build --release -p agentlog-api -p agentlog-load
#   bash scripts/write-volume.sh /path/to/a/copy-of-a-log.db
#
# The device counts every writer on the machine: run it on a quiet one, after `sync`.
set -euo pipefail
cd "$(dirname "$0")/.."

FILE="${1:?usage: $0 SQLITE_FILE}"
SECS="${SECS:-60}"
CLIENTS="${CLIENTS:-16}"
PORT="${PORT:-18151}"
BIN="${BIN:-${CARGO_TARGET_DIR:-target}/release}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"

say() { printf '[write-volume] %s\n' "$*" >&2; }
source=$(findmnt -no SOURCE -T "$(dirname "$(realpath "$FILE")")")
device=$(basename "$source")
[ -r "/sys/class/block/$device/stat" ] || { say "no block device statistics for $source"; exit 1; }

"$BIN/agentlog" token create --user volume-admin --admin --name write-volume --database "sqlite:$FILE" | tail -n 1 >"$OUT/token"
sync
"$BIN/agentlog" serve --database "sqlite:$FILE" --bind "127.0.0.1:$PORT" --data-dir "$OUT" 2>"$OUT/server.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
. scripts/ready.sh
wait_ready "http://127.0.0.1:$PORT" "$pid" "$OUT/server.log" 900
sleep 15 # the cron slots a copied log missed are fired, and their WAL copied back
checkpoints() { curl -fs -H "authorization: Bearer $(cat "$OUT/token")" "http://127.0.0.1:$PORT/metrics" | awk '/^agentlog_sqlite_wal_checkpoints_total /{print $2}'; }
written() { awk '{print $7, $5}' "/sys/class/block/$device/stat"; } # sectors written, writes completed
c0=$(checkpoints); d0=$(written)
"$BIN/agentlog-load" --url "http://127.0.0.1:$PORT" --token "$(cat "$OUT/token")" --clients "$CLIENTS" \
    --subscribers 0 --duration "$SECS" --seed "$CLIENTS" --rate $((CLIENTS * 10)) --json >"$OUT/load.json" 2>"$OUT/load.err"
c1=$(checkpoints); d1=$(written)
python3 - "$OUT/load.json" "$c0" "$c1" "$d0" "$d1" "$device" <<'PY'
import json, sys
load, c0, c1, d0, d1, device = sys.argv[1:]
acked = json.load(open(load))["acknowledged"]
(s0, w0), (s1, w1) = (map(int, d.split()) for d in (d0, d1))
mb = (s1 - s0) * 512 / 1e6
print(f"{acked} mutations acknowledged; {device}: {mb:.0f} MB in {w1 - w0} writes "
      f"({mb * 1e3 / acked:.0f} kB and {(w1 - w0) / acked:.1f} writes per mutation); "
      f"{int(float(c1) - float(c0))} WAL checkpoints")
PY
say "output in $OUT"
