#!/usr/bin/env python3
"""The hostile-request probes of RELIABILITY.md ("Hostile requests"), against a fresh server.

    python3 scripts/hostile-probes.py <agentlog binary> <port> <label> [probe,probe,...]

Starts `<binary> serve` on a fresh SQLite log under a 6 GB address-space cap (prlimit), so a
probe that makes it allocate without bound kills the server, not the machine; fills one
operation with 500 events; sends each probe as user alice (the fragment bombs with no token)
while user bob asks `{ headPosition }`; prints the time, the answer's size and code, the
server's peak resident memory growth and bob's wait. Probes: bomb7 bomb8 bomb9 stateAt650
history300 pages7 streams. Python 3 standard library only.
"""
import json, os, subprocess, sys, time, threading, urllib.request, re, tempfile
binary, port, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
d = tempfile.mkdtemp(prefix=f"agentlog-probes-{label}-")
log = open(f"{d}/log", "w")
p = subprocess.Popen(["prlimit", "--as=6000000000", binary, "serve", "--bind", f"127.0.0.1:{port}", "--database", f"sqlite:{d}/a.db", "--data-dir", d], stderr=log, stdout=log)
time.sleep(3)
admin = open(f"{d}/agentlog-admin-token").read().strip()
URL = f"http://127.0.0.1:{port}/graphql"
def gql(q, tok=None, v=None, timeout=300):
    body = json.dumps({"query": q, "variables": v or {}}).encode()
    req = urllib.request.Request(URL, data=body, headers={"content-type": "application/json", **({"authorization": "Bearer " + tok} if tok else {})})
    t = time.time()
    try:
        raw = urllib.request.urlopen(req, timeout=timeout).read()
    except Exception as e:
        return time.time() - t, 0, {"error": str(e)}
    return time.time() - t, len(raw), json.loads(raw)
def hwm():
    s = open(f"/proc/{p.pid}/status").read()
    return int(re.search(r"VmHWM:\s+(\d+)", s).group(1)) // 1024
def code(r):
    try: return r["errors"][0]["extensions"]["code"]
    except Exception: return "ok" if "data" in r else str(r)[:80]
alice = gql('mutation { createToken(userId: "alice") { secret } }', admin)[2]["data"]["createToken"]["secret"]
bob = gql('mutation { createToken(userId: "bob") { secret } }', admin)[2]["data"]["createToken"]["secret"]
gql('mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }', alice, {"i": {"operationId": "op1", "kind": "TASK", "agentId": "inbox"}})
lease = gql('mutation { claimOperation(id: "op1", workerId: "w1", leaseSecs: 3600) { lease { token } } }', alice)[2]["data"]["claimOperation"]["lease"]["token"]
for i in range(498):
    gql('mutation($l: String!) { reportStep(id: "op1", leaseToken: $l, phase: ACTING, toolCalls: [{id: "c1", name: "search"}]) { position } }', alice, {"l": lease})
def frag(n):
    q = "query { ...F%d } fragment F0 on Query { __typename }" % (n - 1)
    for i in range(1, n):
        q += " fragment F%d on Query { %s }" % (i, " ".join("...F%d" % (i - 1) for _ in range(10)))
    return q
def probe(name, q, tok):
    if only and name not in only: return
    h0 = hwm()
    side = {}
    def other():
        time.sleep(0.2)
        side["t"], _, side["r"] = gql("{ headPosition }", bob)
    th = threading.Thread(target=other); th.start()
    t, n, r = gql(q, tok)
    th.join()
    print(f"{label}\t{name}\t{t*1000:.0f} ms\t{n} bytes\t{code(r)}\tpeak +{hwm()-h0} MiB\tbob's headPosition {side['t']*1000:.0f} ms", flush=True)
probe("bomb7", frag(7), None)
probe("bomb8", frag(8), None)
probe("stateAt650", "{ %s }" % " ".join('a%d: operation(id: "op1") { stateAt(position: 300) { status } }' % i for i in range(650)), alice)
probe("history300", "{ %s }" % " ".join('a%d: operation(id: "op1") { history(first: 500) { position eventType payload } }' % i for i in range(300)), alice)
if not only or "pages7" in only:
    # 500 runs in all, op1 among them with its 500 events: seven aliased pages of 500 rows, each
    # row replaying its run and reading its history.
    for i in range(499):
        gql('mutation($i: StartOperationInput!) { startOperation(input: $i) { position } }', alice, {"i": {"operationId": "p%d" % i, "kind": "TASK", "agentId": "inbox"}})
    probe("pages7", "{ %s }" % " ".join('a%d: operations(first: 500) { nodes { stateAt(position: 1000000) { status } history(first: 500) { payload } } }' % i for i in range(7)), alice)
if not only or "streams" in only:
    gql('mutation { createConversation(topicId: "m") { position } }', alice)
    gql('mutation { createConversation(topicId: "b") { position } }', bob)
    t0 = time.time(); codes = []
    for k in range(5):
        q = "mutation { %s }" % " ".join('d%d: publishMessageDelta(topicId: "m", messageId: "x%d-%d", delta: "x")' % (i, k, i) for i in range(2000))
        t, n, r = gql(q, alice); codes.append(code(r))
    t, n, r = gql('mutation { publishMessageDelta(topicId: "b", messageId: "y", delta: "x") }', bob)
    print(f"{label}\tstreams10k\t{(time.time()-t0)*1000:.0f} ms\t{codes}\tbob's publish: {code(r)}", flush=True)
if not only or "bomb9" in only:
    probe("bomb9", frag(9), None)
p.terminate(); p.wait()
