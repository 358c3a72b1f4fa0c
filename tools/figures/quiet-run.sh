#!/usr/bin/env bash
# The speed figures of issues 17, 19 and 21 measured on a quiet machine (no
# other sessions: load average below 1 at the start), from the repository
# root: EGANG=build/gcc-release/egang tools/figures/quiet-run.sh
#  1. doc/isa/quiet2: egang with EGANG_ISA=avx2 against llama.cpp's Haswell
#     library, smollm-135m and tinyllama-1.1b in q8_0, q4_0, Q4_K_M, 1 and 2
#     threads, 3 runs each (engines alternated), 32 decode tokens after a
#     1-token prompt and a 64-token prefill;
#  2. doc/kquant-speed/quiet: Q4_K_M and Q6_K at each engine's best level;
#  3. doc/isa/membw-quiet.txt: `bench membw` on both cores;
#  4. doc/serve-batch/quiet/: tools/figures/serve-batch/run.sh (decode loads of
#     tinyllama-1.1b and smollm-135m q8_0, the ~256-token-prompt load of
#     tinyllama), one 20 s run per point; table.py makes table.md and
#     plot.png there.
# Knobs (defaults: the 2026-12-03 run): REPS (3), THREADS (1,2), SERVE
# (1; 0 leaves out part 4), SUFFIX
# (output names: doc/isa/quiet2$SUFFIX, doc/kquant-speed/quiet$SUFFIX,
# doc/isa/membw-quiet$SUFFIX.txt, doc/serve-batch/quiet$SUFFIX).
set -u
cd "$(dirname "$0")/../.."
REPS=${REPS:-3} THREADS=${THREADS:-1,2} SUFFIX=${SUFFIX:-}
export EGANG=${EGANG:-build/gcc-release/egang}
M=${MODELS:-$HOME/.cache/egang/models}
cmp() { # OUT ARGS..
	local out=$1; shift
	{ echo "# EGANG=$EGANG tools/llamacpp/compare-llamacpp $* --reps $REPS --decode-tokens 32 --prompt-tokens 64 --out $out -q"
	  echo "# egang $(git rev-parse --short HEAD 2>/dev/null)"
	  uptime
	  tools/llamacpp/compare-llamacpp "$@" --reps "$REPS" --decode-tokens 32 --prompt-tokens 64 --out "$out" -q
	  uptime; } >"$out.txt" 2>&1
}
cmp doc/isa/quiet2$SUFFIX --isa avx2 --threads "$THREADS" --models \
	smollm-135m-q8_0,smollm-135m-q4_0,smollm-135m-q4_k_m,tinyllama-1.1b-q8_0,tinyllama-1.1b-q4_0,tinyllama-1.1b-q4_k_m
cmp doc/kquant-speed/quiet$SUFFIX --threads "$THREADS" --models \
	smollm-135m-q4_k_m,smollm-135m-q6_k,tinyllama-1.1b-q4_k_m,tinyllama-1.1b-q6_k
{ echo "# $EGANG bench membw --cores 0-1"; uptime; "$EGANG" bench membw --cores 0-1; uptime; } \
	>doc/isa/membw-quiet$SUFFIX.txt 2>&1
[[ ${SERVE:-1} == 0 ]] && exit 0
mkdir -p /tmp/sb && ln -sf "$M"/tinyllama-1.1b-q8_0.gguf "$M"/smollm-135m-q8_0.gguf /tmp/sb/
OUT=/tmp/sb-out; rm -rf $OUT
tools/figures/serve-batch/run.sh "$EGANG" /tmp/sb $OUT tinyllama-1.1b decode 1 20 32
tools/figures/serve-batch/run.sh "$EGANG" /tmp/sb $OUT smollm-135m decode 1 20 32
tools/figures/serve-batch/run.sh "$EGANG" /tmp/sb $OUT tinyllama-1.1b ttft 1 20 32
mkdir -p doc/serve-batch/quiet$SUFFIX && cp $OUT/raw.txt doc/serve-batch/quiet$SUFFIX/raw.txt
tools/figures/serve-batch/table.py doc/serve-batch/quiet$SUFFIX
