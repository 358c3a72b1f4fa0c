#!/usr/bin/env bash
# Continuous batching: `egang bench serve` with 1, 4, 8 and 16 streaming
# clients against `egang serve --parallel 16` on 2 cores, and one client
# against `--parallel 1` (one request at a time, the path before batching).
# Each request's prompt starts with its own "RUN.CLIENT.N " (--vary: no
# prefix-cache hits; before RUN, each run against a server resent the
# earlier runs' prompts and hit their prefix cache). Two loads per model:
#   decode: a short prompt ("RUN.CLIENT.N Once upon a time"), MAXTOK tokens;
#   ttft:   a prompt of about 256 tokens, MAXTOK tokens.
#
# usage: tools/figures/serve-batch/run.sh EGANG MODEL_DIR OUT_DIR MODEL LOAD [REPS] [SECONDS] [MAXTOK]
#   MODEL_DIR holds tinyllama-1.1b-q8_0.gguf and smollm-135m-q8_0.gguf
#   (`egang synth tinyllama-1.1b --type q8_0 -o ...`, the same for smollm-135m).
# Appends to OUT_DIR/raw.txt one "model load maxtok parallel streams rep |
# bench serve: ..." line per run.
set -u
EGANG=$1 DIR=$2 OUT=$3 MODEL=$4 LOAD=$5 REPS=${6:-3} SECS=${7:-30} MAXTOK=${8:-32}
mkdir -p "$OUT"
PROMPT="Once upon a time"
[[ $LOAD == ttft ]] && PROMPT=$(for i in $(seq 1 36); do printf 'the cat %d ' $i; done) # ~256 tokens
port=18290
run_server() { # MODEL PARALLEL
	"$EGANG" serve -m "$DIR/$1-q8_0.gguf" --port $port --cores 0-1 --ctx 1024 \
		--parallel "$2" --max-queue 64 -q &
	SPID=$!
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && return; sleep 0.3; done
}
for model in $MODEL; do
	for par in 1 16; do
		run_server $model $par
		streams="1 4 8 16"; [[ $par == 1 ]] && streams=1
		for s in $streams; do
			for r in $(seq 1 "$REPS"); do
				line=$("$EGANG" bench serve --url "http://127.0.0.1:$port" --clients "$s" \
					--seconds "$SECS" --max-tokens "$MAXTOK" --prompt "$PROMPT" --vary \
					--request-timeout 600 2>&1 | tail -1)
				echo "$model load=$LOAD maxtok=$MAXTOK parallel=$par streams=$s rep=$r loadavg=$(cut -d' ' -f1 /proc/loadavg) | $line" | tee -a "$OUT/raw.txt"
			done
		done
		kill -TERM $SPID; wait $SPID
		port=$((port + 1))
	done
done
