#!/usr/bin/env python3
"""Read latency of a running server, as a client sees it: each query sent N times in turn over
one HTTP connection, p50 / p99 / max of the wall time per request (BENCHMARKS.md, "Reads at size").

    python3 scripts/query-latency.py http://127.0.0.1:8080 ADMIN_TOKEN [USER_TOKEN] [N]

The queries: an operations page, the same with each operation's steps (one request, 21 queries
of the read models), and the analytics report by day × agent × model, as the admin (every user)
and, given a second token, as that user.
"""
import http.client
import json
import sys
import time
import urllib.parse

QUERIES = {
    "operations page (50)": "{ operations(first: 50) { edges { node { id status kind agentId stepCount totalTokens "
    "costMicros createdAt } } pageInfo { hasNextPage endCursor } } }",
    # 21 read-model queries in one request: the page, then each operation's steps.
    "operations page (20) with steps (10)": "{ operations(first: 20) { nodes { id stepCount "
    "steps(first: 10) { nodes { stepIndex phase totalTokens } } } } }",
    "analytics by day × agent × model": "{ analytics(input: {granularity: DAY, groupBy: [AGENT, MODEL]}) "
    "{ total { runs costMicros duration { p50Ms p95Ms p99Ms } } buckets { bucketStart agentId model figures { runs } } } }",
}


def measure(conn, token, query, n):
    body = json.dumps({"query": query})
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    times, size = [], 0
    for _ in range(n):
        start = time.perf_counter()
        conn.request("POST", "/graphql", body, headers)
        answer = conn.getresponse().read()
        times.append((time.perf_counter() - start) * 1000)
        reply = json.loads(answer)
        if reply.get("errors"):
            raise SystemExit(f"{query}: {reply['errors']}")
        size = len(answer)
    times.sort()
    pick = lambda p: times[min(len(times) - 1, int(round(p / 100 * (len(times) - 1))))]
    return pick(50), pick(99), times[-1], size


def main():
    url, admin = sys.argv[1], sys.argv[2]
    user = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port or 80, timeout=120)
    print(f"{'query':<40} {'as':<6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'bytes':>9}")
    for name, query in QUERIES.items():
        for who, token in (("admin", admin), ("user", user)):
            if token is None:
                continue
            measure(conn, token, query, 2)  # warm the connection and the caches
            p50, p99, worst, size = measure(conn, token, query, n)
            print(f"{name:<40} {who:<6} {p50:>8.1f} {p99:>8.1f} {worst:>8.1f} {size:>9}")


if __name__ == "__main__":
    main()
