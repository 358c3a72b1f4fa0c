#!/usr/bin/env bash
# tools/figures/kquant-check/prefix.sh MODEL P [FROM]: for every prefix
# (FROM, default 2, .. 8P ids) of tools/llamacpp/compare-llamacpp --check's
# prompt P, d (tools/llamacpp/margin.mjs's NOISE: the engines' largest
# log-probability difference) at the first generated token. Where d leaves
# float noise and stays is where the two engines' computations part. EGANG:
# the binary (default ./egang); EGANG_CACHE: compare-llamacpp's cache
# (node-llama-cpp installed by tools/llamacpp/compare-llamacpp --prepare).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
E=${EGANG:-$ROOT/egang}
NLC=${EGANG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egang}/node-llama-cpp
f=$1 p=$2 from=${3:-2}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
read -r vocab bos < <("$E" info "$f" 2>/dev/null |
	sed -n 's/^vocab \([0-9]*\),.*/\1/p; s/^tokenizer:.* bos \([0-9]*\),.*/\1/p' | paste -sd' ')
ids=("$bos") # the ids compare-llamacpp's check_model gives prompt P
for ((i = 1; i < 8 * p; i++)); do ids+=($(((i * 7919 + p * 104729) % (vocab - 1) + 1))); done
pl=()
for ((L = from; L <= 8 * p; L++)); do pl+=("$(IFS=,; echo "${ids[*]:0:L}")"); done
EGANG_LLAMA_LOGPROBS=$W/ll EGANG_NLC_DIR=$NLC NODE_LLAMA_CPP_SKIP_DOWNLOAD=true NODE_LLAMA_CPP_GPU=false \
	node "$ROOT/tools/llamacpp/run.mjs" check "$f" 1 1 "${pl[@]}" >/dev/null 2>"$W/ll.err" ||
	{ tail -3 "$W/ll.err" >&2; exit 1; }
for ((j = 0; j < ${#pl[@]}; j++)); do
	"$E" generate -m "$f" --prompt-ids "${pl[$j]}" -t 0 -n 1 --cores 0 --logits-dump "$W/eg" \
		-q --no-echo >/dev/null 2>"$W/eg.err" || { cat "$W/eg.err" >&2; exit 1; }
	echo "prefix $((j + from)): d $(node "$ROOT/tools/llamacpp/margin.mjs" "$W/eg" "$W/ll.$j" "$vocab" 0 0 0 | cut -d' ' -f2)"
done
