#!/usr/bin/env bash
# The soak (`make soak`): one `egang serve --parallel 8 --kv-mb 8`
# (stories260K from models/) under SECONDS of mixed clients, its resources
# sampled; fails when they are not flat after the warm-up. --kv-mb 8 (the
# 8 sequences' whole contexts take about 5 MiB) lets the prefix cache
# reach its budget within the warm-up: with the default budget (a quarter
# of the RAM) it keeps growing, as designed, for hours.
#   tools/fleet/soak.sh [SECONDS [DIR]]     (default 600, doc/soak)
# The clients, all at once for SECONDS:
#   - normal: `egang bench serve`, 3 clients holding 3-turn conversations
#     of streamed completions (prefix-cache hits) and 3 clients of
#     streamed completions with prompts of their own (--vary: misses that
#     fill the cache); every request must succeed (a 200 with a complete
#     stream, or a 429);
#   - hostile and disconnecting (tools/fleet/soak_clients.py): malformed
#     requests, bodies over the cap, a Content-Length with nothing behind
#     it, oversized headers, bad chunking; streams dropped after the first
#     event, requests dropped before the answer or halfway through their
#     headers, resets; 20 slowloris connections (a byte every 2 s for 20 s
#     each, then another).
# Every SOAK_INTERVAL seconds (2) the server's VmRSS, its threads and its
# open file descriptors (/proc/PID) and its egang_requests_in_flight are
# appended to DIR/soak.csv (t_s, phase, rss_kb, threads, fds, in_flight;
# phase: idle-before, load, idle-after). Judged (DIR/soak.txt, last line
# "soak: PASS ..." or "soak: FAIL ..."):
#   - after the warm-up (the first 20% of the load, at least 20 s; the
#     RSS settles in about two minutes here, so a soak much shorter than
#     the default 600 s fails on an RSS still growing) and
#     before the clients' end, the mean of the last third of the samples
#     is within 5% of the first third's, for each of RSS, threads and fds
#     (threads and fds: or within 2, one connection more or less);
#   - idle after the load, the threads and fds are back to what they were
#     idle before it (every connection's thread and socket gone);
#   - the normal clients had no failed request, the server answered
#     /health throughout and exited 0 on SIGTERM.
# DIR/soak.png plots the three (tools/fleet/soak.gp, gnuplot). DIR also
# gets the command, the host's CPU (lscpu) and the clients' summaries.
set -u
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//p}' "$0"
	exit 0
