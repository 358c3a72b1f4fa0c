#!/bin/bash
# e2e.sh ROUNDS: decode tok/s of tinyllama-1.1b q4_k_m (synthetic), main
# (base) against this branch (new) alternated, on 1 and 2 cores; logits
# hashes compared.
R=$1
M=/tmp/q6kmem/tl.gguf
declare -A B=( [base]=/tmp/q6kmem/base/build/gcc-release/egang [new]=/work/wt/q6kmem/build/gcc-release/egang )
for r in $(seq $R); do
 for c in 0 0-1; do
  for v in base new; do
   tps=$(${B[$v]} generate -m $M --prompt-ids 1,2,3,4,5,6,7,8 -n 64 -t 0 --cores $c --no-echo \
        --logits-hash /tmp/q6kmem/hash.$v.$c 2>&1 >/dev/null | sed -n 's/.*decode: 64 tokens, \([0-9.]*\) tok.*/\1/p')
   echo "round $r cores $c $v $tps load $(cut -d' ' -f1 /proc/loadavg)"
  done
  cmp -s /tmp/q6kmem/hash.base.$c /tmp/q6kmem/hash.new.$c && echo "hash same ($c)" || echo "HASH DIFFERS ($c)"
 done
done
