#!/bin/sh
# /init of the sched_ext test guest (tests/scx/run.sh boots it in QEMU).
# Prints PASS:/FAIL: lines and FIGURE: lines on the serial console, then
# "scx-guest: done" and powers off. busybox sh: no bash-isms.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/shm /sys/fs/bpf
mount -t tmpfs tmp /tmp
mount -t tmpfs shm /dev/shm
mount -t bpf bpf /sys/fs/bpf
export XDG_RUNTIME_DIR=/tmp
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu

MIN=${SCX_MIN_CALLS:-60000}
# seconds since boot (CLOCK_BOOTTIME) for the phases' time limits: the
# guest's wall clock has jumped by a day mid-run under TCG, which ended a
# phase at once
now() { cut -d. -f1 /proc/uptime; }
M="-m /models/stories260K.bin -z /models/tok512.bin"
GEN="egang generate $M -p Once -n 48 -s 7 --no-echo -q"
# the gang's runs read the same index from the control word (as serve
# --backend scx does): user space picks the slots, the kernel schedules them
CTL=/tmp/ctl
STATE=/sys/kernel/sched_ext/state
# a user library: one valid but wrong record for this load (throughput
# share, long tenant slices, polite) with an in-kernel guard on the gang's
# run-queue wait; appended after the built-ins, so their indices stay
KG=/tmp/kg.ini
printf '[kg_wrong]\nreserved = 3\nkguard_wait_p99_us = 3000\nkguard_windows = 3\nkguard_window_ms = 500\n' > $KG
PCTL="--control $CTL --policies $KG"

pass() { echo "PASS: scx: $*"; }
fail() { echo "FAIL: scx: $*"; }
check() { # check NAME CMD...
	local what=$1; shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
	echo "scx-guest: done"
	sync
	# reboot, not poweroff: this kernel has no power-off method (poweroff
	# halts and QEMU would sit until its timeout), and with -no-reboot
	# QEMU exits on a reboot. run.sh also ends QEMU once it reads "done".
	reboot -f
	sleep 5
	poweroff -f
}
field() { # field SLOT KEY: a number from `egang scx status`
	egang scx status 2>/dev/null | grep "^slot=$1 " | tr ' ' '\n' |
		grep "^$2=" | cut -d= -f2
}