fi
secs=${1:-600}
dir=${2:-doc/soak}
dir_arg=$dir
[[ $secs =~ ^[0-9]+$ && $secs -ge 30 ]] || { echo "soak.sh: SECONDS '$secs' is not a whole number of at least 30" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
EGANG=${EGANG:-$root/egang}
interval=${SOAK_INTERVAL:-2}
mkdir -p "$dir" || exit 2
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d /tmp/egang-soak-XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

port=$(/usr/bin/python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$EGANG" serve -m "$root/models/stories260K.bin" -z "$root/models/tok512.bin" \
	--parallel 8 --kv-mb 8 --port "$port" -q >"$tmp/serve.log" 2>&1 &
spid=$!
pids+=("$spid")
for _ in $(seq 150); do curl -sf --max-time 1 "$url/health" >/dev/null && break; sleep 0.2; done
curl -sf --max-time 1 "$url/health" >/dev/null || { echo "soak: the server did not come up: $(tail -2 "$tmp/serve.log")" >&2; exit 1; }
# one generation first: the gang's threads exist before the idle samples
curl -s --max-time 30 "$url/v1/completions" -d '{"prompt":"Once","max_tokens":8}' >/dev/null

t0=$(date +%s.%N)
# since: seconds since t0
since() { awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'; }
health_fail=0
# sample PHASE: one CSV line
sample() {
	local t rss thr fds infl
	t=$(since)
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$spid/status" 2>/dev/null)
	thr=$(awk '/^Threads:/ { print $2 }' "/proc/$spid/status" 2>/dev/null)
	fds=$(ls "/proc/$spid/fd" 2>/dev/null | wc -l)
	infl=$(curl -s --max-time 5 "$url/metrics" | awk '$1 == "egang_requests_in_flight" { print $2 }')
	curl -sf --max-time 10 "$url/health" >/dev/null || health_fail=$((health_fail + 1))
	printf '%.1f,%s,%s,%s,%s,%s\n' "$t" "$1" "${rss:-0}" "${thr:-0}" "$fds" "${infl:--1}" >>"$dir/soak.csv"
}

echo "t_s,phase,rss_kb,threads,fds,in_flight" >"$dir/soak.csv"
for _ in 1 2 3; do sample idle-before; sleep "$interval"; done

"$EGANG" bench serve --url "$url" --clients 3 --seconds "$secs" --max-tokens 48 --turns 3 \
	--prompt "The little dog ran to the park." >"$tmp/turns.out" 2>&1 &
l1=$!
"$EGANG" bench serve --url "$url" --clients 3 --seconds "$secs" --max-tokens 32 --vary \
	--prompt "Once upon a time" >"$tmp/vary.out" 2>&1 &
l2=$!
/usr/bin/python3 "$root/tools/fleet/soak_clients.py" 127.0.0.1 "$port" "$secs" 20 >"$tmp/clients.out" 2>&1 &
l3=$!
pids+=("$l1" "$l2" "$l3")
t_load=$(since)
while kill -0 "$l1" 2>/dev/null || kill -0 "$l2" 2>/dev/null || kill -0 "$l3" 2>/dev/null; do
	sample load
	sleep "$interval"
done
wait "$l1"; rc1=$?
wait "$l2"; rc2=$?
wait "$l3"
t_idle=$(since)
# idle: the server closes what the clients left (at most its --timeout)
for _ in $(seq 40); do
	[[ $(ls "/proc/$spid/fd" | wc -l) -le $(awk -F, '$2 == "idle-before" { print $5 }' "$dir/soak.csv" | tail -1) ]] && break
	sleep 1
done
for _ in 1 2 3; do sample idle-after; sleep "$interval"; done
kill -TERM "$spid"
wait "$spid"
src=$?

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
{
	echo "command: make soak SOAK_SECONDS=$secs SOAK_DIR=$dir_arg (tools/fleet/soak.sh $secs $dir_arg)"
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ), host: $cpu, $(nproc) CPUs"
	echo "server: egang serve -m models/stories260K.bin -z models/tok512.bin --parallel 8 --kv-mb 8"
	echo "load from $t_load s to $t_idle s (the CSV's clock); samples every $interval s"
	grep -h '^bench serve' "$tmp/turns.out" | sed 's/^/normal (3-turn conversations): /'
	grep -h '^bench serve' "$tmp/vary.out" | sed 's/^/normal (prompts of their own): /'
	grep -hv '^bench serve' "$tmp/turns.out" "$tmp/vary.out" | head -3
	cat "$tmp/clients.out"
	echo "server: /health failed $health_fail times; exit status $src on SIGTERM"
} >"$dir/soak.txt"
/usr/bin/python3 - "$dir/soak.csv" "$t_load" "$secs" "$rc1" "$rc2" "$health_fail" "$src" >>"$dir/soak.txt" <<'PY'
import csv, sys
path, t_load, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rc1, rc2, hfail, src = (int(a) for a in sys.argv[4:8])
rows = list(csv.DictReader(open(path)))
warm = t_load + max(20.0, 0.2 * secs)
# the clients stop at t_load + secs: the samples of their wind-down are out
load = [r for r in rows if r["phase"] == "load" and
        warm <= float(r["t_s"]) < t_load + secs - 1]
before = [r for r in rows if r["phase"] == "idle-before"]
after = [r for r in rows if r["phase"] == "idle-after"]
bad, parts = [], []
if len(load) < 6:
    bad.append("only %d samples after the warm-up" % len(load))
else:
    k = len(load) // 3
    for col, unit, floor in (("rss_kb", "kB", 0), ("threads", "", 2), ("fds", "", 2)):
        v = [float(r[col]) for r in load]
        a, b = sum(v[:k]) / k, sum(v[-k:]) / k
        pct = 100.0 * (b - a) / a if a else 0.0
        parts.append("%s %.0f -> %.0f%s (%+.1f%%; min %.0f max %.0f)"
                     % (col, a, b, unit, pct, min(v), max(v)))
        if abs(b - a) > max(0.05 * a, floor):
            bad.append("%s not flat: %.0f -> %.0f (%+.1f%%)" % (col, a, b, pct))
for col in ("threads", "fds"):
    b0, a0 = int(before[-1][col]), int(after[-1][col])
    parts.append("idle %s %d before, %d after" % (col, b0, a0))
    if a0 > b0:
        bad.append("idle %s %d after the load, %d before" % (col, a0, b0))
if rc1 or rc2:
    bad.append("normal clients failed (bench serve exit %d, %d)" % (rc1, rc2))
if hfail:
    bad.append("/health failed %d times" % hfail)
if src:
    bad.append("the server exited %d on SIGTERM" % src)
print("after the warm-up (%.0f s), first third -> last third: %s"
      % (warm - t_load, "; ".join(parts)))
print("soak: %s" % ("PASS" if not bad else "FAIL: " + "; ".join(bad)))
PY
if command -v gnuplot >/dev/null; then
	gnuplot -c "$root/tools/fleet/soak.gp" "$dir" "$t_load" "$secs" "$secs s, $cpu" 2>>"$dir/soak.txt" ||
		echo "soak: gnuplot failed (DIR/soak.png not written)" >>"$dir/soak.txt"
fi
cat "$dir/soak.txt"
grep -q '^soak: PASS' "$dir/soak.txt"
