#!/bin/bash
# the before/after run: main's kernels (old, base) against this branch's (new)
cd /tmp/q6kmem
E=/work/wt/q6kmem/build/gcc-release/egang
echo "== start $(date -u +%H:%M:%S) $(uptime)"
$E bench membw --cores 0 --reps 5 -q
./shapes.sh 3 old new
cp shapes.raw final-shapes.raw
echo "== mid $(date -u +%H:%M:%S) $(uptime)"
$E bench membw --cores 0 --reps 5 -q
./e2e.sh 3
$E bench membw --cores 0 --reps 5 -q
echo "== end $(date -u +%H:%M:%S) $(uptime)"
