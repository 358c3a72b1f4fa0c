#!/usr/bin/env bash
# tools/figures/q5/ggml-golden.sh: rewrites tests/data/q5_ggml_golden.h
# from llama.cpp's ggml libraries in node-llama-cpp's cache (x86: the
# Haswell library, which every x86 ggml library with AVX2 matches on these
# products; generic: the x86-64 baseline library). See ggml-golden.c.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
BINS=$CACHE/node-llama-cpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[[ -r $BINS/libggml-cpu-haswell.so ]] || { echo "$0: node-llama-cpp is not in $CACHE (compare-llamacpp --prepare)" >&2; exit 1; }
OUTB=$CACHE/q5-ggml-golden
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -o "$OUTB" "$ROOT/tools/figures/q5/ggml-golden.c" -ldl -lm
LD_LIBRARY_PATH=$BINS "$OUTB" "$BINS/libggml-cpu-haswell.so" "$BINS/libggml-cpu-x64.so" \
	>"$ROOT/tests/data/q5_ggml_golden.h.tmp"
mv "$ROOT/tests/data/q5_ggml_golden.h.tmp" "$ROOT/tests/data/q5_ggml_golden.h"
echo "wrote tests/data/q5_ggml_golden.h"
