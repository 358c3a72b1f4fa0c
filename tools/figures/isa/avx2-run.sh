#!/usr/bin/env bash
# Issue 21's AVX2 speed targets in one run, from the repository root:
#   EGANG=build/gcc-release/egang tools/figures/isa/avx2-run.sh [OUT]   (OUT: doc/isa/avx2g)
# (in a git worktree without ../shared: EGANG_MODELS=/path/to/shared/models)
#  1. OUT/ and OUT.txt: egang with EGANG_ISA=avx2 against llama.cpp's Haswell
#     library (tools/llamacpp/compare-llamacpp --isa avx2), smollm-135m and
#     tinyllama-1.1b in q8_0 and q4_0, 1 and 2 threads, REPS runs each
#     (engines alternated; default 2), 32 decode tokens and a 64-token
#     prefill;
#  2. OUT/membw.txt: `egang bench membw --cores 0-1`, for the 80%-of-membw
#     target (tinyllama-1.1b q8_0 decode tok/s x its bytes a token).
# Each file starts and ends with `uptime`: figures taken while other work
# ran on the machine compare the two engines of the same run only.
set -u
cd "$(dirname "$0")/../../.."
export EGANG=${EGANG:-build/gcc-release/egang}
OUT=${1:-doc/isa/avx2g}
REPS=${REPS:-2}
MODELS=${MODELS:-smollm-135m-q8_0,smollm-135m-q4_0,tinyllama-1.1b-q8_0,tinyllama-1.1b-q4_0}
args=(--isa avx2 --threads 1,2 --models "$MODELS" --reps "$REPS" --decode-tokens 32
      --prompt-tokens 64 --out "$OUT" -q)
{ echo "# EGANG=$EGANG tools/llamacpp/compare-llamacpp ${args[*]}"
  echo "# egang $(git rev-parse --short HEAD 2>/dev/null)"
  uptime
  tools/llamacpp/compare-llamacpp "${args[@]}"
  uptime; } >"$OUT.txt" 2>&1
mkdir -p "$OUT"
{ echo "# $EGANG bench membw --cores 0-1"; uptime; "$EGANG" bench membw --cores 0-1; uptime; } \
	>"$OUT/membw.txt" 2>&1
