#!/usr/bin/env bash
# make test-scx: boots the sched_ext test kernel (build/kernel) in QEMU with
# software emulation (-smp 4, no KVM here), runs tests/scx/guest.sh as the
# guest's /init and reads its PASS:/FAIL:/FIGURE: lines from the serial
# console. usage: tests/scx/run.sh BUILD_DIR (the make SCX=1 build)
set -euo pipefail
cd "$(dirname "$0")/../.."
b=$1
models=${EGANG_MODELS:-../shared/models}
if [[ ! -f $models/stories260K.bin ]]; then
	if [[ ${CI:-} == true ]]; then
		echo "FAIL: scx: $models/stories260K.bin missing (CI needs ../shared)"
		echo "0 passed, 1 failed"
		exit 1
	fi
	echo "SKIP: scx: $models/stories260K.bin missing"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
out=$b/scx-test
mkdir -p "$out"
tools/scx-kernel/initramfs.sh "$b/egang" "$models" "$out/initramfs.cpio.gz"
log=$out/serial.log
# kernel parameters the kernel does not know become /init's environment:
# SCX_MIN_CALLS (callbacks each slot must reach; guest.sh: 60,000) and
# anything in SCX_GUEST_ARGS
guest_args="${SCX_MIN_CALLS:+SCX_MIN_CALLS=$SCX_MIN_CALLS} ${SCX_GUEST_ARGS:-}"
: > "$log"
echo "test-scx: booting build/kernel/bzImage in qemu-system-x86_64 (TCG, -smp 4); serial log $log" >&2
# -cpu max: TCG's fullest x86 model; no KVM on this machine
rc=0
timeout "${SCX_TIMEOUT:-3600}" qemu-system-x86_64 -machine pc -cpu max -smp 4 -m 2048 \
	-kernel build/kernel/bzImage -initrd "$out/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=4 $guest_args" \
	-display none -monitor none -serial "file:$log" -no-reboot &
qemu=$!
# the guest reboots when done (QEMU exits: -no-reboot); should it halt
# instead, end QEMU once its last line is on the console
while kill -0 $qemu 2>/dev/null; do
	if grep -q 'scx-guest: done' "$log"; then
		sleep 10
		kill $qemu 2>/dev/null || true
		break
	fi
	sleep 2
done
wait $qemu || rc=$?
tr -d '\r' < "$log" > "$log.txt"
grep -E '^(PASS|FAIL|SKIP|FIGURE|INFO):' "$log.txt" || true
pass=$(grep -c '^PASS:' "$log.txt" || true)
fail=$(grep -c '^FAIL:' "$log.txt" || true)
skip=$(grep -c '^SKIP:' "$log.txt" || true)
if ! grep -q '^scx-guest: done' "$log.txt"; then
	echo "FAIL: scx: the guest did not finish (qemu exit $rc); last lines of $log.txt:"
	tail -n 30 "$log.txt"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
