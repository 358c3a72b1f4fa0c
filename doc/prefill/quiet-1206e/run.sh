#!/bin/bash
# the quiet rerun after the day's last merges (prompt attention by KV head,
# the batch GEMM's spread prefetch): usage run.sh OUTDIR
cd "$(dirname "$0")/../../.."
O=$1; mkdir -p $O
E=build/gcc-release/egang
M=~/.cache/egang/models
hdr() { date -u; uptime; lscpu | grep 'Model name'; grep -o -w 'avx2\|avx512f\|avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; git log -1 --format='main at %h'; $E bench membw --cores 0-1 --quiet 2>&1; }
hdr > $O/run.txt 2>&1
tools/llamacpp/compare-llamacpp --reps 1 --threads 2 --long 4000 --decode-tokens 64 --out $O/long4000 >> $O/run.txt 2>&1
$E bench width -m $M/tinyllama-1.1b-q8_0.gguf --cores 0-1 --tokens 32 --reps 3 --batch 1,8,16 > $O/width.txt 2>&1
tools/figures/serve-batch/run.sh $E $M $O/serve tinyllama-1.1b decode 1 20 32 > /dev/null 2>&1
hdr >> $O/run.txt 2>&1
echo done >> $O/run.txt
# run afterwards, alone (18:15 UTC): prefill 256 and decode, 3 reps
# tools/llamacpp/compare-llamacpp --reps 3 --threads 2 --models tinyllama-1.1b-q8_0,tinyllama-1.1b-q4_k_m,smollm-135m-q8_0 --out $O/256 > $O/run256.txt 2>&1
