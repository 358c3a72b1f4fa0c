#!/usr/bin/env bash
# The measurements of doc/isa/README.md, from the repository root:
#   EGANG=path/to/egang tools/figures/isa/run.sh
# egang at each x86 level (EGANG_ISA) against llama.cpp's matching ggml CPU
# library (tools/llamacpp/compare-llamacpp --isa), TH threads (default 1),
# one run (engines alternated), 32 decode tokens and a 64-token prompt; then
# the K-quant rows of issue 17 at the best level into doc/kquant-speed/kq.
# The machine's 2 cores were shared with six other sessions' builds and
# tests (load average 11-15): 2-thread runs of either engine then measure
# the load (llama.cpp's own 2-thread decode of smollm-135m fell to 0.2
# tok/s), so these runs use 1 thread (TH=2 repeats them on 2).
set -u
cd "$(dirname "$0")/../../.."
export EGANG=${EGANG:-build/gcc-release/egang}
TH=${TH:-1}
cmp() { # OUT ARGS..: one compare-llamacpp run, the load before and after
	local out=$1; shift
	{ echo "# $EGANG tools/llamacpp/compare-llamacpp $* --out $out -q"; uptime
	  tools/llamacpp/compare-llamacpp "$@" --reps 1 --decode-tokens 32 --prompt-tokens 64 --out "$out" -q
	  uptime; } >"$out.txt" 2>&1
}
cmp doc/isa/avx2 --isa avx2 --threads "$TH" --models \
	smollm-135m-q8_0,smollm-135m-q4_0,smollm-135m-q4_k_m,tinyllama-1.1b-q8_0,tinyllama-1.1b-q4_0,tinyllama-1.1b-q4_k_m
cmp doc/kquant-speed/kq --threads "$TH" --models \
	smollm-135m-q4_k_m,smollm-135m-q6_k,tinyllama-1.1b-q4_k_m,tinyllama-1.1b-q6_k
for lv in avx512vnni avx512 generic; do
	cmp doc/isa/$lv --isa $lv --threads "$TH" --models tinyllama-1.1b-q8_0
done
{ echo "# $EGANG bench membw --cores 0-1"; uptime; "$EGANG" bench membw --cores 0-1; uptime; } >doc/isa/membw.txt 2>&1
