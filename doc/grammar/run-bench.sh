#!/usr/bin/env bash
# The mask's cost (doc/grammar/README.md): `egang bench grammar` with the
# built-in JSON grammar on SmolLM2-135M-Instruct (49152 tokens; tools/models.sh)
# and on a Qwen3-0.6B-shaped model with the real Qwen3 tokenizer (151936
# logits; tools/tokenizers.sh, random q4_0 weights: the grammar forces the
# JSON), each next to `egang bench membw` of the same run.
# usage: doc/grammar/run-bench.sh [EGANG] > doc/grammar/bench-DATE.txt
set -eu
EGANG=${1:-./egang}
C=~/.cache/egang
Q=${TMPDIR:-/tmp}/qwen3-0.6b-q4_0-qwen3tok.gguf
echo "# $(date -u +%FT%TZ) $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; flags:" \
	"$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$EGANG" bench membw --mb 64 --reps 3 -q
"$EGANG" bench grammar -m $C/models/SmolLM2-135M-Instruct.Q4_1.gguf -n 128 -r 5 -q
[[ -f $Q ]] || "$EGANG" synth qwen3-0.6b --type q4_0 -q -o "$Q" \
	--tokenizer $C/tokenizers/qwen3/tokenizer.json \
	--tokenizer-config $C/tokenizers/qwen3/tokenizer_config.json
"$EGANG" bench grammar -m "$Q" -n 64 -r 3 -q
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$EGANG" bench membw --mb 64 --reps 3 -q
