#!/usr/bin/env bash
# doc/kv/agree-kv-types.sh OUT: greedy ids with an f16 and a q8_0 KV cache
# against the f32 cache: stories260K and babyllama105 (trained, 200
# tokens; head_dim 8 and 16, so no q8_0) and a synthetic smollm-135m (2
# layers, --flat-logits, head_dim 64; 64 tokens), five prompts each.
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-doc/kv/agree.txt}
EG=${EGANG:-./egang}
S=../shared/models
PROMPTS=("Once upon a time" "The little dog" "Lily and Ben went to the park"
	"One day, a big bird" "Tom had a red ball. He")
cmp_ids() { # NAME N ARGS...: f32 vs f16 (and q8_0) greedy ids per prompt
	local name=$1 n=$2; shift 2
	for p in "${PROMPTS[@]}"; do
		for kv in f32 f16 q8_0; do
			rm -f /tmp/agree.$kv.ids
			"$EG" generate -q "$@" -t 0 -n "$n" -p "$p" --kv-type $kv --cores 0 \
				--ids /tmp/agree.$kv.ids >/dev/null 2>/dev/null
		done
		python3 - "$name" "$p" <<'PY'
import os, sys
def ids(k):
    if not os.path.exists(f'/tmp/agree.{k}.ids'): return None
    for l in open(f'/tmp/agree.{k}.ids'):
        if l.startswith('sequence_ids:'): return l.split()[1:]
a = ids('f32')
out = []
for k in ('f16', 'q8_0'):
    b = ids(k)
    if b is None: out.append(f"{k}: -"); continue
    n = min(len(a), len(b))
    first = next((i for i in range(n) if a[i] != b[i]), None)
    same = sum(a[i] == b[i] for i in range(n))
    out.append(f"{k}: same {same}/{n}, first difference {'none' if first is None else first}")
print(f"{sys.argv[1]:14s} {sys.argv[2]!r:34s} " + "; ".join(out))
PY
	done
}
{
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD); command: doc/kv/agree-kv-types.sh $OUT"
echo "# positions counted over the whole sequence (prompt included); '-': the type does not fit the model"
cmp_ids stories260K 200 -m $S/stories260K.bin -z $S/tok512.bin
cmp_ids babyllama105 200 -m $S/babyllama105.bin -z $S/tok105.bin
"$EG" synth smollm-135m --layers 2 --vocab 4096 --type q8_0 --flat-logits --seed 5 -o /tmp/agree-s.gguf -q
cmp_ids smollm-135m-2l 64 -m /tmp/agree-s.gguf
} 2>&1 | tee "$OUT"
