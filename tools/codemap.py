#!/usr/bin/python3
"""codemap: the shape of egang's source, for reviews and doc/ARCHITECTURE.md.

  tools/codemap.py files [N]        the N largest files under src/ (lines)
  tools/codemap.py functions [N]    the N largest functions (lines, ctags)
  tools/codemap.py includes DIR...  which project headers each file of DIR
                                    includes
  tools/codemap.py calls DIR...     the file-to-file call graph inside the
                                    DIRs (gcc -fcallgraph-info), each edge
                                    with its call count; pairs of files that
                                    call each other both ways are listed last
  tools/codemap.py check            the layering rules that doc/ARCHITECTURE.md
                                    states; prints each violation, exits 1
                                    when there is one

Run from the repository root. Needs gcc and universal-ctags (functions).
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

# The layers, lowest first: a file may include headers of its own layer and
# of the layers before it (doc/ARCHITECTURE.md, "Layers").
LAYERS = ["base", "kernels", "model", "gang", "policy", "scx", "engine",
          "server", "bench", "cli"]
# The server's stages, first to last, by file name prefix: a stage calls
# only the stages after it. server.c is the lifecycle (new, start, stop,
# free) above the pipeline; http* the transport; api* request validation
# and response formatting; sched* the slots, queue and batch steps;
# metrics* and buf* the leaves every stage may call.
SERVER_STAGES = ["server", "http", "api", "sched", "metrics", "buf"]
CLI_MAX_LINES = 250

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def src_files(dirs=None, exts=(".c", ".h")):
    out = []
    for d in dirs or sorted(glob.glob("src/*")):
        for f in sorted(glob.glob(os.path.join(d, "*"))):
            if f.endswith(exts):
                out.append(f)
    return out


def lines(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return sum(1 for _ in fh)


def cmd_files(n=20):
    rows = sorted(((lines(f), f) for f in src_files()), reverse=True)
    for k, f in rows[:n]:
        print(f"{k:6d}  {f}")


def functions():
    """(lines, file, name) for every function defined under src/."""
    out = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+ne", "--kinds-C=f",
         "-R", "-f", "-", "src"], capture_output=True, text=True, check=True)
    rows = []
    for ln in out.stdout.splitlines():
        t = json.loads(ln)
        if t.get("kind") == "function" and "end" in t:
            rows.append((t["end"] - t["line"] + 1, t["path"], t["name"]))
    return rows


def cmd_functions(n=20):
    for k, f, name in sorted(functions(), reverse=True)[:n]:
        print(f"{k:6d}  {f}:{name}")


def cmd_includes(dirs):
    for f in src_files(dirs):
        with open(f, encoding="utf-8") as fh:
            inc = [i for i in INCLUDE.findall(fh.read()) if "/" in i]
        print(f"{f}: {' '.join(inc)}")


def call_graph(dirs):
    """{(caller file, callee file): calls} between the .c files of dirs."""
    cfiles = [f for f in src_files(dirs, (".c",))]
    defs, edges = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for i, c in enumerate(cfiles):
            obj = os.path.join(tmp, f"{i}.o")
            r = subprocess.run(
                ["gcc", "-std=gnu11", "-O0", "-Isrc", "-D_GNU_SOURCE",
                 "-fcallgraph-info", "-c", c, "-o", obj,
                 "-dumpdir", tmp + f"/{i}-"], capture_output=True, text=True)
            if r.returncode != 0:
                first = next((ln for ln in r.stderr.splitlines()
                              if "error" in ln), r.stderr.strip())
                sys.exit(f"codemap: gcc cannot compile {c}: {first}")
        for ci in glob.glob(os.path.join(tmp, "*.ci")):
            with open(ci) as fh:
                txt = fh.read()
            # a node without "shape : ellipse" is defined in this unit; its
            # label's second line is "file:line:col"
            for title, label, rest in re.findall(
                    r'node: \{ title: "([^"]+)" label: "([^"]+)"([^}]*)\}', txt):
                parts = label.split("\\n")
                if "shape" not in rest and len(parts) > 1:
                    defs.setdefault(title, parts[1].split(":")[0])
            # the edge's label is the call site, "file:line:col"
            for dst, site in re.findall(
                    r'edge: \{ sourcename: "[^"]+" targetname: "([^"]+)" '
                    r'label: "([^"]+)"', txt):
                edges.append((site.split(":")[0], dst))
    graph = collections.Counter()
    for sf, callee in edges:
        df = defs.get(callee)
        if df and df != sf and df in cfiles:
            graph[(sf, df)] += 1
    return graph


def cmd_calls(dirs):
    g = call_graph(dirs)
    for (a, b), k in sorted(g.items()):
        print(f"{a} -> {b} ({k})")
    both = sorted({tuple(sorted(e)) for e in g if (e[1], e[0]) in g})
    for a, b in both:
        print(f"TWO-WAY: {a} <-> {b}")


def layer_of(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "src" else None


def stage_of(path):
    base = os.path.basename(path).split(".")[0]
    for s in SERVER_STAGES:
        if base == s or base.startswith(s + "_"):
            return s
    return None


# The rules of `check`, by name: each violation is printed as
# "RULE: what is wrong", each rule without one as "ok RULE".
RULES = ["layers", "no-shell", "cli-size", "server-one-way"]


def violations():
    """(rule, message) for every violation of the layering rules."""
    bad = []
    for f in src_files():
        lf = layer_of(f)
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            li = inc.split("/")[0] if "/" in inc else None
            if li in LAYERS and lf in LAYERS and \
                    LAYERS.index(li) > LAYERS.index(lf):
                bad.append(("layers", f"{f} includes {inc}, a layer after {lf}"))
        if re.search(r"\b(system|popen)\s*\(", text):
            bad.append(("no-shell", f"{f} calls system() or popen()"))
        if lf == "cli" and f.endswith(".c") and lines(f) > CLI_MAX_LINES:
            bad.append(("cli-size", f"{f} has {lines(f)} lines, over {CLI_MAX_LINES}"))
    g = call_graph(["src/server"])
    for (a, b) in sorted(g):
        sa, sb = stage_of(a), stage_of(b)
        if (b, a) in g and a < b:
            bad.append(("server-one-way", f"{a} and {b} call each other"))
        if sa in SERVER_STAGES and sb in SERVER_STAGES and \
                SERVER_STAGES.index(sb) < SERVER_STAGES.index(sa):
            bad.append(("server-one-way", f"{a} ({sa}) calls up into {b} ({sb})"))
    return bad


def cmd_check():
    bad = violations()
    for rule in RULES:
        mine = [m for r, m in bad if r == rule]
        for m in mine:
            print(f"{rule}: {m}")
        if not mine:
            print(f"ok {rule}")
    print(f"codemap check: {len(bad)} violation(s)")
    return 1 if bad else 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    cmd, rest = argv[1], argv[2:]
    if cmd == "files":
        cmd_files(int(rest[0]) if rest else 20)
    elif cmd == "functions":
        cmd_functions(int(rest[0]) if rest else 20)
    elif cmd == "includes" and rest:
        cmd_includes(rest)
    elif cmd == "calls" and rest:
        cmd_calls(rest)
    elif cmd == "check":
        return cmd_check()
    else:
        print(f"codemap: unknown command or missing DIR: {' '.join(argv[1:])}"
              " (see --help)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
