#!/usr/bin/env bash
# tools/figures/arch/dist-check.sh MODEL.gguf [LLAMA_MODEL.gguf]: the
# whole next-token distribution, egang against llama.cpp, after each of
# the five prompts of `tools/llamacpp/compare-llamacpp --check` (8..40
# ids). Prints per prompt d, the largest |log-probability difference| over
# the vocabulary after removing the mean difference
# (tools/llamacpp/margin.mjs), and whether the two greedy
# picks agree. Greedy ids alone say little on a synthetic model whose
# tied classifier puts all the probability on one token (the residual
# stream's own token, whatever attention did): synthesize such shapes with
# `egang synth --flat-logits`, whose logits spread over the vocabulary.
# LLAMA_MODEL (a control): llama.cpp reads that file instead, e.g. the
# same shape with another sliding-window pattern, to show d moving.
# NLC=DIR: another node-llama-cpp folder (as compare-llamacpp --isa
# makes: only one ggml CPU library).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
EGANG=${EGANG:-$ROOT/egang}
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 MODEL.gguf [LLAMA_MODEL.gguf]" >&2; exit 2; }
f=$1 lf=${2:-$1}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
read -r vocab bos < <("$EGANG" info "$f" 2>/dev/null |
	sed -n 's/^vocab \([0-9]*\),.*/\1/p; s/^tokenizer:.* bos \([0-9]*\),.*/\1/p' | paste -sd' ')
prompts=()
for p in 1 2 3 4 5; do # as compare-llamacpp's check_model
	list=$bos
	for ((i = 1; i < 8 * p; i++)); do list+=",$(((i * 7919 + p * 104729) % (vocab - 1) + 1))"; done
	prompts+=("$list")
done
mapfile -t ll < <(env EGANG_NLC_DIR="${NLC:-$CACHE/node-llama-cpp}" NODE_LLAMA_CPP_SKIP_DOWNLOAD=true \
	NODE_LLAMA_CPP_GPU=false EGANG_LLAMA_LOGPROBS="$W/ll" \
	node "$ROOT/tools/llamacpp/run.mjs" check "$lf" 1 1 "${prompts[@]}" 2>"$W/err" |
	sed -n 's/^sequence_ids: //p')
((${#ll[@]} == 5)) || { echo "$0: llama.cpp: $(tail -1 "$W/err")" >&2; exit 1; }
line=$(basename "$f" .gguf)
for p in 0 1 2 3 4; do
	"$EGANG" generate -m "$f" --prompt-ids "${prompts[$p]}" -t 0 -n 1 --cores 0 --ids "$W/ids" \
		--logits-dump "$W/eg" -q --no-echo >/dev/null 2>"$W/err" ||
		{ echo "$0: egang: $(tail -1 "$W/err")" >&2; exit 1; }
	read -ra a <<<"$(sed -n 's/^sequence_ids: //p' "$W/ids")"
	read -ra b <<<"${ll[$p]}"
	e=${a[-1]} l=${b[-1]}
	read -r m d < <(node "$ROOT/tools/llamacpp/margin.mjs" "$W/eg" "$W/ll.$p" "$vocab" 0 "$e" "$l")
	line+=$'\t'"d=$d $([[ $e == "$l" ]] && echo same || echo "differ(m=$m)")"
done
echo "$line"
