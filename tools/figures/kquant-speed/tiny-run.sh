#!/usr/bin/env bash
# tinyllama-1.1b Q4_K_M and Q6_K at 1 and 2 threads, 3 runs each, with
# `bench membw` on one and on two cores before and after (the decode /
# membw ratio of issue 17 wants both in one run), from the repository
# root: EGANG=build/gcc-release/egang tools/figures/kquant-speed/tiny-run.sh OUT
set -u
cd "$(dirname "$0")/../../.."
export EGANG=${EGANG:-build/gcc-release/egang}
OUT=${1:?usage: tiny-run.sh OUT}
mw() { "$EGANG" bench membw --cores 0; "$EGANG" bench membw --cores 0-1; }
{ echo "# EGANG=$EGANG tools/figures/kquant-speed/tiny-run.sh $OUT"
  echo "# egang $(git rev-parse --short HEAD 2>/dev/null)"
  uptime; mw
  tools/llamacpp/compare-llamacpp --threads 1,2 --models tinyllama-1.1b-q4_k_m,tinyllama-1.1b-q6_k \
	--reps 3 --decode-tokens 32 --prompt-tokens 64 --out "$OUT" -q
  mw; uptime; } >"$OUT.txt" 2>&1
