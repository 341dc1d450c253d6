# Sourced by the benchmark scripts (after they cd to the repository):
#
#   . scripts/ready.sh
#   wait_ready http://127.0.0.1:8080 "$server_pid" "$OUT/server.log"          # up to 600 s
#   wait_ready http://127.0.0.1:8081 "$a $b" "$OUT/a/server.log $OUT/b/server.log" 900
#
# Returns once URL/readyz answers 200 (the read models have caught up with the log). Exits the
# script (1, the logs' last lines on stderr) when one of the PIDS exits first or SECS pass: a
# server that never became ready must not be measured as if it had.

wait_ready() {
    local url="$1" pids="$2" logs="$3" secs="${4:-600}" pid log
    local deadline=$((SECONDS + secs))
    while [ "$SECONDS" -lt "$deadline" ]; do
        curl -fs "$url/readyz" >/dev/null 2>&1 && return 0
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
