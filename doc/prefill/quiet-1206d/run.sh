#!/bin/bash
# the 16k-context point: a 16,000-token prompt, then 64 tokens at that depth,
# egang against llama.cpp (flash attention, f16 KV): usage run.sh OUTDIR
cd "$(dirname "$0")/../../.."
O=$1; mkdir -p $O
E=build/gcc-release/egang
hdr() { date -u; uptime; lscpu | grep 'Model name'; grep -o -w 'avx2\|avx512f\|avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; git log -1 --format='main at %h'; $E bench membw --cores 0-1 --quiet 2>&1; }
hdr > $O/run.txt 2>&1
tools/llamacpp/compare-llamacpp --reps 1 --threads 2 --long 16000 --decode-tokens 64 --timeout 2400 --out $O/long16000 >> $O/run.txt 2>&1
hdr >> $O/run.txt 2>&1
echo done >> $O/run.txt
