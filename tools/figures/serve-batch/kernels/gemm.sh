#!/bin/bash
# The GEMM kernel on its own: thread CPU time of gemm_rows_packed (32 KiB
# row chunks, from the packed copy) against the matvec once per token over
# each chunk's rows, for 2, 4, 8 and 16 tokens, 2048 x 2048 q8_0 and q4_0.
# OLD_GEMM: a test_gemm built with CFLAGS=-DGEMM_INPLACE_TOKENS=0 (every
# group repacked first, as before); NEW_GEMM: the default build.
OLD_GEMM=$1 NEW_GEMM=$2
for nt in 2 4 8 16; do
  for v in old new; do
    B=$OLD_GEMM; [[ $v == new ]] && B=$NEW_GEMM
    echo "== $v loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
    $B --bench 2048 2048 $nt 20 | grep -E " q8_0 | q4_0 "
  done
done
