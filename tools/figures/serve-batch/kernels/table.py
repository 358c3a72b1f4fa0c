#!/usr/bin/python3
"""ab.sh output -> per binary and batch size: wall tok/s and tok/s per CPU
second (the median of each run, then min/median/max over the rounds), and
each batch's ratio to batch 1 of the same binary (medians)."""
import re, statistics, sys
rows = {}
cur = None
for line in open(sys.argv[1]):
    m = re.match(r"== (\w+) round", line)
    if m:
        cur = m.group(1)
        continue
    m = re.match(r"batch +(\d+) width +1: +([\d.]+) tok/s.*per CPU second ([\d.]+)", line)
    if m and cur:
        rows.setdefault((cur, int(m.group(1))), []).append((float(m.group(2)), float(m.group(3))))
def mmm(v):
    return "%.1f/%.1f/%.1f" % (min(v), statistics.median(v), max(v))
print("| binary | batch | wall tok/s min/med/max | tok/s per CPU s min/med/max | CPU-s ratio to batch 1 |")
print("|---|---|---|---|---|")
for who in ("old", "new"):
    base = statistics.median(c for _, c in rows.get((who, 1), [(0, 1)]))
    for b in sorted(k[1] for k in rows if k[0] == who):
        v = rows[(who, b)]
        c = [x[1] for x in v]
        print("| %s | %d | %s | %s | %.2fx |" % (who, b, mmm([x[0] for x in v]), mmm(c),
                                                 statistics.median(c) / base))
