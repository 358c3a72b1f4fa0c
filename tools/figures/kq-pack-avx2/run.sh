#!/bin/bash
# Before/after figures of the AVX2 packed K-quants (kq_pack_avx2.c), one run:
#   tools/figures/kq-pack-avx2/run.sh BEFORE_DIR AFTER_DIR MODEL...
# BEFORE_DIR / AFTER_DIR hold egang, test_kernels and test_gemm of the two
# builds (gcc release); MODELs are `egang synth` GGUFs. Kernel benches:
# one core, L3-resident 2048 x 2048 matrices; end to end: EGANG_ISA=avx2,
# one core (--cores 0), a 64-token prompt and 32 greedy tokens, before and
# after alternated, 3 reps each.
B=$1 A=$2
shift 2
uptime
for bin in "$B" "$A"; do
	echo "## $bin: test_kernels --bench 2048 2048 30 (K-quant rows, 2 runs)"
	for i in 1 2; do
		"$bin"/test_kernels --bench 2048 2048 30 2>&1 | grep -E "q[456]_k (avx2|avx512 )"
	done
	echo "## $bin: EGANG_ISA=avx2 test_gemm --bench 2048 2048 64 5 (2 runs)"
	for i in 1 2; do
		EGANG_ISA=avx2 "$bin"/test_gemm --bench 2048 2048 64 5 2>&1 | grep -E "q[456]_k"
	done
done
P=$(seq -s, 1 64)
echo "## end to end, EGANG_ISA=avx2, one core"
for m in "$@"; do
	for rep in 1 2 3; do
		for bin in "$B" "$A"; do
			line=$(EGANG_ISA=avx2 "$bin"/egang generate -m "$m" --prompt-ids "$P" -n 32 -t 0 \
				--cores 0 --no-echo 2>&1 | grep "^prompt:")
			echo "$(basename "$m") $([ "$bin" = "$B" ] && echo before || echo after) rep$rep $line"
		done
	done
done
uptime
