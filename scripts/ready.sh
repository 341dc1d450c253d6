# Sourced by the benchmark scripts (after they cd to the repository):
#
#   . scripts/ready.sh
#   wait_ready http://127.0.0.1:8080 "$server_pid" "$OUT/server.log"          # up to 600 s
#   wait_ready http://127.0.0.1:8081 "$a $b" "$OUT/a/server.log $OUT/b/server.log" 900
#
# Returns once URL/readyz answers 200 (the read models have caught up with the log). Exits the
# script (1, the logs' last lines on stderr) when one of the PIDS exits first or SECS pass: a
# server that never became ready must not be measured as if it had. Also when what answers is
# another process on that port (a server left running): ours then failed to bind, and the
# benchmark would measure the stranger.

wait_ready() {
    local url="$1" pids="$2" logs="$3" secs="${4:-600}" pid log
    local deadline=$((SECONDS + secs))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if curl -fs "$url/readyz" >/dev/null 2>&1; then
            listens_for "$url" "$pids" && return 0
            printf '[ready] %s answers, but from a process not among %s (the port was taken)\n' "$url" "$pids" >&2
            for log in $logs; do tail -n 20 "$log" >&2 || true; done
            exit 1
        fi
        for pid in $pids; do
            if ! kill -0 "$pid" 2>/dev/null; then
                printf '[ready] process %s exited before %s was ready\n' "$pid" "$url" >&2
                for log in $logs; do tail -n 20 "$log" >&2 || true; done
                exit 1
            fi
        done
        sleep 0.5
    done
    printf '[ready] %s was not ready after %s s\n' "$url" "$secs" >&2
    for log in $logs; do tail -n 20 "$log" >&2 || true; done
    exit 1
}

# Whether one of PIDS holds the listening socket of URL's port (true when `ss` is missing:
# the check is then skipped).
listens_for() {
    local url="$1" pids="$2" port pid listeners
    command -v ss >/dev/null 2>&1 || return 0
    port="${url##*:}"
    port="${port%%/*}"
    listeners="$(ss -Hltnp "sport = :$port" 2>/dev/null)"
    for pid in $pids; do
        case "$listeners" in *"pid=$pid,"*) return 0 ;; esac
    done
    return 1
}
