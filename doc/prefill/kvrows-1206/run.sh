#!/bin/bash
# Prompt attention with a KV head's rows converted once (issue 34): CPU
# time of a long prompt, an old and a new build alternated.
# usage: run.sh OLD_EGANG NEW_EGANG OUTDIR [TOKENS] [REPS]
# Each rep runs `egang generate --prompt-ids <TOKENS ids> --ctx 4096 -n 1
# --cores 0-1` of llama3.2-1b q8_0 (f16 KV cache) under `perf stat -e
# task-clock` with each build, old first; the logits hashes must agree.
# Then one `perf record -e cpu-clock:u` per build for the cost split
# (REPS=0: only these).
set -u
OLD=$1 NEW=$2 O=$3 N=${4:-4000} REPS=${5:-3}
M=${MODEL:-$HOME/.cache/egang/models/llama3.2-1b-q8_0.gguf}
mkdir -p "$O"
info=$("$NEW" info "$M") || exit 1
[[ $info =~ vocab\ ([0-9]+) ]] && vocab=${BASH_REMATCH[1]}
[[ $info =~ bos\ ([0-9]+) ]] && bos=${BASH_REMATCH[1]}
# compare-llamacpp --long's ids: BOS, then 1 + (i * 7919) mod (vocab - 1)
ids=$bos
for ((i = 1; i < N; i++)); do ids+=",$((1 + (i * 7919) % (vocab - 1)))"; done
hdr() { date -u; uptime; lscpu | grep 'Model name'; }
run() { # run BUILD TAG: one generation, its task-clock and logits hash
	perf stat -e task-clock -x, -o "$O/stat-$2.csv" "$1" generate -m "$M" --prompt-ids "$ids" \
		--ctx 4096 -n 1 --cores 0-1 --no-echo --logits-hash "$O/hash-$2.txt" \
		>/dev/null 2>"$O/err-$2.txt"
	printf '%s %s task-clock-ms %s hash %s\n' "$(date -u +%T)" "$2" \
		"$(grep task-clock "$O/stat-$2.csv" | cut -d, -f1)" "$(cut -d' ' -f3 "$O/hash-$2.txt")"
}
hdr >> "$O/run.txt"
echo "prompt $N tokens, model $M, old $OLD, new $NEW" >> "$O/run.txt"
for ((r = 1; r <= REPS; r++)); do
	run "$OLD" "old-$r" >> "$O/run.txt"
	run "$NEW" "new-$r" >> "$O/run.txt"
done
for b in old new; do
	[[ $b == old ]] && E=$OLD || E=$NEW
	perf record -e cpu-clock:u -F 1000 -o "$O/perf-$b.data" -- "$E" generate -m "$M" \
		--prompt-ids "$ids" --ctx 4096 -n 1 --cores 0-1 --no-echo >/dev/null 2>&1
	perf report -i "$O/perf-$b.data" --stdio --sort symbol 2>/dev/null |
		grep -v '^$' | grep -v '^# *$' | head -48 > "$O/perf-$b.txt"
	rm -f "$O/perf-$b.data"
done
hdr >> "$O/run.txt"
