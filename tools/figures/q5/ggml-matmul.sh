#!/usr/bin/env bash
# tools/figures/q5/ggml-matmul.sh TYPE N ROWS NTOK [SEED]: builds
# ggml-matmul.c against egang's release library and node-llama-cpp's
# libggml-cpu-$GGML_LIB.so (default: zen4 when this CPU has AVX-512, else
# haswell), then runs it with these arguments (see the .c file).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
BINS=$CACHE/node-llama-cpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
LIB=haswell
grep -qw avx512f /proc/cpuinfo && LIB=zen4
LIB=${GGML_LIB:-$LIB}
[[ -r $BINS/libggml-cpu-$LIB.so ]] || { echo "$0: no $BINS/libggml-cpu-$LIB.so" >&2; exit 1; }
[[ -r $ROOT/build/gcc-release/libegang.a ]] || { echo "$0: make first" >&2; exit 1; }
OUTB=$CACHE/q5-ggml-matmul-$LIB
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -I"$ROOT/src" -I"$CACHE/llama.cpp-v0.4.0/ggml/include" \
	-o "$OUTB" "$ROOT/tools/figures/q5/ggml-matmul.c" "$ROOT/build/gcc-release/libegang.a" \
	-L"$BINS" -l:libggml-base.so -l:libggml-cpu-$LIB.so -Wl,-rpath,"$BINS" \
	-lhwloc -lpcre2-8 -ljansson -lmicrohttpd -lcurl -lm -pthread
exec "$OUTB" "$@"
