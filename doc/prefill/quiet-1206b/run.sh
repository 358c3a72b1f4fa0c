#!/bin/bash
cd "$(dirname "$0")/../../.."
O=${1:?usage: run.sh OUTDIR}
{ date -u; uptime; lscpu | grep 'Model name'; grep -o -w -E 'avx2|avx512f|avx512_vnni|amx_int8' /proc/cpuinfo | sort | uniq -c
build/gcc-release/egang bench membw --cores 0 --quiet 2>&1
build/gcc-release/egang bench membw --cores 0-1 --quiet 2>&1
} > $O/run.txt 2>&1
tools/llamacpp/compare-llamacpp --reps 3 --threads 2 --models tinyllama-1.1b-q8_0,tinyllama-1.1b-q4_k_m,smollm-135m-q8_0 --out $O/256 >> $O/run.txt 2>&1
{ date -u; uptime; } >> $O/run.txt
tools/llamacpp/compare-llamacpp --reps 3 --threads 2 --long 4000 --out $O/long >> $O/run.txt 2>&1
{ date -u; uptime;
build/gcc-release/egang bench membw --cores 0 --quiet 2>&1
build/gcc-release/egang bench membw --cores 0-1 --quiet 2>&1; } >> $O/run.txt 2>&1
echo done >> $O/run.txt
