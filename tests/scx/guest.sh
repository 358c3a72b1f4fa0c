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
M="-m /models/stories260K.bin -z /models/tok512.bin"
GEN="egang generate $M -p Once -n 48 -s 7 --no-echo -q"
# the gang's runs read the same index from the control word (as serve
# --backend scx does): user space picks the slots, the kernel schedules them
CTL=/tmp/ctl
STATE=/sys/kernel/sched_ext/state

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
if ! egang scx load; then
	fail "egang scx load"
	dmesg | tail -n 40
	finish
fi
check "state enabled after load" [ "$(cat $STATE)" = enabled ]
check "root/ops names egang" [ "$(cat /sys/kernel/sched_ext/root/ops)" = egang ]
egang scx status | sed 's/^/INFO: /'

# the user-space guard: a record without a kernel form, an index past the end
egang scx set knee 2>/dev/null; rc=$?
check "set knee refused without --force (exit 2)" [ $rc -eq 2 ]
egang scx set 1000 2>/dev/null; rc=$?
check "set 1000 refused without --force (exit 2)" [ $rc -eq 2 ]

# CPU-bound tenants in SCHED_EXT for the whole test (two per CPU)
egang scx exec -- egang burn --threads 8 --seconds 0 -q > /tmp/burn.out 2>&1 &
burn=$!

# run generations under index $1 until counter $2 of slot $3 reaches MIN
drive() { # drive INDEX KEY SLOT LABEL
	local n t0 v exact
	egang scx set --force -q -- "$1"
	egang policy set --force -q --control $CTL -- "$1"
	n=0 t0=$(date +%s) v=0 exact=yes
	while :; do
		egang scx exec --gang -- $GEN --control $CTL --logits-hash /tmp/h > /tmp/out.txt 2>/tmp/err.txt ||
			{ fail "$4: generation exited $?"; cat /tmp/err.txt; exact=no; break; }
		cmp -s /tmp/h /tmp/ref.hash && cmp -s /tmp/out.txt /tmp/ref.txt || exact=no
		n=$((n + 1))
		v=$(field "$3" "$2")
		[ "${v:-0}" -ge "$MIN" ] && break
		[ $(($(date +%s) - t0)) -ge "${SCX_PHASE_S:-420}" ] && break
	done
	echo "INFO: $4: $n generations, $2=$v in $(($(date +%s) - t0)) s"
	check "$4: $2 >= $MIN ($v)" [ "${v:-0}" -ge "$MIN" ]
	check "$4: $n generations bit-exact with the user-space backend" [ $exact = yes ]
}

for s in $(egang scx status | grep '^slot=[0-9]' | grep -v 'kind=none' |
	   sed 's/^slot=\([0-9]*\) .*/\1/'); do
	name=$(egang scx status | grep "^slot=$s " | tr ' ' '\n' | grep '^name=' | cut -d= -f2)
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
egang scx bench --reps ${SCX_BENCH_REPS:-20000} > /tmp/bench.txt
sed 's/^/FIGURE: (under QEMU TCG emulation) /' /tmp/bench.txt
check "switch benchmark ran" grep -q median /tmp/bench.txt
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
