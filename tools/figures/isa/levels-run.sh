#!/usr/bin/env bash
# The ISA table of issue 21, every level in one run: tinyllama-1.1b q8_0
# decode (and prefill) at 2 threads, egang with EGANG_ISA=LEVEL against
# llama.cpp with only its matching ggml CPU library
# (tools/llamacpp/compare-llamacpp --isa), from the repository root:
#   EGANG=build/gcc-release/egang tools/figures/isa/levels-run.sh [OUT]   (OUT: doc/isa/levels)
set -u
cd "$(dirname "$0")/../../.."
export EGANG=${EGANG:-build/gcc-release/egang}
OUT=${1:-doc/isa/levels}
mkdir -p "$OUT"
for lv in generic avx2 avx512 avx512vnni; do
	{ echo "# EGANG=$EGANG tools/llamacpp/compare-llamacpp --isa $lv --threads 2 --models tinyllama-1.1b-q8_0 --reps 2 --decode-tokens 32 --prompt-tokens 64 --out $OUT/$lv -q"
	  echo "# egang $(git rev-parse --short HEAD 2>/dev/null)"
	  uptime
	  tools/llamacpp/compare-llamacpp --isa $lv --threads 2 --models tinyllama-1.1b-q8_0 --reps 2 \
		--decode-tokens 32 --prompt-tokens 64 --out "$OUT/$lv" -q
	  uptime; } >"$OUT/$lv.txt" 2>&1
done
