#!/usr/bin/env bash
# doc/kv/run-kv-types.sh OUT: the KV cache types (f32, f16, q8_0) on a
# synthetic llama3.2-1b-shaped model (4 of its 16 layers, vocab 32000,
# q8_0 weights, random): KV bytes per position and per sequence, the
# process's peak RSS, prompt and decode tok/s after a 448-token prompt
# (context 512) and after a 3,968-token prompt (context 4096), 2 cores.
# Types alternate within each round so that load from other processes
# falls on all three alike. Writes the raw output to OUT.
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-doc/kv/kv-types.txt}
EG=${EGANG:-./egang}
M=${MODEL:-/tmp/kv-l32-4l.gguf}
ROUNDS=${ROUNDS:-2}
N=${DECODE:-32}
{
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD)"
echo "# command: doc/kv/run-kv-types.sh $OUT (ROUNDS=$ROUNDS DECODE=$N)"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(nproc) vCPUs)"
echo "# flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'avx2|f16c|avx512f|avx512_vnni|avx512_bf16|avx512_fp16|amx_int8|amx_bf16' | tr '\n' ' ')"
echo "# load: $(cat /proc/loadavg)"
[[ -f $M ]] || "$EG" synth llama3.2-1b --layers 4 --vocab 32000 --type q8_0 --seed 1 -o "$M" -q
"$EG" info "$M" | sed -n '1,6p;/^kv cache/p'
"$EG" bench membw --cores 0-1 --reps 3 -q 2>&1
python3 -c "
ids=[256]+[1+((i*7919)%31999) for i in range(1,3968)]
open('/tmp/kv-ids4k.txt','w').write(','.join(map(str,ids)))
open('/tmp/kv-ids512.txt','w').write(','.join(map(str,ids[:448])))"
for r in $(seq 1 "$ROUNDS"); do
	for ctx in 512 4096; do
		ids=/tmp/kv-ids512.txt; [[ $ctx == 4096 ]] && ids=/tmp/kv-ids4k.txt
		for kv in f32 f16 q8_0; do
			echo "## round $r ctx $ctx kv $kv load $(cut -d' ' -f1 /proc/loadavg)"
			/usr/bin/time -f "peak_rss_kb %M user_s %U sys_s %S wall_s %e" \
				"$EG" generate -m "$M" --prompt-ids "$(cat $ids)" --ctx $ctx -n "$N" -t 0 \
				--no-echo --cores 0-1 --kv-type $kv 2>&1 >/dev/null
		done
	done
done
echo "# end $(date -u +%FT%TZ) load: $(cat /proc/loadavg)"
} 2>&1 | tee "$OUT"
