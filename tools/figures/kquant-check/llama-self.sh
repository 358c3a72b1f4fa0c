#!/usr/bin/env bash
# tools/figures/kquant-check/llama-self.sh MODEL.gguf...: llama.cpp against
# itself on another CPU build. For each model, the five prompts of
# `tools/llamacpp/compare-llamacpp --check` (the same ids), 32 greedy tokens
# each, once with node-llama-cpp's best ggml CPU library for this machine
# and once with only its Haswell (AVX2) library; prints per prompt the first
# position where llama.cpp's two sequences differ, or "none". The point: the
# near-ties that --check reports as tie@N between egang and llama.cpp also
# split llama.cpp from itself when only the summation order of its kernels
# changes. Needs `tools/llamacpp/compare-llamacpp --prepare` and one `--isa
# avx2` run before (they make the two node-llama-cpp folders in the cache).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
EGANG=${EGANG:-$ROOT/egang}
DT=${DT:-32}
[[ $# -ge 1 ]] || { echo "usage: $0 MODEL.gguf..." >&2; exit 2; }
for d in node-llama-cpp node-llama-cpp-cpu-haswell; do
	[[ -d $CACHE/$d ]] || { echo "$0: $CACHE/$d missing (see the header)" >&2; exit 1; }
done
run() { # NLC FILE PROMPT...: llama.cpp's sequences, one line each
	local nlc=$1 f=$2; shift 2
	env EGANG_NLC_DIR="$nlc" NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false \
		node "$ROOT/tools/llamacpp/run.mjs" check "$f" 1 "$DT" "$@" 2>/dev/null |
		sed -n 's/^sequence_ids: //p'
}
for f in "$@"; do
	read -r vocab bos < <("$EGANG" info "$f" 2>/dev/null |
		sed -n 's/^vocab \([0-9]*\),.*/\1/p; s/^tokenizer:.* bos \([0-9]*\),.*/\1/p' | paste -sd' ')
	prompts=()
	for p in 1 2 3 4 5; do # as compare-llamacpp's check_model
		list=$bos
		for ((i = 1; i < 8 * p; i++)); do list+=",$(((i * 7919 + p * 104729) % (vocab - 1) + 1))"; done
		prompts+=("$list")
	done
	mapfile -t best < <(run "$CACHE/node-llama-cpp" "$f" "${prompts[@]}")
	mapfile -t hsw < <(run "$CACHE/node-llama-cpp-cpu-haswell" "$f" "${prompts[@]}")
	line=$(basename "$f" .gguf)
	for ((p = 0; p < 5; p++)); do
		read -ra a <<<"${best[$p]:-}"; read -ra b <<<"${hsw[$p]:-}"
		cell=none
		((${#a[@]} > 0 && ${#b[@]} > 0)) || cell=error
		for ((k = 0; k < ${#a[@]} || k < ${#b[@]}; k++)); do
			[[ ${a[$k]:-} == "${b[$k]:-}" ]] && continue
			cell="$k(${a[$k]:-}/${b[$k]:-})"
			break
		done
		line+=$'\t'$cell
	done
	echo "$line"
done