# the switching experiment on the kernel path: serve --backend scx,
# antagonists in SCHED_EXT, the controllers writing the one index. `make
# test-scx` runs a brief oracle run (a test: the kernel path works end to
# end); SCX_SWITCHING=1 (make scx-switching) the figure, every arm
switching() { # switching LABEL SECONDS ARGS...
	local label=$1 limit=$2 rc t0
	shift 2
	if [ ! -e /proc/net/tcp ]; then
		fail "switching (scx, $label): this kernel has no TCP/IP (CONFIG_INET); serve cannot listen"
		return
	fi
	ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up
	rm -rf /tmp/sw
	t0=$(now)
	timeout "$limit" egang bench switching --backend scx \
		-m /models/stories260K.bin -z /models/tok512.bin --rates 1,6,1 \
		--burns-per-core 1 --no-plot --out /tmp/sw "$@" > /tmp/sw.txt 2>&1
	rc=$?
	echo "INFO: bench switching ($label) exit $rc in $(($(now) - t0)) s"
	check "switching (scx, $label): exit 0" [ $rc -eq 0 ]
	grep '^bench switching' /tmp/sw.txt | sed 's/^/FIGURE: (under QEMU TCG emulation) /'
	check "switching (scx, $label): the oracle's summary says backend=scx" \
		grep -q 'arm oracle.*backend=scx' /tmp/sw.txt
	# the antagonists' work, in the phases and in the idle baselines
	check "switching (scx, $label): antagonist work measured" \
		sh -c "awk -F, 'NR > 1 && \$1 == \"oracle\" && \$10 > 0 && \$11 > 0' /tmp/sw/switching.csv | grep -q ."
	for f in switching.csv timeline.csv requests.csv; do
		echo "BEGIN-FILE: $f"; cat /tmp/sw/$f 2>/dev/null; echo "END-FILE: $f"
	done
	[ -s /tmp/sw/switching.csv ] || tail -n 20 /tmp/sw/logs/* 2>/dev/null | sed 's/^/INFO: log: /'
}
switching_brief() {
	switching brief 300 --arms oracle --reps 1 --phase-seconds 2,1,2 \
		--max-tokens 8 --drain-seconds 20
}
switching_full() {
	switching full ${SCX_SWITCHING_S:-3000} --arms latency,throughput,oracle,bandit,agent \
		--reps ${SCX_SWITCHING_REPS:-2} --phase-seconds 6,3,6 --max-tokens 16 \
		--drain-seconds 60
}

echo "INFO: guest $(uname -r), $(nproc) CPUs, $(grep -c processor /proc/cpuinfo) in cpuinfo"
[ "$(nproc)" -ge 4 ] && pass "4 CPUs online" || fail "only $(nproc) CPUs online"
if [ ! -f $STATE ]; then
	fail "no /sys/kernel/sched_ext/state: this kernel has no sched_ext"
	finish
fi

# the user-space backend's output: the reference for bit-exactness
$GEN --logits-hash /tmp/ref.hash > /tmp/ref.txt 2>/tmp/ref.err
check "reference generation (user-space backend)" test -s /tmp/ref.hash

check "state disabled before load" [ "$(cat $STATE)" = disabled ]
# exec's exit codes: a missing scheduler is a runtime failure (1), a
# missing command bad input (2)
egang scx exec --gang -- true 2>/dev/null; rc=$?
check "exec --gang without the scheduler: exit 1 ($rc)" [ $rc -eq 1 ]
egang scx exec -- /nonexistent/egang-cmd 2>/dev/null; rc=$?
check "exec of a missing command: exit 2 ($rc)" [ $rc -eq 2 ]
if ! egang scx load --policies $KG > /tmp/load.txt 2>&1; then
	cat /tmp/load.txt
	fail "egang scx load"
	dmesg | tail -n 40
	finish
fi
check "state enabled after load" [ "$(cat $STATE)" = enabled ]
check "root/ops names egang" [ "$(cat /sys/kernel/sched_ext/root/ops)" = egang ]
# SCX_ONLY_SWITCHING=1: only the switching run (brief, or the full one
# with SCX_SWITCHING=1), nothing else
if [ -n "${SCX_ONLY_SWITCHING:-}" ]; then
	if [ -n "${SCX_SWITCHING:-}" ]; then switching_full; else switching_brief; fi
	egang scx unload > /dev/null 2>&1
	finish
fi
egang scx status | sed 's/^/INFO: /'
sed 's/^/FIGURE: (under QEMU TCG emulation) /' /tmp/load.txt

# Gate 1 (AKTS): JIT image sizes; egang_select_cp has the tail call,
# g1_notail is the same dispatcher without it, g1_plain a plain program,
# g1_xdp the smallest XDP program (loaded, never attached)
egang scx progs > /tmp/progs.txt
check "load measured the Gate 1 variants" grep -q 'gate1 g1_notail' /tmp/load.txt
check "load measured the Gate 1 XDP control" grep -q 'gate1 g1_xdp jited_bytes=[1-9]' /tmp/load.txt
check "progs lists the dispatcher" grep -q 'name=egang_select_cp' /tmp/progs.txt
sed 's/^/FIGURE: gate1 /' /tmp/progs.txt
sidx() { egang scx status | grep '^index=' | cut -d= -f2; }

# one index: `policy set` is one store into the scheduler's page
egang policy set -q $PCTL throughput
check "one store: policy set moves the kernel's index ($(sidx))" [ "$(sidx)" = 3 ]
check "policy status: the index lives in sched_ext" \
	sh -c "egang policy status --control $CTL | grep -q '^index_home=sched_ext'"
egang scx set -q elastic
check "scx set (map update) is seen by the control word" \
	sh -c "egang policy status --control $CTL | grep -q '^index=0$'"

# the user-space guard: a record without a kernel form, an index past the end
egang scx set knee 2>/dev/null; rc=$?
check "set knee refused without --force (exit 2)" [ $rc -eq 2 ]
egang scx set 1000 2>/dev/null; rc=$?
check "set 1000 refused without --force (exit 2)" [ $rc -eq 2 ]

# CPU-bound tenants in SCHED_EXT for the whole test (two per CPU)
egang scx exec -- egang burn --threads 8 --seconds 0 -q > /tmp/burn.out 2>&1 &
burn=$!

# store to first transfer (AKTS: 920 ns): by a store into the mapped index
# and by a map update, under the tenants and two yielding threads. The
# bench itself runs in SCHED_EXT: a CFS thread spinning on a CPU parks the
# SCHED_EXT task it preempted at the head of that CPU's local queue until
# it stops, and the watchdog ejects the scheduler after 30 s of that
egang scx exec -- egang scx bench --reps 1000 > /tmp/bench.txt
sed 's/^/FIGURE: (under QEMU TCG emulation) /' /tmp/bench.txt
check "switch benchmark ran" grep -q median /tmp/bench.txt
check "store to first transfer measured by both paths" \
	[ "$(grep -c 'store-to-first-transfer' /tmp/bench.txt)" = 2 ]

# the in-kernel guard: the valid but wrong record under the tenants; no
# controller runs, only generations; the kernel itself must store 0
kg=$(egang policy list --policies $KG | awk '$2 == "kg_wrong" {print $1}')
egang scx waits --reset > /dev/null
egang policy set -q $PCTL kg_wrong
check "kg_wrong ($kg) in force in the kernel" [ "$(sidx)" = "$kg" ]
t0=$(now) n=0
while [ "$(sidx)" != 0 ] && [ $(($(now) - t0)) -lt ${SCX_KG_S:-240} ]; do
	egang scx exec --gang -- $GEN $PCTL > /dev/null 2>&1
	n=$((n + 1))
done
egang scx status --policies $KG | grep '^kguard' > /tmp/kg.txt
sed 's/^/INFO: /' /tmp/kg.txt
echo "INFO: kguard: $n generations in $(($(now) - t0)) s"
check "kguard: the kernel restored index 0 by itself ($(sidx))" [ "$(sidx)" = 0 ]
check "kguard: one fallback counted" grep -q '^kguard_fallbacks=1$' /tmp/kg.txt
check "kguard: the reason names index $kg" grep -q "^kguard_reason=index $kg " /tmp/kg.txt
check "kguard: policy status reports the reason" \
	sh -c "egang policy status --control $CTL | grep -q '^kguard_reason=index $kg '"
egang scx exec --gang -- $GEN $PCTL > /dev/null 2>&1
check "kguard: the leader follows the same index (effective=0)" \
	sh -c "egang policy status --control $CTL | grep -q '^effective=0$'"
egang scx exec --gang -- $GEN $PCTL > /dev/null 2>&1
check "kguard: no second fallback under the safe index" \
	sh -c "egang scx status | grep -q '^kguard_fallbacks=1$'"
echo "FIGURE: (under QEMU TCG emulation) kguard $(tr '\n' ' ' < /tmp/kg.txt)"
egang scx waits | sed 's/^/FIGURE: (under QEMU TCG emulation) kg_wrong /'

if [ -n "${SCX_QUICK:-}" ]; then
	kill $burn; wait $burn
	egang scx unload > /tmp/unload.txt 2>&1
	check "unload exit 0" [ $? -eq 0 ]
	dmesg | grep -i sched_ext | sed 's/^/INFO: dmesg: /'
	finish
fi

# run generations under index $1 until counter $2 of slot $3 reaches MIN;
# one store (policy set) switches the gang and the kernel
drive() { # drive INDEX KEY SLOT LABEL
	local n t0 v exact
	egang policy set --force -q $PCTL -- "$1"
	check "$4: one store moved the kernel's index" [ "$(sidx)" = "$1" ]
	egang scx waits --reset > /dev/null
	n=0 t0=$(now) v=0 exact=yes
	while :; do
		egang scx exec --gang -- $GEN $PCTL --logits-hash /tmp/h > /tmp/out.txt 2>/tmp/err.txt ||
			{ fail "$4: generation exited $?"; cat /tmp/err.txt; exact=no; break; }
		cmp -s /tmp/h /tmp/ref.hash && cmp -s /tmp/out.txt /tmp/ref.txt || exact=no
		n=$((n + 1))
		v=$(field "$3" "$2")
		[ "${v:-0}" -ge "$MIN" ] && break
		[ $(($(now) - t0)) -ge "${SCX_PHASE_S:-420}" ] && break
	done
	echo "INFO: $4: $n generations, $2=$v in $(($(now) - t0)) s"
	# polite vs preempt: the gang's acquire latency next to the tenants'
	# stints (their slice: elastic/static 5 ms, latency 1 ms, share 20 ms)
	egang scx waits | sed "s/^/FIGURE: (under QEMU TCG emulation) acquire $4 /"
	check "$4: $2 >= $MIN ($v)" [ "${v:-0}" -ge "$MIN" ]
	check "$4: $n generations bit-exact with the user-space backend" [ $exact = yes ]
}

# (the guard's own record is not driven: its guard would end the phase)
for s in $(egang scx status --policies $KG | grep '^slot=[0-9]' | grep -v 'kind=none' |
	   grep -v 'name=kg_wrong' | sed 's/^slot=\([0-9]*\) .*/\1/'); do
	name=$(egang scx status --policies $KG | grep "^slot=$s " | tr ' ' '\n' | grep '^name=' | cut -d= -f2)
	drive "$s" transfers "$s" "slot $s ($name)"
	f=$(field "$s" fallthroughs)
	check "slot $s ($name): zero fall-throughs ($f)" [ "$f" = 0 ]
	echo "FIGURE: scx slot=$s name=$name transfers=$(field "$s" transfers) fallthroughs=$f"
done
# inert indices: an empty slot (knee) and one past the array; in each, a
# tenant with a fixed run time must run to its end
inert() { # inert INDEX SLOT LABEL
	local fin rc x
	egang scx exec -- egang burn --threads 2 --seconds 30 -q > /tmp/fin.out 2>&1 &
	fin=$!
	drive "$1" fallthroughs "$2" "$3"
	x=$(field "$2" transfers)
	check "$3: zero transfers (${x:-0})" [ "${x:-0}" = 0 ]
	echo "FIGURE: scx $3 fallthroughs=$(field "$2" fallthroughs) transfers=${x:-0}"
	wait $fin; rc=$?
	check "$3: a 30 s tenant ran to its end (exit $rc)" [ $rc -eq 0 ]
	check "$3: the tenant reported its total" grep -q total /tmp/fin.out
}
inert 1 1 "empty slot 1 (knee)"
inert 100000 out_of_range "index 100000 (out of range)"
kill $burn; wait $burn

egang scx set -q 0
# store to first transfer again without the tenants: only the two
# yielders make callbacks, so this is the store's visibility plus the
# callback cadence (with the tenants above: the next slice end)
egang scx exec -- egang scx bench --reps ${SCX_BENCH_REPS:-20000} > /tmp/bench2.txt
sed 's/^/FIGURE: (under QEMU TCG emulation, no tenants) /' /tmp/bench2.txt
check "store to first transfer without tenants" \
	[ "$(grep -c 'store-to-first-transfer' /tmp/bench2.txt)" = 2 ]

# the kernel path of the switching experiment, briefly (the oracle alone,
# 5 s of phases); the full run is SCX_SWITCHING=1 (make scx-switching)
if [ -n "${SCX_SWITCHING:-}" ]; then
	switching_full
else
	switching_brief
fi
egang scx status | sed 's/^/INFO: /'

egang scx unload > /tmp/unload.txt 2>&1; rc=$?
sed 's/^/INFO: /' /tmp/unload.txt
check "unload exit 0" [ $rc -eq 0 ]
check "state disabled after unload" [ "$(cat $STATE)" = disabled ]
check "detached cleanly (exit kind below SCX_EXIT_ERROR)" \
	grep -Eq 'exit kind (64|65|66)' /tmp/unload.txt
check "no sched_ext error in dmesg" sh -c '! dmesg | grep -Ei "sched_ext.*(error|stall)"'
$GEN --logits-hash /tmp/after.hash > /tmp/after.txt 2>&1
check "generation after unload bit-exact" cmp -s /tmp/after.hash /tmp/ref.hash
dmesg | grep -i sched_ext | sed 's/^/INFO: dmesg: /'
finish
