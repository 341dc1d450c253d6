#!/usr/bin/env bash
# A throwaway PostgreSQL server for agentlog's tests and benchmarks.
#
#   export AGENTLOG_TEST_PG_URL="$(bash scripts/pg-test-server.sh start)"   # fresh server, prints its URL
#   bash scripts/pg-test-server.sh stop                                      # stop it, delete its data
#   bash scripts/pg-test-server.sh status                                    # exit 0 when it is up
#   bash scripts/pg-test-server.sh crash                                     # stop it abruptly, keep its data
#   bash scripts/pg-test-server.sh resume                                    # start it again on its data
#
# Installs Debian's `postgresql` package when no server is found (needs root and apt-get).
# Runs the server as the `postgres` system user when called as root (postgres refuses root).
# Listens on 127.0.0.1:$PG_PORT only, trust auth, data under $PG_DIR (wiped on every start).
# Tests create and drop a database each; with fsync on that costs ~7 s per test, so by default
# the server does not wait for the disk (fsync, synchronous_commit, full_page_writes off: a
# throwaway server loses nothing a test can observe unless the machine itself crashes).
# Benchmarks start it with PG_DURABLE=1 to measure PostgreSQL as it runs in production.
# PG_MAX_CONNECTIONS (default 400) sets max_connections (the connection-limit test lowers it).
# Only the URL goes to stdout; everything else to stderr.
set -euo pipefail

PG_PORT="${PG_PORT:-55432}"
PG_DIR="${PG_DIR:-/tmp/agentlog-pg-${PG_PORT}}"
PG_DURABLE="${PG_DURABLE:-0}"
PG_MAX_CONNECTIONS="${PG_MAX_CONNECTIONS:-400}"
ACTION="${1:-start}"

say() { printf '[pg-test-server] %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

BIN="$(bindir || true)"
if [ -z "$BIN" ]; then
    [ "$ACTION" = start ] || { say "PostgreSQL is not installed"; exit 1; }
    [ "$(id -u)" -eq 0 ] || fail "PostgreSQL is not installed; install the 'postgresql' package (needs root)"
    command -v apt-get >/dev/null 2>&1 || fail "PostgreSQL is not installed and apt-get is not available"
    say "installing postgresql with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
    BIN="$(bindir)" || fail "no PostgreSQL binaries after installing"
fi

if [ "$(id -u)" -eq 0 ]; then
    RUN_AS=postgres
    id "$RUN_AS" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_AS"
    as_pg() { (cd / && runuser -u "$RUN_AS" -- "$@"); }
else
    as_pg() { (cd / && "$@"); }
fi

up() { as_pg "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -t 2 >/dev/null 2>&1; }

stop() {
    if [ -f "$PG_DIR/data/postmaster.pid" ]; then
        as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 30 stop >&2 2>&1 \
            || as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop >&2 2>&1 || true
    fi
}

case "$ACTION" in
  stop) stop; rm -rf "$PG_DIR"; say "stopped"; exit 0 ;;
  status) up && { say "up on 127.0.0.1:$PG_PORT"; exit 0; }; say "down"; exit 1 ;;
  # The database-fault tests: an immediate shutdown is what a crash looks like to clients
  # (connections reset, no checkpoint); the data directory stays and recovery runs on resume.
  crash)
    [ -f "$PG_DIR/data/postmaster.pid" ] || fail "no server running in $PG_DIR"
    as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop >&2
    say "crashed (data kept in $PG_DIR)"; exit 0 ;;
  resume)
    [ -d "$PG_DIR/data" ] || fail "no data directory in $PG_DIR"
    as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start >&2 \
        || { tail -n 30 "$PG_DIR/server.log" >&2; fail "the server did not start"; }
    for _ in $(seq 1 60); do up && break; sleep 1; done
    up || fail "the server did not become ready"
    say "resumed on 127.0.0.1:$PG_PORT"; exit 0 ;;
  start) ;;
  *) fail "usage: $0 start|stop|status|crash|resume" ;;
esac

stop
up && fail "port $PG_PORT is taken by a server this script did not start; set PG_PORT"
rm -rf "$PG_DIR"; mkdir -p "$PG_DIR"
[ "$(id -u)" -eq 0 ] && chown "$RUN_AS" "$PG_DIR"
chmod 700 "$PG_DIR"
as_pg "$BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust --encoding=UTF8 --no-locale >"$PG_DIR/initdb.log" 2>&1 \
    || { cat "$PG_DIR/initdb.log" >&2; fail "initdb failed"; }
cat >> "$PG_DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
max_connections = $PG_MAX_CONNECTIONS
shared_buffers = 256MB
logging_collector = off
CONF
if [ "$PG_DURABLE" != 1 ]; then
    printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >> "$PG_DIR/data/postgresql.conf"
fi
as_pg "$BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start >&2 \
    || { tail -n 30 "$PG_DIR/server.log" >&2; fail "the server did not start"; }
for _ in $(seq 1 60); do up && break; sleep 1; done
up || fail "the server did not become ready"
say "ready on 127.0.0.1:$PG_PORT (stop: bash $0 stop)"
echo "postgres://postgres@127.0.0.1:${PG_PORT}/postgres"
