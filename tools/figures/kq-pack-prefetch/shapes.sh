#!/bin/bash
# shapes.sh ROUNDS VARIANTS...: from-memory matvec GB/s (avx512vnni) of the
# tinyllama-1.1b q4_k_m shapes, variants alternated per shape and round.
# Raw lines to /tmp/q6kmem/shapes.raw; summary: per variant/type/shape/form
# the medians of each round and the best max.
R=$1; shift
raw=/tmp/q6kmem/shapes.raw; : > $raw
for r in $(seq $R); do
 for sh in "2048 2048 200" "256 2048 256" "5632 2048 100" "2048 5632 100" "32000 2048 30"; do
  for v in "$@"; do
   /tmp/q6kmem/v/$v/test_kernels --bench $sh --mb 256 --types q4_K,q5_K,q6_K --levels avx512vnni | sed "s/^/$v /" >> $raw
  done
 done
done
awk '{k=sprintf("%-5s %-4s %-10s %-6s", $1, $4, $6, $9); n[k]++; med[k]=med[k]" "$15; if ($17>mx[k]) mx[k]=$17} END {for (k in n) print k, "med:" med[k], " best:", mx[k]}' $raw | sort -k3,3 -k2,2 -k4,4 -k1,1
