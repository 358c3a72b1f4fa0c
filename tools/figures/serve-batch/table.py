#!/usr/bin/python3
"""Summarizes DIR/raw.txt (run.sh's lines, e.g. doc/serve-batch/raw.txt)
into DIR/table.md (min / median / max over the repetitions) and
DIR/plot.dat, then DIR/plot.png with gnuplot: aggregate tok/s and TTFT p50
against streams.
usage: tools/figures/serve-batch/table.py DIR"""
import os, re, statistics, subprocess, sys

d = sys.argv[1]
rows = {}
for line in open(os.path.join(d, "raw.txt")):
    m = re.match(r"(\S+) load=(\S+) maxtok=\d+ parallel=(\d+) streams=(\d+) rep=\d+ "
                 r"loadavg=(\S+) \| (.*)", line)
    if not m or "bench serve:" not in m.group(6):
        continue
    model, kind, par, streams, load, rest = m.groups()
    model = model + " " + kind
    f = dict(re.findall(r"([a-z_/0-9]+) ([-0-9.]+)", rest))
    key = (model, int(par), int(streams))
    rows.setdefault(key, []).append({
        "tok": float(f["tok/s"]), "per": float(f["per_stream_tok/s"]),
        "p50": float(f["ttft_p50"]), "p99": float(f["ttft_p99"]),
        "qw": float(f["queue_wait"]), "rss": float(rest.split("rss_end ")[1].split()[0]),
        "req": int(f["requests"]), "load": float(load)})

def mmm(vals, fmt):
    v = sorted(vals)
    return "/".join(fmt % x for x in (v[0], statistics.median(v), v[-1]))

out = ["| model | server | streams | aggregate tok/s | per-stream tok/s | TTFT p50 ms | TTFT p99 ms | queue wait ms (mean) | RSS end MB | requests | load avg |",
       "|---|---|---|---|---|---|---|---|---|---|---|"]
dat = {}
for key in sorted(rows):
    model, par, s = key
    r = rows[key]
    out.append("| %s | --parallel %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        model, par, s, mmm([x["tok"] for x in r], "%.2f"), mmm([x["per"] for x in r], "%.2f"),
        mmm([x["p50"] for x in r], "%.0f"), mmm([x["p99"] for x in r], "%.0f"),
        mmm([x["qw"] for x in r], "%.0f"), mmm([x["rss"] for x in r], "%.0f"),
        mmm([x["req"] for x in r], "%d"), mmm([x["load"] for x in r], "%.1f")))
    if par > 1:
        dat.setdefault(model, []).append((s, statistics.median([x["tok"] for x in r]),
                                          statistics.median([x["p50"] for x in r]) / 1e3))
# ratios against one stream of the same server and of --parallel 1
for model in sorted({k[0] for k in rows}):
    base = rows.get((model, 1, 1))
    one = rows.get((model, 16, 1))
    for s in (1, 4, 8, 16):
        r = rows.get((model, 16, s))
        if r and one:
            med = statistics.median([x["tok"] for x in r])
            txt = "%s: %d streams: %.2fx one stream of --parallel 16" % (
                model, s, med / statistics.median([x["tok"] for x in one]))
            if base:
                txt += ", %.2fx --parallel 1" % (med / statistics.median([x["tok"] for x in base]))
            out.append(("\n" if out[-1].startswith("|") else "") + "- " + txt)
open(os.path.join(d, "table.md"), "w").write("\n".join(out) + "\n")
with open(os.path.join(d, "plot.dat"), "w") as f:
    for model, pts in sorted(dat.items()):
        f.write("# %s: streams aggregate_tok/s ttft_p50_s\n" % model)
        for p in sorted(pts):
            f.write("%d %.3f %.3f\n" % p)
        f.write("\n\n")
names = sorted(dat)
def series(col):
    return ", ".join('"plot.dat" index %d using 1:%d with linespoints title "%s"' % (i, col, n)
                     for i, n in enumerate(names))
gp = """set terminal pngcairo size 1100,440
set output "plot.png"
set multiplot layout 1,2 title "egang serve --parallel 16, 2 cores, q8_0 (median of reps)"
set xlabel "concurrent streams"
set xtics (1, 4, 8, 16)
set grid
set key top left
set ylabel "aggregate tok/s"
set logscale y
plot %s
set ylabel "TTFT p50 (s)"
plot %s
unset multiplot
""" % (series(2), series(3))
subprocess.run(["gnuplot"], input=gp.encode(), cwd=d, check=True)
print("\n".join(out))
