#!/usr/bin/env bash
# tools/figures/q5/ids-agree.sh [-n N] [-p LIST] [-b LIBS] MODEL.gguf...:
# egang against llama.cpp's best CPU library and its libraries LIBS
# (default haswell,x64: AVX2 and generic x86-64) on prompts of token ids (no
# chat template: synthetic models), with the next-token distributions at
# every position (tools/llamacpp/agree.mjs). Prompts: compare-llamacpp
# --check's (prompt p: BOS and 8 p - 1 ids spread over the vocabulary), p
# in LIST (default 3,4,5); N greedy tokens (32). One JSON line per model
# and prompt on stdout: agree.mjs's object (builds: the other libraries
# against the best) with the model, the prompt and its length. egang runs
# on one core at its best level (EGANG_ISA to force one). Needs
# tools/llamacpp/compare-llamacpp --prepare and the copies of
# node-llama-cpp with one library each (tools/llamacpp/agreement makes
# them: node-llama-cpp-cpu-LIB in the cache).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
CACHE=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}
EGANG=${EGANG:-$ROOT/egang}
N=32 LIST=3,4,5 LIBS=haswell,x64
while [[ $# -gt 0 ]]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	-p) LIST=$2; shift 2 ;;
	-b) LIBS=$2; shift 2 ;;
	-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || { echo "usage: $0 [-n N] [-p LIST] MODEL.gguf..." >&2; exit 2; }
for d in node-llama-cpp ${LIBS//,/ }; do
	[[ $d == node-llama-cpp ]] || d=node-llama-cpp-cpu-$d
	[[ -d $CACHE/$d ]] || { echo "$0: $CACHE/$d missing (see the header)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/q5-agree-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
NONET=()
unshare -n true 2>/dev/null && NONET=(unshare -n)
llama() { # NLC FILE PREFIX PROMPT...: sequences, log-probabilities to PREFIX.i
	local nlc=$1 f=$2 pre=$3; shift 3
	env EGANG_NLC_DIR="$nlc" NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false \
		EGANG_LLAMA_LOGPROBS="$pre" "${NONET[@]}" node "$ROOT/tools/llamacpp/run.mjs" check "$f" 1 "$N" "$@" \
		2>"$WORK/llama.err" | sed -n 's/^sequence_ids: //p'
}
for f in "$@"; do
	read -r vocab bos < <("$EGANG" info "$f" 2>/dev/null |
		sed -n 's/^vocab \([0-9]*\),.*/\1/p; s/^tokenizer:.* bos \([0-9]*\),.*/\1/p' | paste -sd' ')
	prompts=() ps=()
	for p in ${LIST//,/ }; do # as compare-llamacpp's check_model
		list=$bos
		for ((i = 1; i < 8 * p; i++)); do list+=",$(((i * 7919 + p * 104729) % (vocab - 1) + 1))"; done
		prompts+=("$list") ps+=("$p")
	done
	libs=(best ${LIBS//,/ })
	declare -A seqs=()
	for lib in "${libs[@]}"; do
		nlc=$CACHE/node-llama-cpp; [[ $lib == best ]] || nlc+=-cpu-$lib
		mapfile -t got < <(llama "$nlc" "$f" "$WORK/$lib" "${prompts[@]}")
		((${#got[@]} == ${#prompts[@]})) ||
			{ echo "$0: llama.cpp ($lib) failed on $f: $(tail -1 "$WORK/llama.err")" >&2; exit 1; }
		for k in "${!got[@]}"; do seqs[$lib.$k]=${got[$k]}; done
	done
	for k in "${!prompts[@]}"; do
		"$EGANG" generate -m "$f" --prompt-ids "${prompts[$k]}" --kv-type f32 -t 0 -n "$N" --cores 0 \
			--ids "$WORK/eg.ids" --logits-dump "$WORK/eg.f32" -q --no-echo >/dev/null
		eg=$(sed -n 's/^sequence_ids: //p' "$WORK/eg.ids")
		np=$(tr ',' '\n' <<<"${prompts[$k]}" | wc -l)
		margs=()
		for lib in "${libs[@]}"; do margs+=("$lib" "${seqs[$lib.$k]}" "$WORK/$lib.$k"); done
		res=$(node "$ROOT/tools/llamacpp/agree.mjs" "$vocab" "$np" "$eg" "$WORK/eg.f32" "${margs[@]}")
		printf '{"model":"%s","prompt":%d,"n_prompt":%d,%s\n' "$(basename "$f" .gguf)" "${ps[$k]}" "$np" "${res#\{}"
	done
done
