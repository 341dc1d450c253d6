#!/usr/bin/env python3
"""The house, drawn from the source: which file of a crate uses which.

    python3 scripts/module-graph.py            # each crate: files in layers, cycles, arrows up
    python3 scripts/module-graph.py --check    # exit 1 on any cycle or arrow up (run by .ci/run)

An edge A -> B means a path in A's source (a `use`, or `crate::`/`super::`/`self::`/child path in
code) names an item of B's file. Two rules hold in every crate:

- no cycle between files;
- no arrow back up: a module never names an item of its parent (`lib.rs` or a `mod.rs`). A
  parent may re-export its children (`pub use`); the children then import from each other, never
  through the parent.

Unit tests (`tests.rs`, `tests/`, `#[cfg(test)] mod … { … }`) and macros invoked through the
crate root (`crate::name!`) are not edges. It also prints each crate's share of the code (source
lines outside tests): no crate holds more than a quarter.
"""
import os
import re
import sys

CRATES = ["domain", "sqlite", "eventlog", "conversation-flow", "workload", "otel", "projections", "api",
          "replay-tools", "load"]


def strip(s):
    """The source without comments and without the contents of string and char literals."""
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if s.startswith("/*", i):
            j = s.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "rb" and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', s[i:i + 12])
            if m:
                end = '"' + m.group(1)
                j = s.find(end, i + m.end())
                out.append('""')
                i = n if j < 0 else j + len(end)
                continue
        if c == '"':
            j = i + 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            out.append('""')
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(?:\\.[^']*|[^'\\])'", s[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def is_test(rel):
    return any(p == "tests" or p.endswith("_tests") or p == "testing" for p in rel)


def modules(src):
    """Module path (tuple) -> file, for the library (or the binary when there is no library)."""
    mods = {}
    has_lib = os.path.exists(os.path.join(src, "lib.rs"))
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if (rel == ["main"] and has_lib) or rel[0] == "bin":
                continue  # a binary next to a library is a crate of its own
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            mods[tuple(rel)] = path
    return mods


def split_top(s):
    parts, depth, cur = [], 0, ""
    for c in s:
        depth += (c == "{") - (c == "}")
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    return [p.strip() for p in parts + [cur] if p.strip()]


def use_paths(tree, prefix, out):
    m = re.match(r"^((?:\w+::)*)\{(.*)\}$", tree.strip(), re.S)
    if m:
        pre = prefix + [x for x in m.group(1).split("::") if x]
        for item in split_top(m.group(2)):
            use_paths(item, pre, out)
    else:
        leaf = re.sub(r"\s+as\s+\w+$", "", tree.strip())
        out.append(prefix + [x for x in leaf.split("::") if x])


def edges(src):
    mods = modules(src)
    graph = {m: set() for m in mods if not is_test(m)}
    for m in graph:
        text = strip(open(mods[m], encoding="utf-8").read())
        text = re.sub(r"#\[cfg\(test\)\]\s*(pub(\([\w:]+\))? )?mod \w+ \{.*", "", text, flags=re.S)
        children = {k[-1] for k in mods if len(k) == len(m) + 1 and k[:len(m)] == m}
        paths = []
        for u in re.finditer(r"\buse\s+([^;]+);", text):
            use_paths(u.group(1), [], paths)
        paths += [p.group(1).split("::") for p in
                  re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)(?!\w*!)", text)]
        paths += [[p.group(1)] for p in re.finditer(r"(?<![:\w])(\w+)::", text)
                  if p.group(1) in children]
        for path in paths:
            if path[0] == "crate":
                target = path[1:]
            elif path[0] == "super":
                base = list(m)
                while path and path[0] == "super":
                    base, path = base[:-1], path[1:]
                target = base + path
            elif path[0] == "self":
                target = list(m) + path[1:]
            elif path[0] in children:
                target = list(m) + path
            else:
                continue
            for k in range(len(target), -1, -1):
                t = tuple(target[:k])
                if t in mods:
                    if t != m and not is_test(t):
                        graph[m].add(t)
                    break
    return graph


def cycles(graph):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def name(m):
    return "::".join(m) or "(root)"


def layers(graph):
    """Files in layers: layer 0 uses no other file, layer n only files of layers < n."""
    depth = {}

    def d(v, seen=()):
        if v not in depth:
            depth[v] = 0 if v in seen else 1 + max((d(w, seen + (v,)) for w in graph[v]), default=-1)
        return depth[v]

    for v in graph:
        d(v)
    out = {}
    for v, k in depth.items():
        out.setdefault(k, []).append(name(v))
    return [sorted(out[k]) for k in sorted(out)]


def code_lines(crate):
    total = 0
    for dirpath, _, files in os.walk(os.path.join(crate, "src")):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), crate).split(os.sep)
            if f.endswith(".rs") and not is_test([p[:-3] if p.endswith(".rs") else p for p in rel]):
                total += sum(1 for _ in open(os.path.join(dirpath, f), encoding="utf-8"))
    return total


def main():
    check = "--check" in sys.argv
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bad = 0
    sizes = {c: code_lines(c) for c in CRATES}
    total = sum(sizes.values())
    for crate in CRATES:
        graph = edges(os.path.join(crate, "src"))
        cyc = cycles(graph)
        up = sorted((name(a), name(b)) for a in graph for b in graph[a]
                    if len(b) < len(a) and a[:len(b)] == b)
        bad += len(cyc) + len(up)
        print(f"{crate}: {len(graph)} files, {sizes[crate]} lines ({100 * sizes[crate] / total:.1f}%),"
              f" {len(cyc)} cycles, {len(up)} arrows up")
        for c in cyc:
            print("  cycle:", " ".join(name(x) for x in c))
        for a, b in up:
            print(f"  arrow up: {a} -> {b}")
        if not check:
            for k, layer in enumerate(layers(graph)):
                print(f"  layer {k}: {' '.join(layer)}")
    biggest = max(sizes, key=sizes.get)
    share = sizes[biggest] / total
    print(f"biggest crate: {biggest}, {100 * share:.1f}% of {total} lines")
    if share >= 0.25:
        bad += 1
    if check and bad:
        print("module graph: FAILED", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
