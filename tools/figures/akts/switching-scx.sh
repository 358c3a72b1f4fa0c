#!/usr/bin/env bash
# make scx-switching: the switching experiment on the sched_ext backend in
# the QEMU guest (TCG, -smp 4), every arm (tests/scx/guest.sh,
# switching_full), then its files on the host: the guest's CSVs into
# doc/akts/switching-scx/, its lines into doc/akts/switching-scx.txt and
# the plot doc/akts/switching-scx.png (gnuplot switching-scx.gp, beside
# this script).
# usage: tools/figures/akts/switching-scx.sh BUILD_DIR (the make SCX=1 build)
set -euo pipefail
cd "$(dirname "$0")/../../.."
b=$1
doc=doc/akts
t0=$SECONDS
rc=0
SCX_GUEST_ARGS="SCX_ONLY_SWITCHING=1 SCX_SWITCHING=1 ${SCX_GUEST_ARGS:-}" \
	tests/scx/run.sh "$b" > "$b/scx-switching.out" 2>&1 || rc=$?
log=$b/scx-test/serial.log.txt
mkdir -p "$doc/switching-scx"
for f in switching.csv timeline.csv requests.csv; do
	sed -n "/^BEGIN-FILE: $f\$/,/^END-FILE: $f\$/p" "$log" |
		sed '1d;$d' > "$doc/switching-scx/$f"
done
{
	echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)," \
	     "EMULATED: QEMU TCG guest, 4 vCPUs, on a $(nproc)-CPU host (load: $(cut -d' ' -f1-3 /proc/loadavg))"
	echo "# command: make scx-switching (tools/figures/akts/switching-scx.sh; in the guest, switching_full"
	echo "# of tests/scx/guest.sh: egang bench switching --backend scx, every arm)"
	grep -E '^(PASS|FAIL|SKIP|FIGURE|INFO):' "$log" || true
	echo "# guest run: $((SECONDS - t0)) s wall, run.sh exit $rc"
} > "$doc/switching-scx.txt"
if [[ -s $doc/switching-scx/timeline.csv ]] && command -v gnuplot > /dev/null; then
	gnuplot tools/figures/akts/switching-scx.gp
fi
grep -E '^(FIGURE: .*bench switching|PASS|FAIL)' "$doc/switching-scx.txt" || true
tail -n 1 "$b/scx-switching.out"
exit $rc
