#!/bin/bash
# A/B of the batch decode step, before (OLD) and after (NEW) in alternation,
# one core (--cores 0), tinyllama-1.1b q8_0; ROUNDS rounds.
OLD=$1 NEW=$2 M=$3 ROUNDS=${4:-3}
for i in $(seq 1 $ROUNDS); do for v in old new; do
  B=$OLD; [[ $v == new ]] && B=$NEW
  echo "== $v round $i loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
  $B bench width -m $M --cores 0 --batch 1,2,4,8,16 --tokens 16 --reps 3 2>&1 | grep -E "^batch|^bench width"
done; done
