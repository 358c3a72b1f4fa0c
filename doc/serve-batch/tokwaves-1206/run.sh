#!/bin/bash
# The batch plan's per-token waves against the serial finishes they
# replace: usage run.sh BASE_EGANG NEW_EGANG OUTDIR. Three alternated
# rounds of prompt (bench prefill, 256 tokens) and 16-token batch steps
# (bench width --batch 16) on two cores, tinyllama-1.1b q8_0 and
# smollm-135m q8_0, with the host's header and bench membw before and after.
cd "$(dirname "$0")/../../.."
A=$1 B=$2 O=$3; mkdir -p "$O"
M=~/.cache/egang/models
hdr() { date -u; uptime; lscpu | grep 'Model name'; grep -o -w 'avx2\|avx512f\|avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' '; echo; $B bench membw --cores 0-1 --quiet 2>&1; }
hdr > "$O/run.txt" 2>&1
for r in 1 2 3; do
	for e in "$A" "$B"; do
		for m in tinyllama-1.1b-q8_0 smollm-135m-q8_0; do
			echo "round $r $e $m" >> "$O/run.txt"
			$e bench prefill -m $M/$m.gguf --cores 0-1 --tokens 256 --reps 3 --quiet >> "$O/run.txt" 2>&1
			$e bench width -m $M/$m.gguf --cores 0-1 --tokens 32 --reps 3 --batch 16 2>&1 | grep '^batch  16 width  2' >> "$O/run.txt"
		done
	done
done
hdr >> "$O/run.txt" 2>&1
echo done >> "$O/run.txt"
