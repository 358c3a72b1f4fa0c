#!/usr/bin/env bash
# make test-arm64: the aarch64 cross build under qemu-user (README "ARM64").
#   tests/arm64/run.sh NATIVE_BUILD_DIR ARM64_BUILD_DIR
# Runs every unit test under `-cpu max` (ASIMD with dotprod: the levels
# generic, neon, dotprod), the kernel twin tests once more under
# `-cpu cortex-a57` (ASIMD without dotprod: the neon level is the best one,
# dotprod's tests SKIP), then tests/arm64/generate.sh (stories260K on ARM64
# against the native egang). Ends with run.sh's "N passed, N failed, N
# skipped" over all of them. ARM64_QUICK=1: of the unit tests only the
# kernel twin tests (test_kernels, test_gemm), under both CPUs.
# No binfmt_misc is needed: each binary runs through a wrapper that calls
# qemu-aarch64 with -L / (the arm64 multiarch libraries of
# tools/deps-arm64.sh; the cross toolchain's own ld.so in
# /usr/aarch64-linux-gnu is another glibc build and hangs in pthread_create
# with the multiarch libc).
set -u
cd "$(dirname "$0")/../.."
native=$1 arm=$2
QEMU=${QEMU_AARCH64:-qemu-aarch64}
command -v "$QEMU" >/dev/null || { echo "FAIL: no $QEMU (tools/deps-arm64.sh)"; exit 1; }
wrap=$arm/qemu
rm -rf "$wrap"
mkdir -p "$wrap/max" "$wrap/a57"
# wrapper DIR CPU BIN: DIR/<name of BIN> runs BIN under qemu with CPU
wrapper() {
	local f=$1/$(basename "$3")
	printf '#!/bin/sh\nQEMU_CPU=%s exec %s -L / %s "$@"\n' "$2" "$QEMU" "$3" >"$f"
	chmod +x "$f"
}
tests=()
for t in "$arm"/tests/test_*; do
	[[ -x $t && $t != *.d ]] || continue
	# ARM64_QUICK=1 (CI): the kernel twin tests only
	[[ ${ARM64_QUICK:-} == 1 && $t != */test_kernels && $t != */test_gemm ]] && continue
	wrapper "$wrap/max" max "$t"
	tests+=("$wrap/max/$(basename "$t")")
done
for t in test_kernels test_gemm; do
	wrapper "$wrap/a57" cortex-a57 "$arm/tests/$t"
	tests+=("$wrap/a57/$t")
done
wrapper "$wrap" max "$arm/egang"
# test_kernels re-executes itself through the emulator (test_isa_env)
export EGANG_TEST_EXEC="$QEMU -L /"
# emulated, a program runs 30-50x slower: test_batch took 40 minutes at
# nice 19 beside a .ci/run on 2 cores, and got 3 of its 10 tests done in
# 9 minutes alone (tests/run.sh's 10 minutes counted it as failed)
export TEST_TIMEOUT=${TEST_TIMEOUT:-3600}
echo "ARM64 under $($QEMU --version | head -1); -cpu max and -cpu cortex-a57"
EGANG=$native/egang EGANG_ARM64=$wrap/egang exec tests/run.sh "${tests[@]}" tests/arm64/generate.sh
