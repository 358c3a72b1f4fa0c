"""The fleet tests' checks over `egang bench serve --log` files (one CSV
line per request: bench/serve_load.h). Each command prints one line; the
exit status is 0 when the check holds, 1 when it does not (the line then
says why), 2 on bad usage.

  fleet.py summary CSV...                 the outcome counts
  fleet.py kill CSV KILLED T_KILL BOUND   every failure is a stream that
        had started on KILLED before T_KILL (Unix time) and broke after
        it, and there are at most BOUND of them (KILLED's in-flight gauge
        read just before the kill)
  fleet.py rolling CSV                    no request failed
  fleet.py saturated CSV...               every request ended in a 200
        stream, a 429 or a 503 (no transport error, so none ran into the
        load's --request-timeout: none hung; none broken), some were
        refused (429/503) and some served
  fleet.py affinity CSV METRICS_BEFORE METRICS_AFTER
        every conversation's turns reached one replica, and each replica's
        prefix cache saved at least the earlier turns' prompts of the
        later turns it served (METRICS_*: lines "rN HITS SAVED")
"""
import csv
import sys

FAILED = ("failed_connect", "failed_status", "failed_stream")


def rows(paths):
    out = []
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                r["start_s"] = float(r["start_s"])
                r["end_s"] = float(r["end_s"])
                r["status"] = int(r["status"])
                r["turn"] = int(r["turn"])
                r["prompt_tokens"] = int(r["prompt_tokens"])
                r["completion_tokens"] = int(r["completion_tokens"])
                out.append(r)
    return out


def counts(rs):
    c = {k: 0 for k in ("ok", "busy") + FAILED}
    for r in rs:
        c[r["outcome"]] += 1
    failed = sum(c[k] for k in FAILED)
    return ("requests %d ok %d busy %d failed %d (connect %d status %d stream %d)"
            % (len(rs), c["ok"], c["busy"], failed, c["failed_connect"],
               c["failed_status"], c["failed_stream"]), c, failed)


def summary(paths):
    print(counts(rows(paths))[0])
    return 0


def kill(path, killed, t_kill, bound):
    rs = rows([path])
    line, _, failed = counts(rs)
    t_kill, bound = float(t_kill), int(bound)
    bad = [r for r in rs if r["outcome"] in FAILED and not (
        r["outcome"] == "failed_stream" and r["header"] == killed and
        r["start_s"] < t_kill <= r["end_s"])]
    served_after = sum(1 for r in rs if r["header"] == killed and
                       r["outcome"] == "ok" and r["start_s"] > t_kill)
    print("%s; failed mid-stream on %s: %d (in flight there at the kill: %d); "
          "%s served %d of the load's requests after its restart"
          % (line, killed, failed - len(bad), bound, killed, served_after))
    for r in bad[:5]:
        print("  not a stream cut on %s at the kill: client %s request %s %s "
              "status %d replica '%s' %.3f..%.3f (kill %.3f)"
              % (killed, r["client"], r["request"], r["outcome"], r["status"],
                 r["header"], r["start_s"], r["end_s"], t_kill))
    return 0 if not bad and failed <= bound else 1


def rolling(path):
    line, _, failed = counts(rows([path]))
    print(line)
    return 0 if failed == 0 else 1


def saturated(paths):
    rs = rows(paths)
    line, c, failed = counts(rs)
    refused = [r for r in rs if r["status"] in (429, 503)]
    from_replicas = sum(1 for r in refused if r["header"])
    durs = sorted(r["end_s"] - r["start_s"] for r in refused) or [0.0]
    longest = max((r["end_s"] - r["start_s"] for r in rs), default=0.0)
    bad = [r for r in rs if r["outcome"] in FAILED and r["status"] != 503]
    print("%s; refused %d (429: %d, 503: %d; from a replica %d, from HAProxy %d), "
          "refusal time p50 %.3f s max %.3f s; longest request %.3f s"
          % (line, len(refused), sum(1 for r in refused if r["status"] == 429),
             sum(1 for r in refused if r["status"] == 503), from_replicas,
             len(refused) - from_replicas, durs[len(durs) // 2], durs[-1],
             longest))
    for r in bad[:5]:
        print("  not a 200/429/503 (a timeout is a hang): client %s request %s %s "
              "status %d" % (r["client"], r["request"], r["outcome"], r["status"]))
    return 0 if not bad and refused and c["ok"] else 1


def read_metrics(path):
    m = {}
    with open(path) as f:
        for line in f:
            name, hits, saved = line.split()
            m[name] = (int(hits), int(saved))
    return m


def affinity(path, before, after):
    rs = rows([path])
    line, _, failed = counts(rs)
    m0, m1 = read_metrics(before), read_metrics(after)
    ok = [r for r in rs if r["outcome"] == "ok"]
    by_session = {}
    for r in ok:
        by_session.setdefault(r["session"], []).append(r)
    split = [s for s, t in by_session.items() if len({r["header"] for r in t}) > 1]
    # the later turns each replica served, and what its prefix cache
    # should have saved for them: the previous turn's prompt at least (a
    # turn's prompt starts with its text; the last prompt position is
    # never taken from the cache), its answer too as a rule (whole: its
    # tokens re-read from text may split differently, so not asserted)
    later, expect, whole = {}, {}, {}
    for s, turns in by_session.items():
        turns.sort(key=lambda r: r["turn"])
        for prev, r in zip(turns, turns[1:]):
            if r["turn"] != prev["turn"] + 1:
                continue
            h = r["header"]
            later[h] = later.get(h, 0) + 1
            expect[h] = expect.get(h, 0) + prev["prompt_tokens"] - 1
            whole[h] = whole.get(h, 0) + prev["prompt_tokens"] + prev["completion_tokens"]
    rc = 0 if not split and later and failed == 0 else 1
    parts = []
    for name in sorted(m1):
        hits = m1[name][0] - m0.get(name, (0, 0))[0]
        saved = m1[name][1] - m0.get(name, (0, 0))[1]
        n, e, w = later.get(name, 0), expect.get(name, 0), whole.get(name, 0)
        parts.append("%s: later turns %d, hits +%d, tokens saved +%d (>= %d, "
                     "the previous turns' prompts; %.0f%% of them with their answers)"
                     % (name, n, hits, saved, e, 100.0 * saved / w if w else 0))
        if hits < n or saved < e:
            rc = 1
    print("%s; conversations %d, %d of them on more than one replica; %s"
          % (line, len(by_session), len(split), "; ".join(parts)))
    return rc


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip())
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "summary":
        return summary(args)
    if cmd == "kill" and len(args) == 4:
        return kill(*args)
    if cmd == "rolling" and len(args) == 1:
        return rolling(*args)
    if cmd == "saturated":
        return saturated(args)
    if cmd == "affinity" and len(args) == 3:
        return affinity(*args)
    print(__doc__.strip())
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
