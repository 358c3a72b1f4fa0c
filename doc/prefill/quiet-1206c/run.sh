#!/bin/bash
# the quiet rerun after the merges: usage run.sh OUTDIR
cd "$(dirname "$0")/../../.."
O=$1; mkdir -p $O
E=build/gcc-release/egang
M=~/.cache/egang/models
hdr() { date -u; uptime; lscpu | grep 'Model name'; git log -1 --format='main at %h'; $E bench membw --cores 0-1 --quiet 2>&1; }
hdr > $O/run.txt 2>&1
tools/llamacpp/compare-llamacpp --reps 3 --threads 1,2 --models $M/SmolLM2-135M-Instruct.Q4_1.gguf --out $O/smollm2 >> $O/run.txt 2>&1
$E bench width -m $M/tinyllama-1.1b-q8_0.gguf --cores 0-1 --tokens 16 --reps 3 --batch 1,8,16 > $O/width.txt 2>&1
tools/figures/serve-batch/run.sh $E $M $O/serve tinyllama-1.1b decode 1 20 32 > /dev/null 2>&1
tools/llamacpp/compare-llamacpp --reps 1 --threads 2 --long 4000 --out $O/long4000 >> $O/run.txt 2>&1
tools/llamacpp/compare-llamacpp --reps 1 --threads 2 --long 512 --out $O/long512 >> $O/run.txt 2>&1
hdr >> $O/run.txt 2>&1
echo done >> $O/run.txt
